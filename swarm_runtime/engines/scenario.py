"""Stub scenarios: per-step, per-execution outcomes for the stub engine.

A scenario is a mapping from a step id (or ``flow/step`` where ids repeat across flows) to
one outcome (used for every execution) or a list of outcomes (one per execution, the last
repeating). It comes from a YAML file or a dict; anything unknown is an error naming it.

``wait_for: PATH`` holds an execution until the file PATH exists: a gate a test opens by
creating it, so a pause, a stop or a kill lands inside a chosen step however slow the
machine is. It does nothing unless a scenario scripts it (the stub alone reads it), and it
waits no longer than the step's deadline.

See docs/engines.md#stub-scenarios.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.engines.base import RESULT_CODES
from swarm_runtime.engines.faults import FaultPlan, read_plan_file, step_names
from swarm_runtime.errors import ScenarioError
from swarm_runtime.ids import STEP_ID_RE
from swarm_runtime.record import Record, field

OUTCOME_KEYS = (
    "handoff",
    "text",
    "result_code",
    "error",
    "retry_after_ms",
    "tools",
    "tokens",
    "delay_ms",
    "failing_attempts",
    "artifacts",
    "wait_for",
)
TOOL_KEYS = ("tool", "input", "output", "success")


class ToolCall(Record):
    """A tool call the stub pretends the model made."""

    tool: str
    input: Any = None
    output: Any = None
    success: bool = True
    scripted: bool = True
    """The entry gives ``output``: the call is shown as scripted. Without it, the step's
    real tool of that name runs (when the run has one)."""


class Outcome(Record):
    """What the stub does for one execution of a step."""

    handoff: dict[str, Any] | None = None
    text: str | None = None
    result_code: str = "ok"
    error: str | None = None
    retry_after_ms: int | None = None
    tools: tuple[ToolCall, ...] = ()
    tokens: tuple[int, int] | None = None
    delay_ms: int = 0
    artifacts: tuple[dict[str, Any], ...] = ()
    """Files the step writes: ``{name, content, content_type}`` each."""
    failing_attempts: int | None = None
    """With ``retryable``: the attempts that answer it before the call succeeds (None:
    every attempt, so the step runs out of attempts and fails)."""
    wait_for: str | None = None
    """An absolute path: the execution waits until that file exists (at most the step's
    deadline) before it answers; a test opens the gate by creating the file."""

    def code_for(self, attempt: int, external_input: bool) -> str:
        """The result code of one call: ``attempt`` (1-based) of its execution."""
        code = self.result_code
        if code == "retryable" and self.failing_attempts is not None:
            return code if attempt <= self.failing_attempts else "ok"
        if code == "blocked" and external_input:
            return "ok"  # the input is what the step waited for
        return code


def _check_json(value: Any, where: str) -> None:
    # Values land in events and transcripts as JSON: YAML dates, sets or binary cannot.
    import json

    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(
            f"{where}: holds a value JSON cannot carry ({exc}); quote dates and use plain "
            "strings, numbers, booleans, lists and mappings"
        ) from None


MAX_TOKENS = 10**9
"""The most tokens a scripted call may report (per side): more than any model's window."""

MAX_WAIT_MS = 3_600_000
"""The longest ``delay_ms`` or ``retry_after_ms`` a scenario may script: one hour."""

MAX_FAILING_ATTEMPTS = 1000


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_tokens(tokens: Any, where: str) -> tuple[int, int] | None:
    if tokens is None:
        return None
    if (
        not isinstance(tokens, Mapping)
        or set(tokens) - {"prompt", "completion"}
        or not all(
            isinstance(tokens.get(k, 0), int)
            and not isinstance(tokens.get(k, 0), bool)
            and 0 <= tokens.get(k, 0) <= MAX_TOKENS
            for k in ("prompt", "completion")
        )
    ):
        raise ScenarioError(
            f"{where}.tokens: must be {{prompt: int, completion: int}}, each from 0 to "
            f"{MAX_TOKENS}, got {_preview(tokens)}"
        )
    return (int(tokens.get("prompt", 0)), int(tokens.get("completion", 0)))


def _parse_tools(tools_raw: Any, where: str) -> list[ToolCall]:
    if not isinstance(tools_raw, list):
        raise ScenarioError(f"{where}.tools: must be a list of {{tool, input, output, success}}")
    tools = []
    for i, item in enumerate(tools_raw):
        spot = f"{where}.tools[{i}]"
        if not isinstance(item, Mapping) or "tool" not in item:
            raise ScenarioError(f"{spot}: must be a mapping with at least 'tool'")
        bad = [key for key in item if key not in TOOL_KEYS]
        if bad:
            raise ScenarioError(f"{spot}: unknown key '{bad[0]}' (allowed: {', '.join(TOOL_KEYS)})")
        success = item.get("success", True)
        if not isinstance(success, bool):
            raise ScenarioError(f"{spot}.success: must be true or false")
        tools.append(
            ToolCall(
                tool=str(item["tool"]),
                input=item.get("input"),
                output=item.get("output"),
                success=success,
                scripted="output" in item,
            )
        )
    return tools


def _parse_artifacts(raw: Any, where: str) -> tuple[dict[str, Any], ...]:
    keys = ("name", "content", "content_type")
    if not isinstance(raw, list):
        raise ScenarioError(f"{where}.artifacts: must be a list of {{name, content, content_type}}")
    found = []
    for i, item in enumerate(raw):
        spot = f"{where}.artifacts[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ScenarioError(f"{spot}: must be a mapping with a 'name'")
        bad = [key for key in item if key not in keys]
        if bad:
            raise ScenarioError(f"{spot}: unknown key '{bad[0]}' (allowed: {', '.join(keys)})")
        if not isinstance(item.get("content", ""), str):
            raise ScenarioError(f"{spot}.content: must be a string")
        found.append(dict(item))
    return tuple(found)


def _parse_gate(raw: Any, where: str) -> str | None:
    """``wait_for``: an absolute path, the file whose creation lets the execution go on."""
    if raw is None:
        return None
    import os

    if not isinstance(raw, str) or not os.path.isabs(raw) or "\0" in raw:
        raise ScenarioError(
            f"{where}.wait_for: must be an absolute path (the file whose creation lets the "
            f"step go on), got {_preview(raw)}"
        )
    return raw


def _check_outcome_keys(raw: Any, where: str) -> None:
    """Refuse an outcome that is not a mapping, or that has a key no outcome knows."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{where}: an outcome must be a mapping with keys {', '.join(OUTCOME_KEYS)}"
        )
    unknown = [key for key in raw if key not in OUTCOME_KEYS]
    if unknown:
        raise ScenarioError(
            f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(OUTCOME_KEYS)})"
        )


def _parse_counts(raw: Mapping[str, Any], code: Any, where: str) -> dict[str, int | None]:
    """``delay_ms``, ``retry_after_ms`` and ``failing_attempts``, each checked against its limit.

    ``failing_attempts`` goes only with ``result_code: retryable``, and is at least 1.
    """
    ints: dict[str, int | None] = {}
    limits = {
        "delay_ms": MAX_WAIT_MS,
        "retry_after_ms": MAX_WAIT_MS,
        "failing_attempts": MAX_FAILING_ATTEMPTS,
    }
    for name, limit in limits.items():
        value = raw.get(name)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit
        ):
            raise ScenarioError(
                f"{where}.{name}: must be a whole number from 0 to {limit}, got {_preview(value)}"
            )
        ints[name] = value
    if ints["failing_attempts"] is not None and (
        code != "retryable" or not ints["failing_attempts"]
    ):
        raise ScenarioError(
            f"{where}.failing_attempts: only with result_code retryable, and >= 1 (the "
            "attempts that answer retryable before the call succeeds)"
        )
    return ints


def _parse_outcome(raw: Any, where: str) -> Outcome:
    """One outcome of a scenario, checked key by key; the first problem raises."""
    _check_outcome_keys(raw, where)
    code = raw.get("result_code", "ok")
    if code not in RESULT_CODES:
        raise ScenarioError(
            f"{where}.result_code: {code!r} is not one of {', '.join(RESULT_CODES)}"
        )
    handoff = raw.get("handoff")
    if handoff is not None and not isinstance(handoff, Mapping):
        raise ScenarioError(f"{where}.handoff: must be a mapping of field to value")
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        raise ScenarioError(f"{where}.text: must be a string")
    error = raw.get("error")
    if error is not None and not isinstance(error, str):
        raise ScenarioError(f"{where}.error: must be a string")
    token_pair = _parse_tokens(raw.get("tokens"), where)
    ints = _parse_counts(raw, code, where)
    tools = _parse_tools(raw.get("tools") or [], where)
    artifacts = _parse_artifacts(raw.get("artifacts") or [], where)
    for name in ("handoff", "tools"):
        if raw.get(name) is not None:
            _check_json(raw[name], f"{where}.{name}")
    return Outcome(
        handoff=dict(handoff) if handoff is not None else None,
        text=text,
        result_code=str(code),
        error=error,
        retry_after_ms=ints["retry_after_ms"],
        tools=tuple(tools),
        tokens=token_pair,
        delay_ms=ints["delay_ms"] or 0,
        failing_attempts=ints["failing_attempts"],
        artifacts=artifacts,
        wait_for=_parse_gate(raw.get("wait_for"), where),
    )


def _parse_navigator(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    """``navigator: {<step>: <candidate id> | [<id per execution>, …]}``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{where}: must map step ids (or flow/step) to the candidate id the navigator "
            "chooses, or to a list of them, one per execution"
        )
    choices: dict[str, tuple[str, ...]] = {}
    for key, value in raw.items():
        items = value if isinstance(value, list) else [value]
        if not isinstance(key, str) or not key:
            raise ScenarioError(f"{where}: keys must be step ids, got {key!r}")
        if not items or not all(isinstance(item, str) and item for item in items):
            raise ScenarioError(
                f"{where}.{key}: must be a candidate id or a non-empty list of them, "
                f"got {_preview(value)}"
            )
        choices[key] = tuple(items)
    return choices


JUDGE_REPLY_KEYS = ("score", "reason", "text")


class JudgeReply(Record):
    """What the stub's judge answers: a score and reason, or a reply of its own."""

    score: Any = None
    """The score written in its handoff (anything: a test may script a bad one)."""
    reason: str = "as the scenario says"
    text: str | None = None
    """The whole reply instead (say, one with no handoff block)."""


def _parse_judges(raw: Any, where: str) -> dict[str, dict[str, tuple[JudgeReply, ...]]]:
    """``judges: {<step>: {<judge>: <score> | {score, reason} | {text} | [one per execution]}}``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{where}: must map step ids (or flow/step) to their judges' replies, as "
            "{<step>: {<judge name>: <score> or {score, reason}}}"
        )
    found: dict[str, dict[str, tuple[JudgeReply, ...]]] = {}
    for key, judges in raw.items():
        if not isinstance(key, str) or not key:
            raise ScenarioError(f"{where}: keys must be step ids, got {key!r}")
        if not isinstance(judges, Mapping) or not judges:
            raise ScenarioError(
                f"{where}.{key}: must map judge names to their replies, got {_preview(judges)}"
            )
        replies: dict[str, tuple[JudgeReply, ...]] = {}
        for name, value in judges.items():
            if not isinstance(name, str) or not STEP_ID_RE.fullmatch(name):
                raise ScenarioError(
                    f"{where}.{key}: {name!r} is not a judge name ({STEP_ID_RE.pattern})"
                )
            items = value if isinstance(value, list) else [value]
            if not items:
                raise ScenarioError(f"{where}.{key}.{name}: a reply list must not be empty")
            replies[str(name)] = tuple(
                _judge_reply(item, f"{where}.{key}.{name}") for item in items
            )
        found[key] = replies
    return found


def _judge_reply(raw: Any, where: str) -> JudgeReply:
    if not isinstance(raw, Mapping):
        return JudgeReply(score=_judge_score(raw, where))
    unknown = [key for key in raw if key not in JUDGE_REPLY_KEYS]
    if unknown:
        raise ScenarioError(
            f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(JUDGE_REPLY_KEYS)})"
        )
    text, reason = raw.get("text"), raw.get("reason", "as the scenario says")
    for name, value in (("text", text), ("reason", reason)):
        if value is not None and not isinstance(value, str):
            raise ScenarioError(f"{where}: {name} must be a string, got {_preview(value)}")
    return JudgeReply(score=_judge_score(raw.get("score"), where), reason=reason or "", text=text)


def _judge_score(raw: Any, where: str) -> Any:
    """A scripted score: a finite number (any, to script one out of range), text or null."""
    import math

    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise ScenarioError(
            f"{where}: a judge's score must be a finite number, text or null, got {_preview(raw)}"
        )
    return raw


def _plain(raw: Mapping[Any, Any]) -> Any:
    """``raw`` as JSON can carry it, or None when it holds what JSON cannot."""
    import json

    try:
        return json.loads(json.dumps(raw, allow_nan=False))
    except (TypeError, ValueError):
        return None


class Scenario(Record):
    """A parsed scenario; ``outcome_for`` answers per step and execution."""

    entries: dict[str, tuple[Outcome, ...]] = field(default_factory=dict)
    navigator: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``navigator:``: per step (or flow/step), the candidate the stub's navigator chooses,
    one per execution (the last one repeats)."""
    faults: FaultPlan | None = None
    """``faults:``: the fault plan of runs with this scenario (docs/faults.md)."""
    judges: dict[str, dict[str, tuple[JudgeReply, ...]]] = field(default_factory=dict)
    """``judges:``: per step (or flow/step), per judge, what the stub's judge answers, one
    per execution (the last one repeats) (docs/judges.md#judges)."""
    source: str = "<scenario>"
    used: set[str] = field(default_factory=set)
    raw: Any = None
    """The mapping as given, kept in ``spec.json`` so a resumed run gets the same one."""

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str = "<scenario>") -> Scenario:
        """Parse a scenario mapping; raise ScenarioError naming what is wrong."""
        if raw is None:
            return cls(source=source)
        if not isinstance(raw, Mapping):
            raise ScenarioError(
                f"{source}: a scenario must be a mapping of step id (or flow/step) to outcomes"
            )
        entries: dict[str, tuple[Outcome, ...]] = {}
        navigator = _parse_navigator(raw.get("navigator"), f"{source}: navigator")
        judges = _parse_judges(raw.get("judges"), f"{source}: judges")
        faults = (
            FaultPlan.from_mapping(raw["faults"], source=f"{source}: faults")
            if raw.get("faults") is not None
            else None
        )
        for key, value in raw.items():
            where = f"{source}: {key}"
            if key in ("navigator", "faults", "judges"):
                continue
            if not isinstance(key, str) or not key:
                raise ScenarioError(f"{source}: scenario keys must be step ids, got {key!r}")
            if isinstance(value, list):
                if not value:
                    raise ScenarioError(f"{where}: an outcome list must not be empty")
                entries[key] = tuple(
                    _parse_outcome(item, f"{where}[{i}]") for i, item in enumerate(value)
                )
            else:
                entries[key] = (_parse_outcome(value, where),)
        return cls(
            entries=entries,
            navigator=navigator,
            faults=faults,
            judges=judges,
            source=source,
            raw=_plain(raw),
        )

    @classmethod
    def from_file(cls, path: Path | str) -> Scenario:
        """Read a scenario YAML (or JSON) file."""
        return cls.from_mapping(read_plan_file(path, "scenario file"), source=str(path))

    def check_steps(self, flows: Iterable[tuple[str, Iterable[str]]]) -> None:
        """Raise ScenarioError if a key names no step of the given (flow, step ids)."""
        known = step_names(flows)
        if self.faults is not None:
            self.faults.check_keys(known)
        for key in (*self.entries, *self.navigator, *self.judges):
            if key not in known:
                import difflib

                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ScenarioError(
                    f"{self.source}: '{key}' names no step of the flows in this run{hint}"
                )

    def outcome_for(self, flow_key: str, step_id: str, execution: int) -> Outcome | None:
        """The outcome for the ``execution``-th (0-based) run of a step, if scripted."""
        for key in (f"{flow_key}/{step_id}", step_id):
            outcomes = self.entries.get(key)
            if outcomes is not None:
                self.used.add(key)
                return outcomes[min(execution, len(outcomes) - 1)]
        return None

    def navigator_choice(self, flow_key: str, step_id: str, execution: int) -> str | None:
        """The candidate the navigator chooses after a step's ``execution`` (0-based)."""
        for key in (f"{flow_key}/{step_id}", step_id):
            choices = self.navigator.get(key)
            if choices is not None:
                self.used.add(f"navigator.{key}")
                return choices[min(execution, len(choices) - 1)]
        return None

    def judge_reply(
        self, flow_key: str, step_id: str, judge: str, execution: int
    ) -> JudgeReply | None:
        """What a step's judge answers after its ``execution`` (0-based), if scripted."""
        for key in (f"{flow_key}/{step_id}", step_id):
            replies = self.judges.get(key, {}).get(judge)
            if replies is not None:
                self.used.add(f"judges.{key}.{judge}")
                return replies[min(execution, len(replies) - 1)]
        return None

    def unused(self) -> list[str]:
        """Keys never consulted: a scripted step that never ran."""
        scripted = set(self.entries) | {f"navigator.{key}" for key in self.navigator}
        scripted |= {f"judges.{key}.{name}" for key, names in self.judges.items() for name in names}
        return sorted(scripted - self.used)
