"""Timestamps: RFC 3339 UTC with microseconds and one ``Z``, read back to the same moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm_runtime.timeutil import format_ts, parse_ts

MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    ),
)


@settings(deadline=None, max_examples=500)
@given(st.lists(MOMENTS, min_size=1, max_size=5))
def test_a_timestamp_is_the_moment_in_utc_to_the_microsecond(moments: list[datetime]) -> None:
    # One after another, as a step formats several moments of the same minute and then
    # of another: each is its own moment in UTC, whole seconds with six zeros.
    for moment in moments:
        text = format_ts(moment)
        utc = moment.astimezone(UTC)
        assert text == utc.isoformat(timespec="microseconds").replace("+00:00", "Z")
        assert parse_ts(text) == utc


def test_a_naive_moment_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_ts(datetime(2026, 1, 1, 12, 0))
