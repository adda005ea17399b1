"""The ``swarm_budget`` marker and the budget line of the terminal summary (docs/budgets.md).

``@pytest.mark.swarm_budget(tokens=…, cost_usd=…, duration_ms=…)`` is the run budget of
every run the test makes through ``flow_runner`` (over runtime.yaml's ``budget:``). The
summary shows per flow the largest share of any budget the session's runs used, combined
across pytest-xdist workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from swarm_runtime.flow.spec import Budget

MARKER = "swarm_budget"
MARKER_HELP = (
    "swarm_budget(tokens=N, cost_usd=X, duration_ms=M): the run budget of every run the "
    "test makes through flow_runner (any of the keys); a step past it fails the run"
)


def marker_budget(item: pytest.Item) -> Budget | None:
    """The test's ``swarm_budget`` (the closest marker), or None; a ConfigError if invalid."""
    from swarm_runtime.errors import ConfigError
    from swarm_runtime.flow.budget_input import budget_from_mapping

    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    where = "@pytest.mark.swarm_budget"
    if marker.args:
        raise ConfigError(
            f"{where} takes keyword arguments (tokens=N, cost_usd=X, duration_ms=M), "
            f"got args={marker.args!r}"
        )
    return budget_from_mapping(marker.kwargs, where)


def budget_errors(item: pytest.Item) -> list[str]:
    """The invalid ``swarm_budget`` marker of ``item``, as a message naming the test."""
    from swarm_runtime.errors import ConfigError

    try:
        marker_budget(item)
    except ConfigError as exc:
        return [f"{item.nodeid}: {exc}"]
    return []


def percent(share: str) -> int:
    """The percentage a share (``83% (tokens of flow build)``) starts with."""
    return int(share.partition("%")[0])


def add_shares(into: dict[str, str], shares: dict[str, str]) -> None:
    """Keep, per flow (``""``: the run), the largest share of the two."""
    for key, share in shares.items():
        if key not in into or percent(share) > percent(into[key]):
            into[key] = share


def budget_line(shares: dict[str, str]) -> list[str]:
    """``budgets: build 83% (tokens of flow build), …``, or nothing when none is declared."""
    if not shares:
        return []
    parts = [f"{key or 'run'} {share}" for key, share in sorted(shares.items(), key=_run_last)]
    return ["budgets (largest share used): " + ", ".join(parts)]


def _run_last(item: tuple[str, str]) -> tuple[bool, str]:
    return (item[0] == "", item[0])
