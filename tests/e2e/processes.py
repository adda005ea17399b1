"""What the end-to-end tests share: a child ``swarm`` process's output, and gates.

A gate holds one execution of one step until the test opens it (the stub scenario's
``wait_for``: the step answers once the gate file exists). A test that kills, pauses or
stops a run waits until the run is inside the gated step, acts, and only then opens the
gate: the act lands where the test chose, however slow the machine is.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.golden import normalise_value
from tests.conftest import REPO
from tests.runtime.helpers import listening


def wait_for_line(proc: subprocess.Popen[str], needle: str) -> None:
    """Read the process's stdout until a line holds ``needle`` (blocks on the pipe)."""
    assert proc.stdout is not None
    for line in proc.stdout:  # blocks until the process prints; no sleeping
        if needle in line:
            return
    raise AssertionError(
        f"process ended before printing {needle!r}: {proc.stderr and proc.stderr.read()}"
    )


def wait_for_step(
    proc: subprocess.Popen[str], where: str, execution: int = 0, *, ended: bool = False
) -> None:
    """Read the progress lines of ``swarm run|resume --progress always`` until execution
    ``execution`` (0-based) of step ``where`` (``flow/step``) has started, or ``ended``."""
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:  # blocks until the process prints; no sleeping
        if ended:
            hit = line.startswith((f"[ ok ] {where} (", f"[skip] {where} (", f"[FAIL] {where}:"))
        else:
            hit = line == f"[ .. ] {where}\n"
        if hit:
            if seen == execution:
                return
            seen += 1
    raise AssertionError(
        f"process ended before step {where} (execution {execution}) "
        f"{'ended' if ended else 'started'}: {proc.stderr and proc.stderr.read()}"
    )


def held_at(scenario: dict[str, Any], key: str, execution: int, gate: Path) -> dict[str, Any]:
    """``scenario`` with execution ``execution`` (0-based) of step ``key`` (the scenario's
    key: ``flow/step`` or ``step``) held until the file ``gate`` exists."""
    entry = scenario.get(key, {})
    entries = [dict(item) for item in (entry if isinstance(entry, list) else [entry])]
    while len(entries) < execution + 2:  # the entry after the gated one repeats as before
        entries.append(dict(entries[-1]))
    entries[execution]["wait_for"] = str(gate)
    return {**scenario, key: entries}


class _Reached(BaseException):
    """Ends a follow: not an Exception, which a listener's raising would only report."""


def wait_for_event(run_dir: Path, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Follow a run's events (as ``swarm run --backend celery`` does) until one matches;
    for a run whose output the test cannot read (a worker runs it). The run must not end
    first: the event is one a gate holds the run at."""
    from swarm_runtime.distributed.follow import follow

    found: list[dict[str, Any]] = []

    def look(event: dict[str, Any]) -> None:
        if match(event):
            found.append(event)
            raise _Reached

    try:
        outcome = follow(run_dir, plugins=listening(look))
    except _Reached:
        return found[0]
    raise AssertionError(f"run {run_dir.name} ended {outcome.status} before the awaited event")


def step_started(where: str, execution: int = 0) -> Callable[[dict[str, Any]], bool]:
    """Matches the ``step_start`` of execution ``execution`` (0-based) of ``flow/step``."""
    flow, step = where.split("/")
    return lambda event: (
        event["kind"] == "step_start"
        and (event["flow_key"], event["step_id"]) == (flow, step)
        and event["payload"]["iteration"] == execution
    )


def run_args(runs: Path, scenario: Path | None = None, *, progress: str = "never") -> list[str]:
    """``swarm run`` of the shipped flows into ``runs`` (with ``scenario``); by default with
    no progress lines (``always``: the lines :func:`wait_for_step` reads)."""
    flows = ["--flows-dir", str(REPO / "flows"), "--runs-dir", str(runs)]
    chosen = ["--scenario", str(scenario)] if scenario is not None else []
    return ["run", *flows, *chosen, "--progress", progress]


def receipts(run_dir: Path) -> dict[str, Any]:
    """Every receipt of a run, by path, with what differs between runs normalised away."""
    return {
        str(path.relative_to(run_dir)): normalise_value(json.loads(path.read_text("utf-8")))
        for path in sorted(run_dir.glob("*/receipts/*.json"))
    }
