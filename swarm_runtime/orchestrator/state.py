"""The state of a run in progress: everything a checkpoint must save to resume it.

Its ``meta.json`` and its ``run_completed`` are made from it here, for flow runs and plan
cycles alike.

Microloop counters: how often each loop of a run has gone round (docs/flows.md#microloop-exits,
docs/flows.md#decisions).

One bookkeeping, used by the orchestrator while it routes and by ``assert_routing`` when
it recomputes the decisions of a finished run from its event log, so the two agree.

The flow stack (docs/flows.md#detours-and-utility-flows): detours and utility flows entered, and
returned from.

A run starts in a flow of its plan; a detour or a utility flow taken after a step pushes a
:class:`Frame` (the paused flow, the step that left, where to come back to) and the run
goes on in the injected flow. When the injected flow ends, its frame is popped and the run
goes on at the frame's return address; a ``halt`` (or a golden path that ended the paused
flow) ends the paused flow too. The stack is part of the checkpoint, so a run killed
inside an injected flow resumes inside it.

Facts (docs/flows.md#facts): requirements, solutions, traces, assumptions and decisions.

A reply declares a fact in its handoff (``facts: [{id: REQ-001, text: …}]``) or as a
marker line (``[REQ-001] text``); ids are ``REQ|SOL|TRC|ASM|DEC`` + ``-`` + digits. Each is
appended to ``facts.jsonl`` (``{id, kind, text, flow, step, iteration, seq}``), attributed to
the step whose reply held it; a later fact with the same id supersedes. The checkpoint
counts the journal's lines, so a resume cuts what a killed step had appended and reads the
rest back. Later prompts carry the current facts (:meth:`Facts.prompt_section`), and
conditions see them (:meth:`Facts.cel`).

Neither costs a step more as the facts pile up: the prompt's section is made from its
newest facts back until the budget is spent, and conditions see a list kept in CEL's
types that each fact is converted into once, when a condition first reads the facts.

Step, flow and run budgets (docs/budgets.md), checked after every engine call of a run.

A step's budget bounds one execution (all its attempts); a flow's bounds everything the
flow spent in the run so far (every execution, loops and retries included, its time being
the time its steps took); the run's bounds the run's totals (its time: the time all its
steps took). The check reads the run's totals, so it is the same in every mode, and the
same after a resume (the totals come back from the checkpoint). Exceeding one fails the
step with an error that starts with ``budget_exceeded`` and names the budget, the measure,
the value and the limit.

The largest share of any budget used is kept per flow (and for the run), for the final
table of ``swarm run`` and the pytest summary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.receipt import Timing, Tokens
from swarm_runtime.documents.route_events import (
    AssumptionRecorded,
    DecisionRecorded,
    FactsUpdated,
)
from swarm_runtime.documents.run import FlowTotals, RunStatus, RunSummary
from swarm_runtime.documents.run_events import Ended, RunCompleted
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.flow.spec import Budget, FlowSpec, StepSpec
from swarm_runtime.orchestrator.context import Call, History, HistoryBudget
from swarm_runtime.record import Record, field

MAX_LOGGED_CHARS = 2_000
"""The most of one text from outside (a rationale, a fact) that an event keeps."""


def cut(text: str, limit: int = MAX_LOGGED_CHARS) -> str:
    """``text`` with at most ``limit`` of its characters, and a marker when more were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[TRUNCATED: {len(text) - limit} of {len(text)} chars cut]"


def loop_key(step: StepSpec) -> str:
    """The ``loop_state`` key of a microloop step: ``<step>:<loop_target>``."""
    return f"{step.id}:{step.routing.loop_target}"


class LoopCounters:
    """Executions of each open microloop of a run, keyed by flow and loop."""

    __slots__ = ("_counts",)

    def __init__(self, counts: dict[tuple[str, str], int] | None = None) -> None:
        self._counts: dict[tuple[str, str], int] = dict(counts or {})

    def executions(self, flow_key: str, step: StepSpec) -> int:
        """The number of the execution about to be routed in its loop (1 for the first)."""
        return self._counts.get((flow_key, loop_key(step)), 0) + 1

    def after(
        self, flow_key: str, step: StepSpec, decision: str, *, skipped: bool
    ) -> dict[str, int]:
        """Count a routed execution; return the ``loop_state`` of its ``route_decision``.

        A loop that goes round keeps its count; one that exits starts afresh next time.
        """
        if step.routing.kind != "microloop" or skipped:
            return {}
        key = loop_key(step)
        executions = self._counts.get((flow_key, key), 0) + 1
        if decision == "loop":
            self._counts[(flow_key, key)] = executions
        else:
            self._counts.pop((flow_key, key), None)
        return {key: executions}

    def of_flow(self, flow_key: str) -> dict[str, int]:
        """A flow's open loops as ``{"<step>:<target>": executions}`` (what conditions see)."""
        return {key: count for (flow, key), count in self._counts.items() if flow == flow_key}

    def as_dict(self) -> dict[str, int]:
        """The open loops as ``{"<flow>/<step>:<target>": executions}`` (for checkpoints)."""
        return {f"{flow}/{key}": count for (flow, key), count in sorted(self._counts.items())}


DEFAULT_MAX_DEPTH = 4
"""The largest ``current_depth`` (flows on the stack, the run's own included)."""
MAX_FRAMES = 15
"""The most frames any stack holds: ``navigator.max_depth`` is at most 16 flows."""


class Frame(Record):
    """A flow paused by an injection, and how the run comes back to it."""

    paused_flow: str
    paused_step: str
    injected_flow: str
    resume_to: str | None
    """The paused flow's step to go on with; None: the paused flow ends."""
    only_step: str | None = None
    """A node injection's one step (``step: FLOW/STEP``); None: the whole flow runs."""

    def as_document(self) -> dict[str, Any]:
        """The frame in a checkpoint's ``stack``."""
        return {
            "paused_flow": self.paused_flow,
            "paused_step": self.paused_step,
            "injected_flow": self.injected_flow,
            "resume_to": self.resume_to,
            "only_step": self.only_step,
        }

    @classmethod
    def parse(cls, doc: Any) -> Frame:
        """A frame from a checkpoint; ValueError naming what is wrong."""
        if not isinstance(doc, dict):
            raise ValueError("stack frames must be objects")
        texts: dict[str, str | None] = {}
        for name in ("paused_flow", "paused_step", "injected_flow", "resume_to", "only_step"):
            value = doc[name]
            optional = name in ("resume_to", "only_step")
            if not (isinstance(value, str) or (optional and value is None)):
                raise ValueError(f"stack.{name} is {value!r}; it must be text")
            texts[name] = value
        paused_flow, paused_step, injected = (
            str(texts["paused_flow"]),
            str(texts["paused_step"]),
            str(texts["injected_flow"]),
        )
        return cls(paused_flow, paused_step, injected, texts["resume_to"], texts["only_step"])


class Next(Record):
    """Where the run goes after a step: a flow and its step (None: that flow has ended)."""

    flow: str
    step: str | None


FACT_ID_RE = re.compile(r"(REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9}")
MARKER_RE = re.compile(r"^\[((?:REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9})\][ \t]+(\S[^\n]*)$", re.MULTILINE)
MAX_FACT_CHARS = 2_000
"""A fact's text is cut to this many characters (a marker says how many more it had)."""


def declared(text: str, handoff: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The facts a reply declares, in order: its marker lines, then its handoff's ``facts``."""
    found = [(m.group(1), m.group(2).strip()) for m in MARKER_RE.finditer(text)]
    listed = (handoff or {}).get("facts")
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, Mapping):
            continue
        fact_id, fact_text = item.get("id"), item.get("text")
        good_id = isinstance(fact_id, str) and FACT_ID_RE.fullmatch(fact_id)
        if good_id and isinstance(fact_text, str) and fact_text.strip():
            found.append((str(fact_id), fact_text.strip()))
    return [(fact_id, cut(fact_text, MAX_FACT_CHARS)) for fact_id, fact_text in found]


class Facts:
    """The facts of a run: the journal's entries, and the current one of each id."""

    __slots__ = ("_cel", "_cel_at", "_changed", "current", "entries")

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        """Every ``facts.jsonl`` line so far, in order."""
        self.current: dict[str, dict[str, Any]] = {}
        """The latest entry of each id, in the order ids first appeared."""
        self._cel: Any = None
        """:attr:`current` in CEL's types, brought up to date when a condition reads it."""
        self._cel_at: dict[str, int] = {}
        """Where each id is in :attr:`_cel`."""
        self._changed: list[str] = []
        """Ids kept since :attr:`_cel` was last brought up to date."""

    def restore(self, entries: list[dict[str, Any]]) -> None:
        """Take the journal's first entries back (a resume)."""
        for entry in entries:
            self._keep(entry)

    def _keep(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        self.current[str(entry["id"])] = entry
        self._changed.append(str(entry["id"]))

    def add(
        self, found: list[tuple[str, str]], flow: str, step: str, iteration: int
    ) -> tuple[list[dict[str, Any]], list[Payload]]:
        """Record a step's facts: the new journal entries, and the events that say so."""
        added: list[str] = []
        updated: list[str] = []
        new: list[dict[str, Any]] = []
        events: list[Payload] = []
        for fact_id, text in found:
            (updated if fact_id in self.current else added).append(fact_id)
            entry = {
                "id": fact_id,
                "kind": fact_id.split("-", 1)[0],
                "text": text,
                "flow": flow,
                "step": step,
                "iteration": iteration,
                "seq": len(self.entries) + 1,
            }
            self._keep(entry)
            new.append(entry)
            if entry["kind"] == "ASM":
                events.append(AssumptionRecorded(id=fact_id, text=text))
            elif entry["kind"] == "DEC":
                events.append(DecisionRecorded(id=fact_id, text=text))
        if not new:
            return [], []
        return new, [FactsUpdated.counted(added, updated, len(self.current)), *events]

    def values(
        self, found: Sequence[tuple[str, str]] = (), flow: str = "", step: str = ""
    ) -> list[dict[str, Any]]:
        """The current facts as conditions see them, with a step's ``found`` ones on top.

        A step's routing sees what its own reply declared.
        """
        current = dict(self.current)
        for fact_id, text in found:
            current[fact_id] = _seen(fact_id, text, flow, step)
        return list(current.values())

    def seen_by_routing(
        self, reply: str, handoff: Mapping[str, Any] | None, flow: str, step: str
    ) -> Callable[[], Any]:
        """What ``facts`` a condition after a step reads, made only when one reads them.

        The run's facts, with those the step's own ``reply`` and ``handoff`` declared on top.
        """
        return lambda: self.cel(declared(reply, handoff), flow, step)

    def cel(self, found: Sequence[tuple[str, str]] = (), flow: str = "", step: str = "") -> Any:
        """:meth:`values` in CEL's types, converting only the facts kept since last asked.

        With nothing ``found``, the list kept is given as it is; else a copy of it (of its
        references: nothing is converted again) with the step's own facts on top.
        """
        from swarm_runtime.flow.conditions import Converted, to_cel

        if self._cel is None:
            self._cel = to_cel([])
        for fact_id in dict.fromkeys(self._changed):
            _put(self._cel, self._cel_at, fact_id, to_cel(self.current[fact_id]))
        self._changed.clear()
        if not found:
            return Converted(self._cel)
        view = to_cel([])
        view.extend(self._cel)
        added: dict[str, int] = {}  # the step's new ids: where they are in the view
        for fact_id, text in found:
            value = to_cel(_seen(fact_id, text, flow, step))
            where = self._cel_at.get(fact_id, added.get(fact_id))
            if where is None:
                added[fact_id] = len(view)
                view.append(value)
            else:
                view[where] = value
        return Converted(view)

    def prompt_section(self, max_chars: int) -> str:
        """The current facts for a prompt, at most ``max_chars`` (the newest kept whole)."""
        if not self.current:
            return ""
        kept: list[str] = []
        used = 0
        for entry in reversed(self.current.values()):  # the newest back: never all of them
            line = f"[{entry['id']}] {entry['text']}"
            if used + len(line) + 1 > max_chars:
                break
            kept.append(line)
            used += len(line) + 1
        kept.reverse()
        dropped = len(self.current) - len(kept)
        head = f"[{dropped} older fact(s) not shown]\n" if dropped else ""
        return head + "\n".join(kept)


def _seen(fact_id: str, text: str, flow: str, step: str) -> dict[str, Any]:
    """A fact of the step being routed, as its conditions see it (not yet in the journal)."""
    kind = fact_id.split("-", 1)[0]
    return {"id": fact_id, "kind": kind, "text": text, "flow": flow, "step": step}


def _put(facts: list[Any], at: dict[str, int], fact_id: str, value: Any) -> None:
    """Put a fact in a list of facts: where its id is (it supersedes), else at the end."""
    where = at.get(fact_id)
    if where is None:
        at[fact_id] = len(facts)
        facts.append(value)
    else:
        facts[where] = value


class Totals:
    """Counters of a run, or of one flow in it."""

    __slots__ = (
        "completion_tokens",
        "cost_usd",
        "duration_ms",
        "executed",
        "loops",
        "prompt_tokens",
        "steps_completed",
        "steps_without_cost",
    )

    def __init__(self) -> None:
        self.steps_completed = self.executed = self.loops = 0
        self.prompt_tokens = self.completion_tokens = self.duration_ms = 0
        self.cost_usd = 0.0
        self.steps_without_cost = 0
        """Calls whose cost is unknown (a model missing from the price table)."""

    def add_call(self, tokens: TokenUsage, cost_usd: float | None) -> None:
        """Count the tokens and cost of one step execution."""
        self.prompt_tokens += tokens.prompt
        self.completion_tokens += tokens.completion
        if cost_usd is None:
            self.steps_without_cost += 1
        else:
            self.cost_usd += cost_usd

    @property
    def cost(self) -> float | None:
        """The total cost; None when any call's cost is unknown (never a guess)."""
        return None if self.steps_without_cost else round(self.cost_usd, 6)

    def tokens(self) -> Tokens:
        """The ``tokens`` object of ``meta.json``."""
        prompt, completion = self.prompt_tokens, self.completion_tokens
        return Tokens(prompt=prompt, completion=completion, total=prompt + completion)

    def as_flow_document(self) -> FlowTotals:
        """One flow's entry in ``meta.json``'s ``flow_totals``."""
        return FlowTotals(
            steps_executed=self.executed,
            loop_iterations=self.loops,
            tokens=self.prompt_tokens + self.completion_tokens,
            cost_usd=self.cost,
            steps_without_cost=self.steps_without_cost,
            duration_ms=self.duration_ms,
        )


class RunState:
    """Where a run stands: counters, history, facts, loops and the next event number."""

    __slots__ = (
        "error",
        "executions",
        "facts",
        "flow_totals",
        "history",
        "journals",
        "loops",
        "seq",
        "stack",
        "status",
        "totals",
    )

    def __init__(self, budget: HistoryBudget) -> None:
        self.status: RunStatus = "pending"
        self.error: str | None = None
        self.seq = 0
        """The last event number written; the next event gets ``seq + 1``."""
        self.executions: dict[tuple[str, str], int] = {}
        """How often each (flow, step) has started in this run."""
        self.loops = LoopCounters()
        self.totals = Totals()
        self.flow_totals: dict[str, Totals] = {}
        self.history = History(budget)
        self.facts = Facts()
        self.journals: dict[str, int] = {}
        """Lines written to each journal (``facts``, ``graph_proposals``), for the checkpoint."""
        self.stack: list[Frame] = []
        """The flows paused by detours and utility flows, bottom first
        (docs/flows.md#detours-and-utility-flows)."""

    def flow(self, flow_key: str) -> Totals:
        """The totals of one flow, created on first use."""
        totals = self.flow_totals.get(flow_key)
        if totals is None:
            totals = self.flow_totals[flow_key] = Totals()
        return totals

    def next_iteration(self, flow_key: str, step_id: str) -> int:
        """Count a new execution of a step; return its 0-based iteration."""
        iteration = self.executions.get((flow_key, step_id), 0)
        self.executions[(flow_key, step_id)] = iteration + 1
        return iteration

    def summary(
        self,
        run_id: str,
        flows: Sequence[str],
        choice: tuple[str, str, str],
        created_at: str,
        completed_at: str | None,
    ) -> RunSummary:
        """``meta.json`` as the run stands; ``choice`` is its (backend, mode, engine)."""
        totals = self.totals
        backend, mode, engine = choice
        return RunSummary(
            run_id=run_id,
            status=self.status,
            flows=list(flows),
            backend=backend,
            mode=mode,
            engine=engine,
            created_at=created_at,
            completed_at=completed_at,
            error=self.error,
            steps_completed=totals.steps_completed,
            total_steps_executed=totals.executed,
            loop_iterations=totals.loops,
            tokens=totals.tokens(),
            cost_usd=totals.cost,
            steps_without_cost=totals.steps_without_cost,
            flow_totals={key: ft.as_flow_document() for key, ft in self.flow_totals.items()},
        )

    def completed(self, status: Ended) -> RunCompleted:
        """The ``run_completed`` of an attempt that ends with ``status``."""
        return RunCompleted(
            status=status,
            error=self.error,
            steps_completed=self.totals.steps_completed,
            total_steps_executed=self.totals.executed,
        )


BUDGET_EXCEEDED = "budget_exceeded"
"""How the error of a step that broke a budget starts."""
RUN_KEY = ""
"""The key of the run budget's share in :attr:`BudgetCheck.used`."""


class Spent:
    """Tokens, cost in USD and time in ms: what one execution, flow or run has spent."""

    __slots__ = ("cost_usd", "duration_ms", "tokens")

    def __init__(self, tokens: int, cost_usd: float | None, duration_ms: int) -> None:
        self.tokens = tokens
        self.cost_usd = cost_usd
        """None when unknown (a model missing from the price table): never checked then."""
        self.duration_ms = duration_ms

    @classmethod
    def of(cls, totals: Totals, extra_ms: int) -> Spent:
        """What ``totals`` count, with ``extra_ms`` (the step not yet added) on their time."""
        return cls(
            totals.prompt_tokens + totals.completion_tokens,
            totals.cost_usd,
            totals.duration_ms + extra_ms,
        )

    def values(self) -> tuple[tuple[str, float | None], ...]:
        return (
            ("tokens", self.tokens),
            ("cost_usd", self.cost_usd),
            ("duration_ms", self.duration_ms),
        )


def exceeded(budget: Budget, spent: Spent, name: str) -> str | None:
    """Why ``spent`` breaks ``budget`` (called ``name``: ``flow budget of 'build'``), or None."""
    for measure, value in spent.values():
        limit = getattr(budget, measure)
        if limit is not None and value is not None and value > limit:
            return f"{BUDGET_EXCEEDED}: {name}: {measure} {_show(value)} > limit {_show(limit)}"
    return None


def largest_share(budget: Budget, spent: Spent) -> tuple[float, str] | None:
    """The largest fraction of ``budget`` that ``spent`` uses, and its measure; None if none."""
    best: tuple[float, str] | None = None
    for measure, value in spent.values():
        limit = getattr(budget, measure)
        if limit is None or value is None:
            continue
        share = value / limit if limit > 0 else (0.0 if value == 0 else float("inf"))
        if best is None or share > best[0]:
            best = (share, measure)
    return best


def share_percent(share: float) -> str:
    """``share`` as a whole percentage; only a share of exactly 1 reads ``100%``.

    A budget just past its limit (1728 tokens of 1727) reads ``101%``, not a
    rounded ``100%`` beside its budget_exceeded, and one just below it ``99%``.
    """
    text = f"{share:.0%}"
    if text == "100%" and share != 1.0:
        return "101%" if share > 1.0 else "99%"
    return text


def _show(value: float) -> str:
    return str(round(value, 6)) if isinstance(value, float) else str(value)


class BudgetCheck:
    """The budgets of one run: checked after each engine call, their largest shares kept."""

    __slots__ = ("run", "used")

    def __init__(self, run: Budget | None = None) -> None:
        self.run = run
        self.used: dict[str, tuple[float, str, str]] = {}
        """Per flow key (:data:`RUN_KEY` for the run budget): the largest share of a budget
        used so far, its measure and whose budget it is (``flow build``)."""

    def over(
        self, state: RunState, flow: FlowSpec, step: StepSpec, call: Call, timing: Timing
    ) -> str | None:
        """The step's, flow's or run's budget an execution broke (docs/budgets.md), or None."""
        if flow.budget is None and step.budget is None and self.run is None:
            return None
        return self.check(
            state, flow, step, Spent(call.tokens.total, call.cost_usd, timing.duration_ms)
        )

    def check(
        self, state: RunState, flow: FlowSpec, step: StepSpec, execution: Spent
    ) -> str | None:
        """After a call whose spending the totals already count: the budget it broke, or None.

        ``execution`` is what the step execution spent (its time so far included); the
        flow's and the run's time are their steps' time with this execution's added. When
        more than one is broken, the narrowest is named (step, then flow, then run).
        """
        error = None
        if step.budget is not None:
            error = self._one(step.budget, execution, flow.key, "step", f"{flow.key}/{step.id}")
        if flow.budget is not None:
            spent = Spent.of(state.flow(flow.key), execution.duration_ms)
            found = self._one(flow.budget, spent, flow.key, "flow", flow.key)
            error = error or found
        if self.run is not None:
            spent = Spent.of(state.totals, execution.duration_ms)
            for totals in state.flow_totals.values():
                spent.duration_ms += totals.duration_ms
            found = self._one(self.run, spent, RUN_KEY, "run", "")
            error = error or found
        return error

    def _one(self, budget: Budget, spent: Spent, key: str, kind: str, whose: str) -> str | None:
        """Check one budget (``kind`` step, flow or run, of ``whose``); keep its share."""
        share = largest_share(budget, spent)
        if share is None:
            return None
        best = self.used.get(key)
        if best is None or share[0] >= best[0]:
            self.used[key] = (share[0], share[1], f"{kind} {whose}" if whose else "the run")
        if share[0] < 1.0:
            return None  # every measure below its limit (exceeded() decides at 100% and up)
        name = "run budget" if kind == "run" else f"{kind} budget of '{whose}'"
        return exceeded(budget, spent, name)

    def shares(self, state: RunState, flows: Callable[[str], FlowSpec]) -> dict[str, str]:
        """Per flow key (``""``: the run), e.g. ``83% (tokens of flow build)``.

        The flows' and the run's shares are taken again from the totals as they end (a
        resumed run's included); ``flows`` gives the spec of a flow key.
        """
        for key, totals in state.flow_totals.items():
            budget = flows(key).budget
            if budget is not None:
                self._one(budget, Spent.of(totals, 0), key, "flow", key)
        if self.run is not None:
            spent = Spent.of(state.totals, 0)
            spent.duration_ms = sum(t.duration_ms for t in state.flow_totals.values())
            self._one(self.run, spent, RUN_KEY, "run", "")
        return {
            key: f"{share_percent(share)} ({measure} of {whose})"
            for key, (share, measure, whose) in self.used.items()
        }


class RunOutcome(Record):
    """How a run ended."""

    run_id: str
    status: str
    """succeeded | failed | stopped | paused."""
    error: str | None
    path: Path
    summary: dict[str, Any]
    interrupted: bool = False
    """The run was stopped from outside (Ctrl-C, SIGTERM, ``interrupt()``)."""
    aborted: bool = False
    """The stop cut a step short (a second Ctrl-C, SIGTERM); else it came at a boundary."""
    paused: bool = False
    """The run paused (a request, or a blocked step); ``swarm resume`` continues it."""
    blocked: str | None = None
    """Why the step the run paused at is blocked, when that is why it paused."""
    budget_use: dict[str, str] = field(default_factory=dict)
    """Per flow key (``""``: the run budget), the largest share of a declared budget used
    in this attempt, e.g. ``83% (tokens of flow build)``; empty when none is declared."""
