"""Versions: of the package, and of the run-file contracts it writes (its JSON documents say it)."""

from __future__ import annotations

PACKAGE_VERSION = "0.1.0"
"""The version of swarm-stepwise (``pyproject.toml`` says the same; a test holds them)."""

SCHEMA_VERSION = "1"
"""The version of the run-file contracts written by this runtime."""
