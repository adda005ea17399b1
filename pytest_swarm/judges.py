"""Judges under pytest: ``swarm_judge(record, step=…, rubric=…)`` and ``judges:``.

``swarm_judge`` grades what a step of a finished run said against a rubric, with a model
called through the engines of the test's mode: the stub answers what the test's
``stub_scenario`` scripts under ``judges:`` (else a score of 1); ``record`` records the call
in the cassettes of the run it judges (``<flow>/<step>-judge-<name>-<iteration>.yaml``) and
``replay`` plays it back, strict on a miss. A flow's own ``judges:`` run inside the run; a
test whose run has a judgement that did not pass fails at the end of its call, naming each.

A judge's failure, like an expectation's, is a verdict on the output: the test fails, and a
recording it made is kept, so the replay gives the same verdict offline.

See docs/judges.md#judges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_swarm.expect import Expectations, StepExpectations, VerdictFailed, shown
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_swarm.run_record import RunRecord
    from pytest_swarm.runner import FlowRunner
    from swarm_runtime.engines.base import StepContext
    from swarm_runtime.flow.registry import FlowRegistry

RUNNER_KEY = pytest.StashKey["FlowRunner"]()
"""The test's flow runner: its runs' flow judges are held at the end of its call."""
VERDICT_KEY = pytest.StashKey[bool]()
"""The test's call failed on its flow judges: a verdict, so its recording is kept."""


class JudgementFailed(VerdictFailed):
    """A judge scored a step's reply below its threshold, or gave no score."""


class JudgeCallFailed(AssertionError):
    """A judge's call failed (an API error, a timeout, a replay miss): no verdict was given.

    Not a verdict: a recording the test made is dropped, as after any failed call.
    """


class JudgeVerdict(Record):
    """What a judge made of a step's reply."""

    name: str
    flow: str
    step: str
    execution: int
    score: float | None
    threshold: float
    passed: bool
    reason: str
    engine: str
    model: str
    tokens: int
    cost_usd: float | None
    error: str | None = None
    """Why the judge's call failed, when it did (then it gave no verdict)."""


def flow_judgements(
    record: RunRecord, flows: FlowRegistry | None
) -> list[tuple[str, int, dict[str, Any]]]:
    """``(flow/step, execution, payload)`` of each ``judgement`` event of the run, in order.

    ``flows``: the flows the run was made from. When none of its flows (nor a utility flow
    it may have taken a detour into) declares a judge, it has no judgement, and its event
    log is not read: most tests' runs have no judges.
    """
    if not _may_have_judgements(record, flows):
        return []
    found: list[tuple[str, int, dict[str, Any]]] = []
    executions: dict[str, int] = {}
    for event in record.event_dicts:
        where = f"{event.get('flow_key')}/{event.get('step_id')}"
        if event.get("kind") == "step_start":
            executions[where] = executions.get(where, 0) + 1
        elif event.get("kind") == "judgement":
            found.append((where, executions.get(where, 1), event.get("payload") or {}))
    return found


def _may_have_judgements(record: RunRecord, flows: FlowRegistry | None) -> bool:
    """Whether a flow the run ran, or a utility flow, declares a judge (True: cannot tell)."""
    if flows is None or not record.flow_keys:
        return True
    try:
        ran = [flows.get(key) for key in record.flow_keys]
    except Exception:  # a flow no longer readable: only the log can tell
        return True
    return any(step.judges for flow in (*ran, *flows.utility_flows()) for step in flow.steps)


def verdict_rates(
    records: list[RunRecord],
    verdicts: list[JudgeVerdict],
    checks: list[tuple[str, bool]],
    flows: FlowRegistry | None,
) -> dict[str, list[int]]:
    """Per judge and expectation of a test: [passes, times checked]."""
    rates: dict[str, list[int]] = {}

    def count(label: str, passed: bool) -> None:
        row = rates.setdefault(label, [0, 0])
        row[0] += int(passed)
        row[1] += 1

    for record in records:
        for where, _, payload in flow_judgements(record, flows):
            count(f"judge {where} {payload.get('name')}", bool(payload.get("passed")))
    for verdict in verdicts:
        count(f"judge {verdict.flow}/{verdict.step} {verdict.name}", verdict.passed)
    for label, passed in checks:
        count(f"expect {label}", passed)
    return rates


def _verdict_line(payload: dict[str, Any], where: str) -> str:
    score = payload.get("score")
    said = (
        f"scored {score}, below its threshold {payload.get('threshold')}"
        if score is not None
        else "gave no usable score"
    )
    return f"judge '{payload.get('name')}' on {where} {said}: {payload.get('reason')}"


def flow_judges_failed(
    records: list[RunRecord], flows: FlowRegistry | None
) -> tuple[str, bool] | None:
    """What to fail a test with when its runs' flow judges did not pass; else None.

    With the message: whether it is a verdict (every failing judgement was graded, none is
    a failed call). A judge passes when the share of its judgements in the test that
    passed reaches its ``min_pass_rate`` (default 1: every one).
    """
    verdict = True
    grouped: dict[tuple[str, str], list[tuple[str, dict[str, Any], Path]]] = {}
    for record in records:
        for where, execution, payload in flow_judgements(record, flows):
            key = (where, str(payload.get("name")))
            grouped.setdefault(key, []).append(
                (f"{where} (execution {execution})", payload, record.path)
            )
    lines: list[str] = []
    for (where, name), judged in grouped.items():
        passed = sum(bool(payload.get("passed")) for _, payload, _ in judged)
        required = _min_pass_rate(flows, where, name)
        if passed >= required * len(judged) - 1e-9:
            continue
        for spot, payload, run_dir in judged:
            if not payload.get("passed"):
                lines += [_verdict_line(payload, spot), f"  run dir: {run_dir}"]
                verdict = verdict and not payload.get("error")
        if required < 1:
            lines.append(
                f"judge '{name}' on {where} passed {passed} of {len(judged)}, below its "
                f"min_pass_rate {required:g}"
            )
    if not lines:
        return None
    return "swarm: a judge did not pass:\n  " + "\n  ".join(lines), verdict


def _min_pass_rate(flows: FlowRegistry | None, where: str, name: str) -> float:
    """A flow judge's ``min_pass_rate`` (1 when it sets none or cannot be found)."""
    flow_key, _, step_id = where.partition("/")
    try:
        flow = flows.get(flow_key) if flows is not None else None
    except Exception:  # a flow no longer readable: every judgement must pass
        return 1.0
    for step in flow.steps if flow is not None else ():
        for judge in step.judges if step.id == step_id else ():
            if judge.name == name and judge.min_pass_rate is not None:
                return judge.min_pass_rate
    return 1.0


class SwarmJudge:
    """``swarm_judge(record, step=…, rubric=…, threshold=0.7, engine=None, name="judge")``."""

    def __init__(self, runner: FlowRunner) -> None:
        self.runner = runner
        self._asked: set[tuple[str, str, str, int, str]] = set()
        """(run, flow, step, execution, judge) already graded: each names one cassette."""

    def __call__(
        self,
        record: RunRecord,
        *,
        step: str,
        rubric: str,
        threshold: float = 0.7,
        engine: str | None = None,
        name: str = "judge",
        execution: int = -1,
        check: bool = True,
    ) -> JudgeVerdict:
        """Grade one execution of ``step`` (the latest by default) against ``rubric``.

        Raises JudgementFailed when it does not pass (``check=False``: returns the verdict).
        """
        __tracebackhide__ = True
        judge = _judge_spec(name, rubric, threshold, engine)
        chosen = Expectations(record).step(step, execution)
        asked = (record.run_id, chosen.flow_key, chosen.step_id, chosen.execution, name)
        if asked in self._asked:
            raise ValueError(
                f"swarm_judge: judge {name!r} already graded {chosen.flow_key}/{chosen.step_id} "
                f"(execution {chosen.execution}) of this run: give each judge of a step its "
                "own name= (the name names its cassette)"
            )
        self._asked.add(asked)
        verdict = self._grade(record, chosen, judge)
        self.runner.verdicts.append(verdict)
        if verdict.error is not None:
            raise JudgeCallFailed(
                f"judge '{name}' on {verdict.flow}/{verdict.step} (execution {verdict.execution}) "
                f"gave no verdict: {verdict.error}\n  run dir: {record.path}"
            )
        if check and not verdict.passed:
            where = f"{verdict.flow}/{verdict.step} (execution {verdict.execution})"
            raise JudgementFailed(
                _verdict_line(
                    {
                        "name": verdict.name,
                        "score": verdict.score,
                        "threshold": verdict.threshold,
                        "reason": verdict.reason,
                    },
                    where,
                )
                + f"\n  run dir: {record.path}\n  rubric:\n{shown(rubric)}"
            )
        return verdict

    def _grade(self, record: RunRecord, chosen: StepExpectations, judge: Any) -> JudgeVerdict:
        from swarm_runtime.errors import SwarmError
        from swarm_runtime.orchestrator.judging import call_failure, score_of

        __tracebackhide__ = True
        runner = self.runner
        engine_id = judge.engine or str(chosen.receipt.get("engine") or runner.engine.engine_id)
        ctx = self._context(record, chosen, judge)
        try:
            answer, cassettes, before = runner.call_engine(record, engine_id, ctx)
        except SwarmError as exc:  # a replay miss: said as the run's own misses are
            runner.on_miss()
            pytest.fail(f"swarm: judge '{judge.name}': {exc}", pytrace=False)
        if cassettes is not None and len(cassettes.divergences) > before:
            runner.on_miss()
            pytest.fail(
                f"swarm: the replay of judge '{judge.name}' diverged from its recording\n\n"
                + "\n\n".join(cassettes.divergences[before:]),
                pytrace=False,
            )
        runner.count_call(answer.tokens.total, answer.cost_usd)
        error = call_failure(answer)
        score, reason = (None, error) if error is not None else score_of(answer.handoff)
        return JudgeVerdict(
            name=judge.name,
            flow=ctx.flow_key,
            step=ctx.step_id,
            execution=chosen.execution,
            score=score,
            threshold=judge.threshold,
            passed=score is not None and score >= judge.threshold,
            reason=reason,
            engine=engine_id,
            model=answer.model,
            tokens=answer.tokens.total,
            cost_usd=answer.cost_usd,
            error=error,
        )

    def _context(self, record: RunRecord, chosen: StepExpectations, judge: Any) -> StepContext:
        """The judge's call, as the engine is given it: the step's, as a judge's."""
        from swarm_runtime.engines.base import StepContext
        from swarm_runtime.orchestrator.judging import judge_agent, judge_prompt

        flow = self.runner.flows.get(chosen.flow_key)
        spec = next(s for s in flow.steps if s.id == chosen.step_id)
        return StepContext(
            repo_root=self.runner.repo_root,
            run_id=record.run_id,
            flow_key=flow.key,
            step_id=spec.id,
            step_index=flow.index_of(spec.id) + 1,
            total_steps=len(flow.steps),
            spec=record.spec,
            flow_title=flow.title,
            step_role=spec.role,
            step_agents=(judge_agent(judge),),
            history=(),
            run_base=record.path / flow.key,
            iteration=chosen.execution - 1,
            call="judge",
            prompt=judge_prompt(flow, spec, judge, chosen.reply, chosen.receipt.get("handoff")),
            handoff_fields={"score": (), "reason": ()},
            routing_kind="judge",
            extra={"judge": judge.name},
        )


def _judge_spec(name: str, rubric: str, threshold: float, engine: str | None) -> Any:
    """The judge the arguments describe; ValueError naming a bad one."""
    from swarm_runtime.flow.spec import JudgeSpec
    from swarm_runtime.ids import STEP_ID_RE

    if not isinstance(name, str) or not STEP_ID_RE.fullmatch(name):
        raise ValueError(
            f"swarm_judge(name={name!r}): a judge's name must match {STEP_ID_RE.pattern} "
            "(it names the judge's cassette)"
        )
    from swarm_runtime.flow.judge_reader import MAX_RUBRIC_CHARS

    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("swarm_judge(rubric=...): the rubric must be a non-empty string")
    if len(rubric) > MAX_RUBRIC_CHARS:
        raise ValueError(
            f"swarm_judge(rubric=...): a rubric may be {MAX_RUBRIC_CHARS} characters at most, "
            f"got {len(rubric)}"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ValueError(f"swarm_judge(threshold={threshold!r}): a number from 0 to 1")
    if not 0 <= threshold <= 1:
        raise ValueError(f"swarm_judge(threshold={threshold!r}): a number from 0 to 1")
    return JudgeSpec(name=name, rubric=rubric, threshold=float(threshold), engine=engine)
