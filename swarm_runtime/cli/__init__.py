"""The ``swarm`` command line; :func:`main` is the console script."""

from __future__ import annotations

from swarm_runtime.cli.main import main

__all__ = ["main"]
