"""The plugin's markers and their checks.

``swarm_flow``, ``swarm_modes``, ``swarm_cassette``, ``swarm_repeat`` and ``swarm_faults``
here; ``swarm_budget`` in :mod:`pytest_swarm.budgets`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_swarm.budgets import budget_errors
from pytest_swarm.cassettes import check_cassette_name
from pytest_swarm.options import SwarmOptions
from pytest_swarm.repeat import repeat_marker_errors
from swarm_runtime.config import MODES

if TYPE_CHECKING:
    from swarm_runtime.engines.faults import FaultPlan

FAULTS_SOURCE = "@pytest.mark.swarm_faults"


def fault_plan_of(item: pytest.Item) -> FaultPlan | None:
    """The plan of the test's ``swarm_faults`` marker (docs/faults.md), if it has one."""
    marker = item.get_closest_marker("swarm_faults")
    if marker is None:
        return None
    from swarm_runtime.engines.faults import FaultPlan

    if len(marker.args) != 1 or marker.kwargs:
        from swarm_runtime.errors import ScenarioError

        raise ScenarioError(
            f"{FAULTS_SOURCE} takes one mapping of step id (or flow/step) to a list of "
            f"faults, got args={marker.args!r} kwargs={marker.kwargs!r}"
        )
    return FaultPlan.from_mapping(marker.args[0], source=FAULTS_SOURCE)


def marker_errors(item: pytest.Item, options: SwarmOptions) -> list[str]:
    """Every invalid swarm marker argument on ``item``, as a message naming the test."""
    errors: list[str] = []
    for marker in item.iter_markers("swarm_flow"):
        if len(marker.args) != 1 or marker.kwargs or not isinstance(marker.args[0], str):
            errors.append(
                f"{item.nodeid}: @pytest.mark.swarm_flow takes one flow key, got "
                f"args={marker.args!r} kwargs={marker.kwargs!r}"
            )
            continue
        key = marker.args[0]
        flow_file = options.flows_dir / f"{key}.yaml"
        if options.flows_dir.is_dir() and not flow_file.is_file():
            known = sorted(
                p.stem for p in options.flows_dir.glob("*.yaml") if p.name != "flows.yaml"
            )
            errors.append(
                f"{item.nodeid}: @pytest.mark.swarm_flow({key!r}) names no flow in "
                f"{options.flows_dir} (flows: {', '.join(known) or 'none'})"
            )
    for marker in item.iter_markers("swarm_modes"):
        bad = [m for m in marker.args if m not in MODES]
        if not marker.args or bad or marker.kwargs:
            errors.append(
                f"{item.nodeid}: @pytest.mark.swarm_modes takes one or more of "
                f"{', '.join(MODES)}, got args={marker.args!r} kwargs={marker.kwargs!r}"
            )
    for marker in item.iter_markers("swarm_cassette"):
        try:
            if len(marker.args) != 1 or marker.kwargs:
                raise ValueError(
                    f"@pytest.mark.swarm_cassette takes one cassette name, got "
                    f"args={marker.args!r} kwargs={marker.kwargs!r}"
                )
            check_cassette_name(marker.args[0], "@pytest.mark.swarm_cassette")
        except ValueError as exc:
            errors.append(f"{item.nodeid}: {exc}")
    errors.extend(repeat_marker_errors(item))
    from swarm_runtime.errors import ScenarioError

    try:
        fault_plan_of(item)
    except ScenarioError as exc:
        errors.append(f"{item.nodeid}: {exc}")
    return errors + budget_errors(item)
