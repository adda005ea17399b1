"""The engine interface: what a step engine receives, returns, and must promise.

An engine runs exactly one LLM call for one step. It gets a :class:`StepContext` and the
prompt, and returns a :class:`StepOutcome`: the :class:`StepResult` of
docs/engines.md#the-engine-contract, the events it saw (tool calls), and what the orchestrator needs
to write the receipt and the transcript. The orchestrator alone writes files, so there is one place
that does it.
"""

from __future__ import annotations

import abc
import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any, Literal

import msgspec

from swarm_runtime.documents.run_events import Log, ToolEnd, ToolStart
from swarm_runtime.ids import ENGINE_SHORT_RE
from swarm_runtime.record import Record, field
from swarm_runtime.storage.store import json_string

DEFAULT_TIMEOUT_S = 300.0
"""How long one engine call of a step may take in all, in every mode, unless the step's
``timeout_s`` or the engine's ``timeout_s`` in runtime.yaml says otherwise."""

MAX_OUTPUT_BYTES = 50 * 1024
"""A StepResult's output stays under this; longer text is cut with a marker."""

ResultCode = Literal["ok", "retryable", "fatal", "blocked", "skipped"]
RESULT_CODES: tuple[str, ...] = ("ok", "retryable", "fatal", "blocked", "skipped")
TRUNCATION_MARKER = "\n[OUTPUT_TRUNCATED: full text in the transcript]"


class Prompt(Record):
    """The two parts of a step's prompt (docs/flows.md#prompt)."""

    system: str
    user: str


class HistoryItem(Record):
    """The output of one earlier step execution, as the next steps see it."""

    flow_key: str
    step_id: str
    agent_key: str
    iteration: int
    output: str

    @property
    def header(self) -> str:
        """The heading of the item in a prompt."""
        return (
            f"### {self.flow_key}/{self.step_id} ({self.agent_key}, execution {self.iteration + 1})"
        )

    def render(self, room: int) -> tuple[str, int, int]:
        """The item within ``room`` chars: (text, chars used, chars cut)."""
        text = self.output
        if len(text) <= room:
            return f"{self.header}\n{text}", len(text), 0
        cut = len(text) - room
        marked = (
            f"{text[:room]}\n[CONTEXT_TRUNCATED: {cut} of {len(text)} chars of this output cut]"
        )
        return f"{self.header}\n{marked}", room, cut


class StepContext(Record):
    """Everything an engine may know about the step it runs."""

    repo_root: Path
    run_id: str
    flow_key: str
    step_id: str
    step_index: int
    """1-based position of the step in its flow."""
    total_steps: int
    spec: dict[str, Any]
    """The RunSpec as a plain mapping."""
    flow_title: str
    step_role: str
    step_agents: tuple[str, ...]
    history: tuple[HistoryItem, ...]
    """Outputs of earlier steps, newest first, as given to the prompt."""
    run_base: Path
    """The flow's directory inside the run: ``<runs_dir>/<run_id>/<flow_key>``."""
    iteration: int = 0
    """0-based count of earlier executions of this step in this run."""
    attempt: int = 1
    """1-based call of this execution: a ``retryable`` answer is retried with attempt + 1."""
    handoff_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Fields the reply must declare in its handoff block, with their expected values."""
    routing_kind: str = "linear"
    """How the step routes (``linear``, ``microloop``, ``branch``): what its handoff decides."""
    prompt: Prompt | None = None
    tools: tuple[str, ...] = ()
    """The tools the step's model may call (docs/tools.md#tools)."""
    max_tool_calls: int | None = None
    """How many tool calls the step may make (None: runtime.yaml's, default 20)."""
    timeout_s: float | None = None
    """The step's own limit for one call, in every mode (the engine's default when None)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else; ``input`` holds the external input a ``blocked`` step waited for."""
    call: str = "step"
    """``step``, or ``navigator``: the kernel asks which move to make after the step
    (docs/flows.md#navigator); ``handoff_fields["choice"]`` then lists the candidate ids."""


class StepResult(Record):
    """What a step produced (docs/engines.md#the-engine-contract)."""

    step_id: str
    status: Literal["succeeded", "failed", "skipped"]
    output: str = ""
    error: str | None = None
    duration_ms: int = 0
    artifacts: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.status not in ("succeeded", "failed", "skipped"):
            raise ValueError(f"StepResult.status {self.status!r} is not succeeded|failed|skipped")
        if self.duration_ms < 0:
            raise ValueError(f"StepResult.duration_ms must be >= 0, got {self.duration_ms}")
        if not _fits(self.output) and len(self.output.encode("utf-8")) >= MAX_OUTPUT_BYTES:
            raise ValueError("StepResult.output must be under 50 KB; use truncate_output()")


_SORTED_JSON = msgspec.json.Encoder(order="sorted")
MAX_KEPT_DIGEST_STARTS = 512
"""Request digests begun (a step's request before its user prompt), kept for the process:
the oldest go first."""
_digest_starts: dict[tuple[str, str, str, tuple[str, ...]], Any] = {}
_keeping = threading.Lock()


def request_digest(body: Any) -> str:
    """The sha256 hex of a request as JSON with sorted keys and compact separators.

    The bytes are ``json.dumps(body, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` in UTF-8, which msgspec's sorted encoder writes alike for dicts
    with str keys, lists, str, int, bool and None; a body holding anything else (a float:
    ``1e+16`` against ``1e16``) is written by the stdlib, so a digest never changes.
    """
    if _plain(body):
        try:
            return hashlib.sha256(_SORTED_JSON.encode(body)).hexdigest()
        except (TypeError, OverflowError, msgspec.EncodeError):  # an int past 64 bits
            pass
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(body: Any) -> bool:
    """Whether ``body`` holds only dicts with str keys, lists, str, int, bool and None."""
    stack = [body]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            if not all(type(key) is str for key in value):
                return False
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is not str and kind is not int and kind is not bool and value is not None:
            return False
    return True


def short_name(engine_id: str) -> str:
    """An engine id as transcript names carry it: ``openai-step`` -> ``openai``."""
    name = re.sub(r"[^a-z0-9_-]+", "-", engine_id.lower().removesuffix("-step")).strip("-_")
    return name if ENGINE_SHORT_RE.match(name) else "engine"


def _fits(text: str) -> bool:
    """ASCII text shorter than :data:`MAX_OUTPUT_BYTES` (known without encoding it)."""
    return text.isascii() and len(text) < MAX_OUTPUT_BYTES


def truncate_output(text: str) -> str:
    """``text`` cut to fit a StepResult, with a visible marker when something was cut."""
    if _fits(text):
        return text
    data = text.encode("utf-8")
    if len(data) < MAX_OUTPUT_BYTES:
        return text
    room = MAX_OUTPUT_BYTES - len(TRUNCATION_MARKER.encode("utf-8")) - 1
    return data[:room].decode("utf-8", errors="ignore") + TRUNCATION_MARKER


class RunEvent(Record):
    """An event an engine reports; the orchestrator adds run id, seq (and ts if none)."""

    payload: ToolStart | ToolEnd | Log
    """A tool call's start or end, or a message (the kinds that stand inside a step)."""
    ts: str | None = None

    @property
    def kind(self) -> str:
        """The event's kind."""
        return self.payload.kind


class TokenUsage(Record):
    """Tokens of one call."""

    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        """Prompt + completion."""
        return self.prompt + self.completion

    def as_dict(self) -> dict[str, int]:
        """The receipt's ``tokens`` object."""
        return {"prompt": self.prompt, "completion": self.completion, "total": self.total}


class StepOutcome(Record):
    """An engine's answer for one step call."""

    result: StepResult
    events: tuple[RunEvent, ...] = ()
    result_code: ResultCode = "ok"
    text: str = ""
    """The whole assistant reply (the StepResult's output may be truncated)."""
    handoff: dict[str, Any] | None = None
    tokens: TokenUsage = TokenUsage()
    model: str = "unknown"
    provider: str = "none"
    mode: str = "stub"
    transcript: tuple[dict[str, Any], ...] = ()
    """Transcript lines after the system and user prompt (assistant reply, tool lines)."""
    retry_after_ms: int | None = None
    cost_usd: float | None = None
    """What the call cost in USD: None when unknown (a model not in the price table, or an
    engine that does not say); the stub says 0. Never a guess."""
    cassette: str | None = None
    """For a recorded or replayed call: its cassette, relative to the cassette dir."""
    tool_call_ms: int = 0
    """Time the call spent in tools (an engine that runs tools says so)."""
    request_sha256: str | None = None
    """The sha256 of the normalised request the engine sent (docs/record-replay.md#stale-cassettes);
    the orchestrator fills it from :meth:`StepEngine.request_sha256` when an engine does not."""
    prompt: Prompt | None = None
    """What the step's transcript shows as its system and user lines, when not the prompt
    of its context (a plan step's handler asks the model its own prompt)."""

    def envelope(
        self,
        run_id: str,
        timing: dict[str, Any],
        artifacts: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The answer as a StepOutput envelope, camelCase JSON.

        See docs/contract/steps.md#envelopes.
        """
        result = self.result
        code = self.result_code
        error: dict[str, Any] | None = None
        if code in ("retryable", "fatal"):
            error = {"message": result.error or code}
            if code == "retryable" and self.retry_after_ms is not None:
                error["retryAfterMs"] = self.retry_after_ms
        cost = None
        if self.provider != "none":  # a provider was called: what it cost, if known
            tokens = self.tokens
            cost = {
                "model": self.model,
                "provider": self.provider,
                "tokens": {
                    "input": tokens.prompt,
                    "output": tokens.completion,
                    "total": tokens.total,
                },
                "estimatedCostUsd": self.cost_usd,
            }
        text = result.output or result.error or ""
        return {
            "runId": run_id,
            "stepId": result.step_id,
            "resultCode": code,
            "summary": text.strip().split("\n", 1)[0][:200],
            "data": {"handoff": self.handoff} if self.handoff is not None else None,
            "error": error,
            "artifacts": artifacts or None,
            "timing": timing,
            "cost": cost,
            "suggestedNextStep": None,
            "requiresApproval": code == "blocked",
            "proposedChanges": None,
        }


class StepEngine(abc.ABC):
    """One way of running a step: stub, SDK, CLI, … Subclasses implement ``run_step``."""

    engine_id: str = "claude-step"
    """The id written to receipts and events."""
    _engine_short: str | None = None
    mode: str = "stub"

    @property
    def engine_short(self) -> str:
        """Used in transcript file names: ``<step>-<agent>-<engine_short>.jsonl``.

        What the engine declares (a class attribute ``engine_short = "…"``, or set in its
        ``__init__``), else derived from its id: ``openai-step`` -> ``openai``.
        """
        return self._engine_short or short_name(self.engine_id)

    @engine_short.setter
    def engine_short(self, value: str) -> None:
        self._engine_short = value

    @abc.abstractmethod
    def run_step(self, ctx: StepContext) -> StepOutcome:
        """Run one call for the step in ``ctx`` (``ctx.prompt`` is set) and report it."""

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The normalised request of the call in ``ctx``: what the engine is given.

        Only what comes from the flow, the settings and the run's history, never a
        timestamp, a port or a path of this machine: receipts carry its digest, and
        goldens keep receipts. An engine that sends a request of its own says it here.
        """
        prompt = ctx.prompt
        return {
            "engine": self.engine_id,
            "call": ctx.call,
            "system": prompt.system if prompt is not None else "",
            "user": prompt.user if prompt is not None else "",
            "tools": list(ctx.tools),
        }

    def request_sha256(self, ctx: StepContext) -> str:
        """The sha256 of :meth:`request_body` (a receipt's ``request_sha256``).

        For the body above, what comes before the user prompt (its last key) is hashed once
        per step and kept: a step's digest then reads only the prompt that changed.
        """
        if type(self).request_body is not StepEngine.request_body:
            return request_digest(self.request_body(ctx))
        prompt = ctx.prompt
        system, user = (prompt.system, prompt.user) if prompt is not None else ("", "")
        key = (self.engine_id, ctx.call, system, ctx.tools)
        start = _digest_starts.get(key)  # by what it hashed: any run's engine may use it
        if start is None:
            body = {**self.request_body(ctx), "user": ""}
            encoded = _SORTED_JSON.encode(body) if _plain(body) else b""
            if not encoded.endswith(b',"user":""}'):  # "user" is the body's last key
                return request_digest(self.request_body(ctx))
            start = hashlib.sha256(encoded[:-3])  # up to '"user":'
            with _keeping:
                if len(_digest_starts) >= MAX_KEPT_DIGEST_STARTS:
                    del _digest_starts[next(iter(_digest_starts))]
                _digest_starts[key] = start
        digest = start.copy()
        digest.update(json_string(user))
        digest.update(b"}")
        return str(digest.hexdigest())

    def close(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release resources held across steps; the default holds none."""
