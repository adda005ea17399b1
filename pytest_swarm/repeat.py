"""Repetitions (docs/repetitions.md): a test run n times in the live modes, passing at a pass rate.

``@pytest.mark.swarm_repeat(n, min_pass_rate=1.0)`` or ``--swarm-repeat N`` (for every
test that uses ``flow_runner``; the marker wins for its test). In sdk and cli modes the
test function is called n times with the same fixtures, each call making runs of its
own; stub, replay and record run it once, since their runs do not change from one call
to the next (record writes each test's cassettes once).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from pytest_swarm.options import SwarmOptions
from pytest_swarm.repeat_summary import RepeatResult, RepeatTotals, step_counts

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord

LIVE_MODES = ("sdk", "cli")
"""The modes whose runs can differ from one call to the next: a test repeats in these."""

ALLOWED = (
    "@pytest.mark.swarm_repeat takes n, a whole number of repetitions of 1 or more, and "
    "optionally min_pass_rate=, a number from 0 to 1 (default 1.0)"
)


class RepeatPlan:
    """How many times a test runs, and the share of those that must pass."""

    __slots__ = ("min_pass_rate", "n")

    def __init__(self, n: int, min_pass_rate: float) -> None:
        self.n = n
        self.min_pass_rate = min_pass_rate


def _marker_values(marker: pytest.Mark) -> tuple[int | None, float]:
    """The marker's n (None: the option's) and min_pass_rate; ValueError saying what is wrong."""
    unknown = sorted(set(marker.kwargs) - {"min_pass_rate"})
    if len(marker.args) > 1 or unknown:
        raise ValueError
    n = marker.args[0] if marker.args else None
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError
    rate = marker.kwargs.get("min_pass_rate", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise ValueError
    return n, float(rate)


def repeat_marker_errors(item: pytest.Item) -> list[str]:
    """An invalid ``swarm_repeat`` marker on ``item``, as a message naming the test."""
    errors = []
    for marker in item.iter_markers("swarm_repeat"):
        try:
            _marker_values(marker)
        except ValueError:
            errors.append(
                f"{item.nodeid}: {ALLOWED}; got args={marker.args!r} kwargs={marker.kwargs!r}"
            )
    return errors


def plan_for(item: pytest.Item, options: SwarmOptions) -> RepeatPlan | None:
    """The test's repetitions: its marker's, else ``--swarm-repeat``'s; None: run it once."""
    marker = item.get_closest_marker("swarm_repeat")
    if marker is not None:
        n, rate = _marker_values(marker)  # checked at collection: valid here
        n = options.repeat if n is None else n
    elif "flow_runner" in getattr(item, "fixturenames", ()):
        n, rate = options.repeat, 1.0
    else:
        return None
    return RepeatPlan(n, rate) if n > 1 else None


def cause_of(exc: BaseException) -> str:
    """One line for a failed repetition: the exception's type and first line."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__


_INSIDE = pytest.StashKey[bool]()
"""Set on a test while its repetitions call it: the inner calls run as usual."""


class RepeatPlugin:
    """Calls a repeated test n times in the live modes and judges its pass rate."""

    def __init__(self, options: SwarmOptions, totals: RepeatTotals) -> None:
        self.options = options
        self.totals = totals

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run the test n times (live modes) or once (stub, replay, record), and judge it."""
        if pyfuncitem.stash.get(_INSIDE, False):
            return None
        plan = plan_for(pyfuncitem, self.options)
        if plan is None:
            return None
        mode = self.options.mode
        if mode not in LIVE_MODES:
            self.totals.add(pyfuncitem.nodeid, RepeatResult.once(plan.n, mode))
            return None
        pyfuncitem.stash[_INSIDE] = True
        try:
            result = self._repeat(pyfuncitem, plan)
        finally:
            pyfuncitem.stash[_INSIDE] = False
        self.totals.add(pyfuncitem.nodeid, result)
        if not result.reached:
            pytest.fail(result.failure_message(pyfuncitem.nodeid), pytrace=False)
        return True

    def _repeat(self, item: pytest.Function, plan: RepeatPlan) -> RepeatResult:
        """Call the test ``plan.n`` times, noting each failure and every run made."""
        from pytest_swarm.runner import FlowRunner

        records: list[list[RunRecord]] = []
        runner = item.funcargs.get("flow_runner")
        watched = runner if isinstance(runner, FlowRunner) else None
        if watched is not None:
            on_run = watched.on_run

            def noted(record: RunRecord) -> None:
                records[-1].append(record)
                on_run(record)

            watched.on_run = noted
        causes: Counter[str] = Counter()
        passed = 0
        try:
            for _ in range(plan.n):
                records.append([])
                try:
                    item.ihook.pytest_pyfunc_call(pyfuncitem=item)
                except pytest.xfail.Exception:
                    raise  # an expected failure ends the test as it would have
                except (Exception, pytest.fail.Exception) as exc:
                    causes[cause_of(exc)] += 1
                else:
                    passed += 1
        finally:
            if watched is not None:
                watched.on_run = on_run
        verdicts: dict[str, list[int]] = {}
        if watched is not None:
            from pytest_swarm.judges import verdict_rates

            verdicts = verdict_rates(
                watched.records, watched.verdicts, watched.expectations, watched.flows
            )
        return RepeatResult(
            mode=self.options.mode,
            asked=plan.n,
            ran=plan.n,
            passed=passed,
            min_pass_rate=plan.min_pass_rate,
            steps=step_counts(records),
            causes=dict(causes),
            verdicts=verdicts,
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Hand a worker's repeated tests to the controller."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["swarm_repeats"] = self.totals.as_dict()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """On the xdist controller, add a finished worker's repeated tests."""
        self.totals.merge(getattr(node, "workeroutput", {}).get("swarm_repeats", {}))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The ``swarm repetitions`` section: pass rates per test and per step."""
        if not self.totals.tests:
            return
        terminalreporter.write_sep("-", "swarm repetitions")
        for line in self.totals.lines():
            terminalreporter.write_line(line)
