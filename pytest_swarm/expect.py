"""Expectations on what a step said: ``swarm_expect(record).step("review").contains("refund")``.

The contract checks of :mod:`pytest_swarm.assertions` hold a run to its files; these hold a
step to its output. Each check reads the run's files (so it works for a run made in any
mode, in-process or not) and fails with an AssertionError that names the run dir, flow,
step and execution, says what was expected, and shows what it looked at (cut in the
middle, visibly, when long).

What a step "said" is its reply: the content of the assistant lines of that execution's
transcript. ``handoff`` and ``json_schema`` read the handoff its receipt holds; ``tool_called``
the ``tool_start`` events of the execution; ``cost_below`` and ``tokens_below`` its receipt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord, StepKey

SHOWN_CHARS = 1500
"""How much of a text a failure shows: its start and its end, the middle cut."""

JSON_SOURCES = ("handoff", "block")
"""What ``json_schema`` can check: the receipt's handoff, or the reply's last fenced json block."""

_FENCE = re.compile(r"```json[ \t]*\n(.*?)\n```", re.DOTALL)


class VerdictFailed(AssertionError):
    """What a step said did not hold: a verdict on the output, not a broken run.

    A test that fails with one while recording keeps its recording, so that its replay
    gives the same verdict offline.
    """


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` indented for a failure message, its middle cut when over ``limit``."""
    if len(text) > limit:
        head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
        cut = len(text) - len(head) - len(tail)
        text = f"{head}\n[... {cut} characters cut ...]\n{tail}"
    return "\n".join(f"    | {line}" for line in text.splitlines() or [""])


class StepExpectations:
    """Checks on one execution of one step; each returns ``self``, so they chain."""

    def __init__(self, record: RunRecord, key: StepKey, execution: int, count: int) -> None:
        self.record = record
        self.flow_key, self.step_id = key
        self.execution = execution
        """1-based: the execution the checks read."""
        self.count = count
        self.receipt: dict[str, Any] = record.executions[key][execution - 1]

    def step(
        self, step_id: str, execution: int = -1, *, flow: str | None = None
    ) -> StepExpectations:
        """Go on with another step (see :meth:`Expectations.step`)."""
        return Expectations(self.record).step(step_id, execution, flow=flow)

    # -- what is read ---------------------------------------------------------------------

    @property
    def where(self) -> str:
        return (
            f"{self.flow_key}/{self.step_id} (execution {self.execution} of {self.count}) "
            f"in run {self.record.run_id}"
        )

    @property
    def transcript_path(self) -> Path:
        """The transcript of the execution: the receipt's path, ``~N`` for an earlier execution."""
        path = self.record.path / self.flow_key / str(self.receipt.get("transcript_path", ""))
        if self.execution == self.count:
            return path
        return path.with_name(f"{path.stem}~{self.execution}{path.suffix}")

    @property
    def reply(self) -> str:
        """What the step said: the content of its transcript's assistant lines."""
        path = self.transcript_path
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self._fail(f"its transcript {path} cannot be read ({exc.strerror or exc})")
        said = []
        for line in lines:
            entry = json.loads(line) if line.strip() else {}
            if isinstance(entry, dict) and entry.get("role") == "assistant":
                said.append(str(entry.get("content") or ""))
        return "\n".join(said)

    def _looked_at_reply(self) -> str:
        text = self.reply
        relative = self.transcript_path.relative_to(self.record.path)
        return f"the reply in {relative} ({len(text)} characters):\n{shown(text)}"

    def _note(self, check: str, passed: bool) -> None:
        """Tell the run's listener (its test's flow runner) how a check went."""
        noted = getattr(self.record, "expectations", None)
        if noted is not None:
            noted.append((f"{self.flow_key}/{self.step_id} {check}", passed))

    def _fail(self, expected: str, looked_at: str | None = None) -> NoReturn:
        __tracebackhide__ = True
        lines = [
            f"expected {self.where} {expected}",
            f"  run dir: {self.record.path}",
            f"  flow: {self.flow_key}  step: {self.step_id}  "
            f"execution: {self.execution} of {self.count}",
        ]
        if looked_at is not None:
            lines.append(f"  looked at {looked_at}")
        raise VerdictFailed("\n".join(lines))

    # -- checks ---------------------------------------------------------------------------

    def contains(self, text: str) -> StepExpectations:
        """The reply holds ``text``."""
        __tracebackhide__ = True
        ok = text in self.reply
        self._note(f"contains({text!r})", ok)
        if not ok:
            self._fail(f"to say {text!r}", self._looked_at_reply())
        return self

    def not_contains(self, text: str) -> StepExpectations:
        """The reply does not hold ``text``."""
        __tracebackhide__ = True
        reply = self.reply
        self._note(f"not_contains({text!r})", text not in reply)
        if text in reply:
            at = reply.index(text)
            self._fail(f"not to say {text!r} (it does, at character {at})", self._looked_at_reply())
        return self

    def matches(self, pattern: str | re.Pattern[str]) -> StepExpectations:
        """``re.search(pattern, reply)`` finds something (flags inline: ``(?is)…``)."""
        __tracebackhide__ = True
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"matches({pattern!r}): not a regular expression: {exc}") from None
        found = compiled.search(self.reply) is not None
        self._note(f"matches({compiled.pattern!r})", found)
        if not found:
            self._fail(f"to match {compiled.pattern!r}", self._looked_at_reply())
        return self

    def handoff(self, **fields: Any) -> StepExpectations:
        """The receipt's handoff has each of ``fields`` with that value."""
        __tracebackhide__ = True
        handoff = self._handoff(f"handoff({_arguments(fields)})")
        wrong = [
            f"{name}: expected {value!r}, "
            + (f"got {handoff[name]!r}" if name in handoff else "missing")
            for name, value in fields.items()
            if name not in handoff or handoff[name] != value
        ]
        self._note(f"handoff({_arguments(fields)})", not wrong)
        if wrong:
            self._fail(
                "to hand on " + _arguments(fields),
                "its handoff:\n" + shown(_dump(handoff)) + "\n  " + "\n  ".join(wrong),
            )
        return self

    def json_schema(self, schema: dict[str, Any], *, of: str = "handoff") -> StepExpectations:
        """What the step gave is valid against a JSON Schema.

        ``of="handoff"``: the receipt's handoff; ``of="block"``: the reply's last fenced
        ```` ```json ```` block.
        """
        __tracebackhide__ = True
        if of not in JSON_SOURCES:
            raise ValueError(f"json_schema(of={of!r}): allowed: {', '.join(JSON_SOURCES)}")
        validator = _validator(schema)
        check = f"json_schema(of={of!r})"
        if of == "handoff":
            value: Any = self._handoff(check)
            what = "its handoff"
        else:
            value, what = self._json_block(check)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        self._note(check, not errors)
        if errors:
            problems = [f"{_json_path(error.absolute_path)}: {error.message}" for error in errors]
            self._fail(
                f"to give a {of} valid against the schema ({len(errors)} problem(s))",
                f"{what}:\n{shown(_dump(value))}\n  " + "\n  ".join(problems),
            )
        return self

    def tool_called(self, name: str, **input_subset: Any) -> StepExpectations:
        """The step called tool ``name`` with at least these input fields (equal values)."""
        __tracebackhide__ = True
        calls = self._tool_calls()
        wanted = f"{name}({_arguments(input_subset)})"
        for tool, given in calls:
            if tool != name:
                continue
            given_dict = given if isinstance(given, dict) else {}
            if all(k in given_dict and given_dict[k] == v for k, v in input_subset.items()):
                self._note(f"tool_called({wanted})", True)
                return self
        self._note(f"tool_called({wanted})", False)
        made = "\n".join(f"{tool} {_dump(given)}" for tool, given in calls)
        self._fail(
            f"to call {wanted}",
            f"the tool calls it made ({len(calls)}):\n" + (shown(made) if calls else "    (none)"),
        )
        return self

    def cost_below(self, usd: float) -> StepExpectations:
        """The execution's estimated cost is below ``usd`` (a step that called no model: 0)."""
        __tracebackhide__ = True
        cost = self.receipt.get("cost")
        if not isinstance(cost, dict):
            spent = 0.0  # no provider was called (stub mode, a local step)
        else:
            value = cost.get("estimatedCostUsd")
            if value is None:
                self._note(f"cost_below({usd})", False)
                self._fail(
                    f"to cost below ${usd}, but its cost is unknown: model "
                    f"{cost.get('model')!r} is not in the price table (check tokens_below)",
                )
            spent = float(value)
        self._note(f"cost_below({usd})", spent < usd)
        if not spent < usd:
            self._fail(f"to cost below ${usd}", f"its receipt's cost: ${spent:.6f}")
        return self

    def tokens_below(self, tokens: int) -> StepExpectations:
        """The execution's tokens (every attempt, prompt + completion) are below ``tokens``."""
        __tracebackhide__ = True
        counted = self.receipt.get("tokens") or {}
        total = int(counted.get("total") or 0)
        self._note(f"tokens_below({tokens})", total < tokens)
        if not total < tokens:
            self._fail(
                f"to use fewer than {tokens} tokens",
                f"its receipt's tokens: {total} (prompt {counted.get('prompt')}, "
                f"completion {counted.get('completion')})",
            )
        return self

    # -- helpers --------------------------------------------------------------------------

    def _handoff(self, check: str) -> dict[str, Any]:
        __tracebackhide__ = True
        handoff = self.receipt.get("handoff")
        if not isinstance(handoff, dict):
            self._note(check, False)
            self._fail("to hand something on, but its receipt has no handoff")
        return dict(handoff)

    def _json_block(self, check: str) -> tuple[Any, str]:
        __tracebackhide__ = True
        blocks = _FENCE.findall(self.reply)
        if not blocks:
            self._note(check, False)
            self._fail("to give a fenced ```json block", self._looked_at_reply())
        try:
            return json.loads(blocks[-1]), "its last ```json block"
        except ValueError as exc:
            self._note(check, False)
            self._fail(
                f"to give a ```json block that is JSON ({exc})",
                "its last ```json block:\n" + shown(blocks[-1]),
            )

    def _tool_calls(self) -> list[tuple[str, Any]]:
        """(tool, input) of each ``tool_start`` between this execution's start and end."""
        seen, inside, calls = 0, False, []
        for event in self.record.event_dicts:
            if event.get("flow_key") != self.flow_key or event.get("step_id") != self.step_id:
                continue
            kind = event.get("kind")
            if kind == "step_start":
                seen += 1
                inside = seen == self.execution
            elif kind == "step_end":
                inside = False
            elif inside and kind == "tool_start":
                payload = event.get("payload") or {}
                calls.append((str(payload.get("tool")), payload.get("input")))
        return calls


class Expectations:
    """``swarm_expect(record)``: choose a step with :meth:`step`, then check it."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record

    def step(
        self, step_id: str, execution: int = -1, *, flow: str | None = None
    ) -> StepExpectations:
        """The checks of one execution of a step.

        ``step_id`` is a step's id, or ``flow/step``; ``flow=`` says which flow when the id
        ran in more than one. ``execution``: 1 is the first, -1 (the default) the latest.
        """
        __tracebackhide__ = True
        if flow is None and "/" in step_id:
            flow, step_id = step_id.split("/", 1)
        ran = list(self.record.executions)
        keys = [key for key in ran if key[1] == step_id and (flow is None or key[0] == flow)]
        named = f"{flow}/{step_id}" if flow else step_id
        if not keys:
            listed = ", ".join(f"{f}/{s}" for f, s in ran) or "none"
            raise AssertionError(
                f"step {named!r} did not run in run {self.record.run_id} "
                f"({self.record.path}); steps that ran: {listed}"
            )
        if len(keys) > 1:
            flows = ", ".join(key[0] for key in keys)
            raise AssertionError(
                f"step {step_id!r} ran in flows {flows} of run {self.record.run_id}: say which, "
                f"as step('{keys[0][0]}/{step_id}') or step({step_id!r}, flow={keys[0][0]!r})"
            )
        key = keys[0]
        count = len(self.record.executions[key])
        if not isinstance(execution, int) or isinstance(execution, bool) or execution == 0:
            raise ValueError(
                f"step({named!r}, execution={execution!r}): executions are counted from 1 "
                "(the first); -1 is the latest, -2 the one before"
            )
        number = execution if execution > 0 else count + 1 + execution
        if not 1 <= number <= count:
            raise AssertionError(
                f"step {key[0]}/{key[1]} ran {count} time(s) in run {self.record.run_id}: "
                f"there is no execution {execution}"
            )
        return StepExpectations(self.record, key, number, count)


def swarm_expect(record: RunRecord) -> Expectations:
    """Expectations on what the steps of ``record`` said (see :mod:`pytest_swarm.expect`)."""
    return Expectations(record)


def _arguments(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _json_path(path: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _validator(schema: dict[str, Any]) -> Any:
    """A validator of the schema's own draft; ValueError naming what is wrong with it."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - installed with the pytest extra
        raise ValueError(
            "json_schema needs the jsonschema package: pip install 'swarm-stepwise[pytest]'"
        ) from None
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = _json_path(exc.absolute_path)
        raise ValueError(f"json_schema: the schema is not valid at {where}: {exc.message}") from (
            None
        )
    return cls(schema)
