"""The version of the run-file contracts this runtime writes (every document carries it)."""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION = "1"
"""The version of the run-file contracts written by this runtime."""
