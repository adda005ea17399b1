"""Context handoff between steps: earlier outputs within budgets (docs/flows.md#history).

Items are taken newest first. The most recent step may use ``recent_chars``, each older
one ``older_chars``, all together ``total_chars``. Whatever is cut is marked in the text
with ``[CONTEXT_TRUNCATED …]`` and counted, so the receipt can say what the step missed
(docs/flows.md#truncation).

Rendering happens before every step, so each item's text is rendered once and kept; when
everything fits (the usual case) a prompt's history is one join. Otherwise rendering walks
only the newest items that fit and counts everything older from running totals, so a step
costs the same however long the run has been. An item that no future prompt can reach
(the items between it and the newest already fill ``total_chars`` on their own) is let
go, and only counted: a run's memory does not grow with its length.

Building a step's prompt (docs/flows.md#prompt).

System part: agent persona, flow title and step header, role, the four teaching-note
sections, and the handoff fields the step must declare. User part: the run's request and
the history. A step's teaching notes never appear in another step's prompt: the prompt of
a step is built from that step alone, and history carries outputs, never notes.

What an engine is handed for one step execution: its :class:`StepContext`.

The parts that stay the same for a whole run (a flow's run base, a step's handoff fields)
are made once per run and kept.

A step execution's receipt (docs/contract/receipt.md): built once, when its verdict is known.

What the engine answered (the :class:`Call`, after its retries), where the time went and
what the step wrote make an :class:`Execution`; with its :class:`Verdict` (the route it
took, or why it failed) it becomes the one immutable
:class:`~swarm_runtime.documents.receipt.Receipt` (:func:`build_receipt`) that is written.
A routing condition that reads ``receipt`` sees the receipt the step would have if it
succeeded (:class:`ReceiptSoFar`), made only when a condition reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import msgspec
from msgspec import UNSET

from swarm_runtime.documents.receipt import (
    Artifact,
    ContextTruncation,
    Cost,
    CostTokens,
    Mode,
    Receipt,
    ReceiptRouting,
    Timing,
    Tokens,
)
from swarm_runtime.engines.base import (
    HistoryItem,
    Prompt,
    StepContext,
    StepEngine,
    StepOutcome,
    TokenUsage,
)
from swarm_runtime.flow.kinds import HandoffField, handoff_fields, step_handoff
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.record import Record, field
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.timeutil import format_ts, ms_between


class HistoryBudget(Record):
    """Character budgets for the history part of a prompt."""

    total_chars: int = 200_000
    recent_chars: int = 60_000
    older_chars: int = 10_000


class RenderedHistory(Record):
    """The history text for a prompt, and what was cut from it."""

    text: str
    items: tuple[HistoryItem, ...] = ()
    """The items that appear in the text, newest first."""
    items_dropped: int = 0
    chars_dropped: int = 0
    truncation: dict[str, int] = field(default_factory=dict)


class History:
    """The outputs of a run so far, oldest first, rendered for prompts within a budget."""

    def __init__(self, budget: HistoryBudget | None = None) -> None:
        self.budget = budget or HistoryBudget()
        self.items: list[HistoryItem] = []
        """The items a prompt may still show, oldest first (see :meth:`_let_go`)."""
        self.released = 0
        """How many older items were let go: no prompt can show them any more."""
        self._used: list[int] = []
        """The chars each item takes as an older item, ``min(output, older_chars)``."""
        self._older: list[str] = []
        """Each item rendered within ``older_chars``, oldest first."""
        self._older_chars = 0
        self._cut: list[bool] = []
        self._cut_count = 0
        """How many items do not fit within ``older_chars`` whole."""
        self._chars_before = [0]
        """``_chars_before[i]``: the output chars of the ``released + i`` oldest items,
        for counting what a full budget drops without walking it."""

    def __len__(self) -> int:
        """How many items the run has added, including those let go."""
        return self.released + len(self.items)

    def add(self, item: HistoryItem) -> None:
        """Append the output of a finished step execution."""
        text, used, cut = item.render(self.budget.older_chars)
        self.items.append(item)
        self._older.append(text)
        self._used.append(used)
        self._older_chars += used
        self._cut.append(cut > 0)
        self._cut_count += cut > 0
        self._chars_before.append(self._chars_before[-1] + len(item.output))
        self._let_go()

    def _let_go(self) -> None:
        """Drop the oldest items no prompt can reach any more.

        Rendering takes items newest first until ``total_chars`` is used, each older item
        taking ``min(output, older_chars)``. Once the items strictly between the oldest
        and the newest take ``total_chars`` on their own, the oldest is never shown again
        (later items only add to what is in front of it): it is dropped here, and counted
        in ``released`` and ``_chars_before[0]`` for the truncation marker.
        """
        total = self.budget.total_chars
        while len(self.items) > 2 and self._older_chars - self._used[0] - self._used[-1] >= total:
            self._older_chars -= self._used[0]
            self._cut_count -= self._cut[0]
            for kept in (self.items, self._older, self._used, self._cut):
                del kept[0]
            del self._chars_before[0]
            self.released += 1

    def render(self) -> RenderedHistory:
        """The history text for the next step's prompt.

        The newest item takes up to ``recent_chars``; then older items, newest first, each
        its text rendered by :meth:`add` while at least ``older_chars`` of ``total_chars``
        is left; the first item with less room left is cut to it, and everything older is
        dropped whole and counted from the running totals, never read.
        """
        budget = self.budget
        items = self.items
        if not items:
            return RenderedHistory(text="")
        total, older = budget.total_chars, budget.older_chars
        newest = items[-1]
        parts: list[str] = []
        kept: list[HistoryItem] = []
        room = min(budget.recent_chars, total)
        newest_dropped = room <= 0
        chars_dropped = used = 0
        if not newest_dropped:
            text, used, chars_dropped = self._newest(room)
            parts.append(text)
            kept.append(newest)
        end = len(items) - 1
        left, room = self._whole_from(total - used)
        if left < end:  # items[left:end] are shown whole, as add() rendered them
            parts.extend(reversed(self._older[left:end]))
            kept.extend(reversed(items[left:end]))
            shown = self._chars_before[end] - self._chars_before[left]
            chars_dropped += shown - (total - used - room)
        while left and older > 0 and room > 0:  # less than older_chars left: cut to it
            left -= 1
            text, took, cut = items[left].render(room)
            parts.append(text)
            kept.append(items[left])
            room -= took
            chars_dropped += cut
        items_dropped = self.released + left + newest_dropped
        dropped_whole = self._chars_before[left]
        if newest_dropped:
            dropped_whole += len(newest.output)
        if items_dropped:
            parts.append(
                f"[CONTEXT_TRUNCATED: {items_dropped} older step output(s) dropped, "
                f"{dropped_whole} chars]"
            )
        chars_dropped += dropped_whole
        return RenderedHistory(
            text="\n\n".join(parts),
            items=tuple(kept),
            items_dropped=items_dropped,
            chars_dropped=chars_dropped,
            truncation=(
                {"items_dropped": items_dropped, "chars_dropped": chars_dropped}
                if items_dropped or chars_dropped
                else {}
            ),
        )

    def _newest(self, room: int) -> tuple[str, int, int]:
        """The newest item within ``room``: (text, chars used, chars cut)."""
        newest = self.items[-1]
        if len(newest.output) <= room and not self._cut[-1]:
            return self._older[-1], len(newest.output), 0
        return newest.render(room)  # cut within its room, or cut as an older item only

    def _whole_from(self, room: int) -> tuple[int, int]:
        """Where the older items shown whole begin, and the room they leave.

        Walking newest first, an item is shown whole while ``older_chars`` of the ``room``
        is left; when even the oldest finds it left, all are, and nothing is walked.
        """
        older = self.budget.older_chars
        left = len(self.items) - 1
        whole = self._older_chars - self._used[-1]
        if left and older > 0 and room - whole + self._used[0] >= older:
            return 0, room - whole
        while left and older > 0 and room >= older:
            left -= 1
            room -= self._used[left]
        return left, room


SECTIONS = (
    ("Inputs", "inputs"),
    ("Outputs", "outputs"),
    ("Emphasizes", "emphasizes"),
    ("Constraints", "constraints"),
)


def handoff_instructions(fields: tuple[HandoffField, ...]) -> str:
    """Tell the model which handoff fields to declare, the values, and what each one does."""
    if not fields:
        return (
            "## Handoff\nYou may end your reply with a fenced block headed handoff holding "
            "YAML fields for the next step; routing of this step does not read it."
        )
    lines = [
        "## Handoff",
        "Routing reads your decision from a fenced block at the very end of your reply,",
        "opened with ```handoff and closed with ```, holding these YAML fields:",
    ]
    lines.extend(f"- {item.name}: {item.guide}" for item in fields)
    example = "\n".join(f"{item.name}: {item.values[0]}" for item in fields)
    lines.append(f"Example:\n```handoff\n{example}\n```")
    return "\n".join(lines)


def system_prompt(flow: FlowSpec, step: StepSpec, *, persona: str | None) -> str:
    """The system part: persona, step header, role, teaching notes, handoff fields."""
    index = flow.index_of(step.id) + 1
    system: list[str] = []
    if persona:
        system.append(persona.strip())
    system.append(f"# {flow.title}")
    system.append(
        f"## Step {index} of {len(flow.steps)}: {step.id}\n"
        f"Flow: {flow.key}\nAgent: {', '.join(step.agents)}\nRole: {step.role}"
    )
    for heading, attr in SECTIONS:
        notes: tuple[str, ...] = getattr(step.teaching_notes, attr)
        system.append(f"## {heading}\n" + "\n".join(f"- {note}" for note in notes))
    system.append(handoff_instructions(step_handoff(flow, step)))
    return "\n\n".join(system)


def request_text(params: dict[str, Any]) -> str:
    """The run's request as it appears in every user prompt."""
    body = json.dumps(params, indent=2, sort_keys=True, ensure_ascii=False) if params else "{}"
    return f"## Request\n{body}"


def user_prompt(request: str, history_text: str) -> str:
    """The user part: the request (from :func:`request_text`) and the history."""
    return f"{request}\n\n## History (newest first)\n{history_text or '(no earlier steps)'}"


MAX_CACHED_SYSTEM_PROMPTS = 512
"""System prompts kept per flow registry (the oldest go first): a loop finds its steps'
prompts, and a flow of thousands of distinct steps does not keep all of them."""


class PromptParts:
    """The prompt parts of one run: cached system prompts and the request."""

    def __init__(
        self,
        flows: FlowRegistry,
        params: dict[str, Any],
        cache: dict[tuple[str, str], str],
    ) -> None:
        self._flows = flows
        self._cache = cache
        self.request = request_text(params)

    def system(self, flow: FlowSpec, step: StepSpec) -> str:
        """A step's system prompt (fixed within a flow)."""
        key = (flow.key, step.id)
        cached = self._cache.get(key)
        if cached is None:
            text = system_prompt(flow, step, persona=self._flows.persona(step.primary_agent))
            if len(self._cache) >= MAX_CACHED_SYSTEM_PROMPTS:
                del self._cache[next(iter(self._cache))]
            cached = self._cache[key] = text
        return cached

    def user(self, rendered: RenderedHistory, external: str | None = None, facts: str = "") -> str:
        """The user prompt for ``rendered`` history (and the run's current ``facts``)."""
        text = user_prompt(self.request, rendered.text)
        if facts:  # only once a reply declared one: earlier prompts stay as they were
            text = f"{text}\n\n## Facts\n{facts}"
        if external is not None:  # a blocked step re-invoked with what it waited for
            text = f"{text}\n\n## External input\n{external}"
        return text


class ContextMaker:
    """Makes the StepContext of every step execution of one run."""

    def __init__(
        self, *, prompts: PromptParts, layout: RunLayout, repo_root: Path, spec: dict[str, Any]
    ) -> None:
        self.prompts = prompts
        self.layout = layout
        self.repo_root = repo_root
        self.spec = spec
        """The run's ``spec.json`` document: one dict, handed to every step."""
        self._run_bases: dict[str, Path] = {}
        self._fields: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
        """Each step's handoff fields, made once per run (they come from its spec)."""

    def make(
        self, flow: FlowSpec, step: StepSpec, iteration: int, rendered: RenderedHistory, user: str
    ) -> StepContext:
        """The context of an execution of ``step``, with its system and ``user`` prompt."""
        system = self.prompts.system(flow, step)
        run_base = self._run_bases.get(flow.key)
        if run_base is None:
            run_base = self._run_bases[flow.key] = self.layout.flow_base(flow.key)
        fields = self._fields.get((flow.key, step.id))
        if fields is None:
            fields = self._fields[(flow.key, step.id)] = handoff_fields(flow, step)
        return StepContext(
            repo_root=self.repo_root,
            run_id=self.layout.run_id,
            flow_key=flow.key,
            step_id=step.id,
            step_index=flow.index_of(step.id) + 1,
            total_steps=len(flow.steps),
            spec=self.spec,
            flow_title=flow.title,
            step_role=step.role,
            step_agents=step.agents,
            history=rendered.items,
            run_base=run_base,
            iteration=iteration,
            handoff_fields=fields,
            routing_kind=step.routing.kind,
            prompt=Prompt(system, user),
            tools=step.tools or (),
            max_tool_calls=step.max_tool_calls or flow.max_tool_calls,
            timeout_s=step.timeout_s,
        )


class Call(Record):
    """The engine's answer for one step execution, after its retries."""

    outcome: StepOutcome
    error: str | None
    """Why the call failed outside the step contract (an engine that raised, a
    ``retry-after`` too long to wait for)."""
    attempt: int
    max_attempts: int
    llm_ms: int = 0
    """Time spent inside the engine's calls, all attempts together."""
    waited_ms: int = 0
    """Time spent waiting between attempts."""
    earlier_tokens: TokenUsage = TokenUsage()
    """Tokens of the attempts before the last (a ``retryable`` answer may report some)."""
    earlier_cost_usd: float = 0.0
    """The known cost of the attempts before the last."""

    @property
    def tokens(self) -> TokenUsage:
        """Tokens of every attempt of the execution (its budgets and totals count them all)."""
        last, earlier = self.outcome.tokens, self.earlier_tokens
        if not earlier.total:
            return last
        return TokenUsage(last.prompt + earlier.prompt, last.completion + earlier.completion)

    @property
    def cost_usd(self) -> float | None:
        """Cost of every attempt; None when the last one's is unknown."""
        cost = self.outcome.cost_usd
        return cost if cost is None or not self.earlier_cost_usd else cost + self.earlier_cost_usd


class Execution(Record):
    """A step execution whose engine call is over: everything its receipt says but the verdict."""

    run_id: str
    flow: FlowSpec
    step: StepSpec
    engine: StepEngine
    call: Call
    iteration: int
    rendered: RenderedHistory
    """The history its prompt carried (what was cut from it)."""
    timing: Timing
    artifacts: list[Artifact]
    """What it wrote under ``<flow>/artifacts/``."""


class Verdict(Record):
    """How an execution ends: the route it took, or why it failed."""

    error: str | None = None
    routing: ReceiptRouting | None = None
    over_budget: bool = False
    """It broke a budget: a fatal failure whatever the engine answered (docs/budgets.md)."""


def build_receipt(made: Execution, verdict: Verdict) -> Receipt:
    """The receipt of an execution, from its StepOutput's parts and its verdict.

    See docs/contract/receipt.md.
    """
    call, step, engine, timing = made.call, made.step, made.engine, made.timing
    outcome = call.outcome
    agent = step.primary_agent
    return Receipt(
        engine=engine.engine_id,
        # The engine's mode; a reader refuses one docs/contract/receipt.md does not list.
        mode=cast(Mode, outcome.mode),
        provider=outcome.provider,
        model=outcome.model,
        step_id=step.id,
        flow_key=made.flow.key,
        run_id=made.run_id,
        agent_key=agent,
        started_at=timing.started_at,
        completed_at=timing.completed_at,
        duration_ms=timing.duration_ms,
        status="succeeded" if verdict.error is None else "failed",
        tokens=tokens_of(outcome.tokens),
        transcript_path=f"llm/{step.id}-{agent}-{engine.engine_short}.jsonl",
        iteration=made.iteration,
        result_code="fatal" if verdict.over_budget else outcome.result_code,
        attempt=call.attempt,
        max_attempts=call.max_attempts,
        error=UNSET if verdict.error is None else verdict.error,
        routing=UNSET if verdict.routing is None else verdict.routing,
        timing=timing,
        handoff=UNSET if outcome.handoff is None else outcome.handoff,
        context_truncation=(
            ContextTruncation(**made.rendered.truncation) if made.rendered.truncation else UNSET
        ),
        # A provider was called: what it cost, if known.
        cost=(
            UNSET
            if outcome.provider == "none"
            else cost_of(outcome, outcome.tokens, outcome.cost_usd)
        ),
        artifacts=made.artifacts or UNSET,
        cassette=UNSET if outcome.cassette is None else outcome.cassette,
        request_sha256=UNSET if outcome.request_sha256 is None else outcome.request_sha256,
        tools_allowed=UNSET if step.tools is None else list(step.tools),
    )


class ReceiptSoFar(Mapping[str, Any]):
    """The receipt of an execution as routing reads it: as if it succeeded, made on first read."""

    def __init__(self, made: Execution) -> None:
        self._made = made
        self._fields: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._fields is None:
            self._fields = msgspec.to_builtins(build_receipt(self._made, Verdict()))
        return self._fields

    def __getitem__(self, name: str) -> Any:
        return self._read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def tokens_of(usage: TokenUsage) -> Tokens:
    """A receipt's ``tokens``."""
    return Tokens(prompt=usage.prompt, completion=usage.completion, total=usage.total)


def cost_of(outcome: StepOutcome, tokens: TokenUsage, cost_usd: float | None) -> Cost:
    """A receipt's ``cost``: the call's model and provider, its tokens and USD.

    See docs/contract/steps.md#timing-and-cost.
    """
    return Cost(
        model=outcome.model,
        provider=outcome.provider,
        tokens=CostTokens(input=tokens.prompt, output=tokens.completion, total=tokens.total),
        estimated_cost_usd=cost_usd,
    )


def step_timing(
    span: tuple[datetime, datetime], call: Call, started_at: str | None = None
) -> Timing:
    """The ``timing`` of an execution; ``started_at``: its start, formatted.

    ``ioMs`` is the rest of its time (files, events, prompt), retry waits left out.

    See docs/contract/steps.md#timing-and-cost.
    """
    started, completed = span
    duration = ms_between(started, completed)
    tools = min(call.outcome.tool_call_ms, call.llm_ms)
    return Timing(
        started_at=started_at or format_ts(started),
        completed_at=format_ts(completed),
        duration_ms=duration,
        llm_wait_ms=call.llm_ms - tools,
        tool_call_ms=tools,
        io_ms=max(0, duration - call.llm_ms - call.waited_ms),
    )
