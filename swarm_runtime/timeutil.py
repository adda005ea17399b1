"""Time: the one place timestamps are made and formatted.

Timestamps are RFC 3339 UTC strings with microseconds and exactly one trailing ``Z``.
The clock is passed in wherever time matters, so tests can pin it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]
"""A callable returning the current time as a timezone-aware UTC datetime."""

TIMESTAMP_RE = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$"
)
"""What a valid timestamp looks like: UTC, one ``Z``, no offset."""


def system_clock() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


_minute: tuple[tuple[int, int, int, int, int], str] = ((0, 0, 0, 0, 0), "")
"""The last minute formatted, ``YYYY-MM-DDTHH:MM:``: a step formats several moments of it."""


def format_ts(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    global _minute
    if moment.tzinfo is not UTC:
        if moment.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware")
        moment = moment.astimezone(UTC)
    minute = (moment.year, moment.month, moment.day, moment.hour, moment.minute)
    kept, prefix = _minute  # read once: another thread may put another minute there
    if kept != minute:
        prefix = moment.isoformat()[:17]
        _minute = (minute, prefix)
    return f"{prefix}{moment.second:02d}.{moment.microsecond:06d}Z"


def parse_ts(text: str) -> datetime:
    """Parse a timestamp written by :func:`format_ts`; raise ValueError otherwise."""
    if not TIMESTAMP_RE.fullmatch(text):
        raise ValueError(
            f"timestamp {text!r} is not RFC 3339 UTC with exactly one trailing 'Z' "
            "(expected e.g. 2025-12-09T10:20:43.186199Z)"
        )
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)


def interruptible_sleep(seconds: float) -> None:
    """Sleep in slices of at most 0.1 s, so a signal handler runs soon after its signal.

    A signal that arrives just before a long ``time.sleep`` starts is otherwise handled
    only when the sleep ends; between slices Python runs pending handlers.
    """
    import time

    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def ms_between(start: datetime, end: datetime) -> int:
    """Whole milliseconds from ``start`` to ``end``, never negative."""
    delta = end - start
    micro = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return max(0, micro // 1000)
