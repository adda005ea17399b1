"""The ``swarm`` command line; ``swarm_runtime.cli.main:main`` is the console script."""

from __future__ import annotations

__all__: list[str] = []
