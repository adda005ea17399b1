"""Time: the one place timestamps are made and formatted.

Timestamps are RFC 3339 UTC strings with microseconds and exactly one trailing ``Z``.
The clock is passed in wherever time matters, so tests can pin it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["TIMESTAMP_RE", "Clock", "format_ts", "monotonic_ms", "parse_ts", "system_clock"]

Clock = Callable[[], datetime]
"""A callable returning the current time as a timezone-aware UTC datetime."""

TIMESTAMP_RE = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$"
)
"""What a valid timestamp looks like: UTC, one ``Z``, no offset."""


def system_clock() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    """Parse a timestamp written by :func:`format_ts`; raise ValueError otherwise."""
    if not TIMESTAMP_RE.fullmatch(text):
        raise ValueError(
            f"timestamp {text!r} is not RFC 3339 UTC with exactly one trailing 'Z' "
            "(expected e.g. 2025-12-09T10:20:43.186199Z)"
        )
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)


def monotonic_ms() -> float:
    """Milliseconds from a monotonic clock, for durations."""
    return time.monotonic() * 1000.0
