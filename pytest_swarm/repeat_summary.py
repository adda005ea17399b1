"""What repeated tests did, per test and per step, combined across pytest-xdist workers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord


def step_counts(repetitions: Iterable[Iterable[RunRecord]]) -> dict[str, list[int]]:
    """``flow/step`` → [executions that succeeded, that failed, repetitions it ran in].

    ``repetitions`` holds the runs each repetition made.
    """
    counts: dict[str, list[int]] = {}
    for records in repetitions:
        ran: set[str] = set()
        for record in records:
            for (flow, step), receipts in record.executions.items():
                name = f"{flow}/{step}"
                row = counts.setdefault(name, [0, 0, 0])
                ran.add(name)
                for receipt in receipts:
                    row[0 if receipt.get("status") == "succeeded" else 1] += 1
        for name in ran:
            counts[name][2] += 1
    return counts


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


class RepeatResult:
    """One repeated test: how often it ran and passed, its steps, its failures' causes."""

    __slots__ = ("asked", "causes", "min_pass_rate", "mode", "passed", "ran", "steps", "verdicts")

    def __init__(
        self,
        *,
        mode: str,
        asked: int,
        ran: int,
        passed: int,
        min_pass_rate: float,
        steps: dict[str, list[int]] | None = None,
        causes: dict[str, int] | None = None,
        verdicts: dict[str, list[int]] | None = None,
    ) -> None:
        self.mode = mode
        self.asked = asked
        """The repetitions asked for (marker or option)."""
        self.ran = ran
        """The repetitions made: ``asked`` in live modes, else 0 (run once, as usual)."""
        self.passed = passed
        self.min_pass_rate = min_pass_rate
        self.steps = dict(steps or {})
        self.causes = dict(causes or {})
        """A failed repetition's exception, in one line → how many repetitions failed so."""
        self.verdicts = dict(verdicts or {})
        """Per judge and expectation (``judge flow/step name``, ``expect flow/step check``):
        [passes, times checked] over the repetitions."""

    @classmethod
    def once(cls, asked: int, mode: str) -> RepeatResult:
        """A repeated test in a deterministic mode: it runs once, as any test does."""
        return cls(mode=mode, asked=asked, ran=0, passed=0, min_pass_rate=1.0)

    @property
    def reached(self) -> bool:
        """Whether the pass rate reaches the threshold."""
        return self.passed >= self.min_pass_rate * self.ran - 1e-9

    def failure_message(self, nodeid: str) -> str:
        """Why the test failed: its pass rate, the threshold and each cause, counted."""
        lines = [
            f"swarm_repeat: {nodeid} passed {self.passed} of {self.ran} repetitions "
            f"({_percent(self.passed, self.ran)}) in {self.mode} mode, below min_pass_rate "
            f"{self.min_pass_rate:g}; the failures:"
        ]
        lines += [f"  {count}x {cause}" for cause, count in self.causes.items()]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def lines(self, nodeid: str) -> list[str]:
        """The test's summary line, then one per step."""
        if not self.ran:
            why = (
                "record mode writes each test's cassettes once"
                if self.mode == "record"
                else f"{self.mode} mode is deterministic"
            )
            return [
                f"{nodeid}: ran once, not {self.asked} times: {why} (repetitions run in "
                "sdk and cli modes)"
            ]
        verdict = "passed" if self.reached else "FAILED"
        out = [
            f"{nodeid}: {self.passed}/{self.ran} repetitions passed "
            f"({_percent(self.passed, self.ran)}, min_pass_rate {self.min_pass_rate:g}): "
            f"{verdict}"
        ]
        for step, (ok, failed, repetitions) in sorted(self.steps.items()):
            total = ok + failed
            out.append(
                f"  {step}: {ok}/{total} executions succeeded ({_percent(ok, total)}) in "
                f"{repetitions} of {self.ran} repetitions"
            )
        for label, (ok, total) in sorted(self.verdicts.items()):
            out.append(f"  {label}: {ok}/{total} passed ({_percent(ok, total)})")
        return out


class RepeatTotals:
    """The session's repeated tests by node id (a worker's, or all on the controller)."""

    def __init__(self) -> None:
        self.tests: dict[str, RepeatResult] = {}

    def add(self, nodeid: str, result: RepeatResult) -> None:
        self.tests[nodeid] = result

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for a worker's ``workeroutput``."""
        return {nodeid: result.as_dict() for nodeid, result in self.tests.items()}

    def merge(self, other: dict[str, Any]) -> None:
        """Add a worker's repeated tests (each test ran on one worker only)."""
        for nodeid, values in other.items():
            self.tests[nodeid] = RepeatResult(**values)

    def lines(self) -> list[str]:
        """Every repeated test's lines, by node id."""
        return [line for nodeid in sorted(self.tests) for line in self.tests[nodeid].lines(nodeid)]
