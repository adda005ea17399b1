"""Fault plans (docs/faults.md): which attempts of which steps fail, and how.

A plan maps a step id (or ``flow/step``) to a list of entries, each a fault — a mapping
``{kind: http_429, retry_after_ms: 0}`` or just the kind, ``http_500`` — or ``null`` for
a clean attempt. The entries of a step are used in order, one per attempt, across every
attempt of every execution of that step in the run: ``[http_429, null, http_500]`` makes
the first attempt of the first execution a 429, its retry clean, and the first attempt
of the next execution a 500. Attempts past the list are clean. Navigator calls
(docs/flows.md#navigator) use no entry.

A plan comes from a stub scenario's ``faults:`` key, the pytest marker ``swarm_faults``
or ``swarm run --faults FILE``; anything unknown (a step, a kind, a field) is a usage
error that names the plan's source, the key and what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.errors import ScenarioError
from swarm_runtime.record import Record, field

FAULT_FIELDS: dict[str, tuple[str, ...]] = {
    "http_429": ("retry_after_ms",),
    "http_500": (),
    "http_529": (),
    "timeout": (),
    "connection_reset": (),
    "stream_cut": (),
    "overloaded_mid_stream": (),
    "malformed_handoff": (),
    "empty_reply": (),
    "cli_exit": ("code",),
    "tool_error": ("tool",),
    "tool_timeout": ("tool",),
}
"""Every fault kind, with the fields it takes besides ``kind``."""

RETRYABLE_KINDS = frozenset(
    {
        "http_429",
        "http_500",
        "http_529",
        "timeout",
        "connection_reset",
        "stream_cut",
        "overloaded_mid_stream",
    }
)
"""The kinds an engine answers ``retryable`` (docs/contract/steps.md#result-codes)."""

TOOL_KINDS = frozenset({"tool_error", "tool_timeout"})
"""The kinds that answer a tool call of the attempt (its ``tool``, else the first) without
running the tool (docs/tools.md#tools): served by every engine that runs a tool loop, and the
stub."""
HTTP_KINDS = frozenset(FAULT_FIELDS) - {"cli_exit"} - TOOL_KINDS
"""The kinds served through the SDK's HTTP transport (sdk, record and replay modes)."""

MAX_RETRY_AFTER_MS = 3_600_000
MAX_ENTRIES = 1000


class Fault(Record):
    """One injected fault: its kind and the fields that kind takes."""

    kind: str
    retry_after_ms: int | None = None
    """``http_429``: what its ``retry-after-ms`` header says (None: no header)."""
    code: int = 1
    """``cli_exit``: the exit status of the CLI."""
    tool: str | None = None
    """``tool_error``, ``tool_timeout``: the tool whose call is answered (None: the first)."""

    def as_entry(self) -> dict[str, Any]:
        """The fault as a plan entry (a mapping JSON can carry)."""
        entry: dict[str, Any] = {"kind": self.kind}
        if self.retry_after_ms is not None:
            entry["retry_after_ms"] = self.retry_after_ms
        if self.kind == "cli_exit":
            entry["code"] = self.code
        if self.tool is not None:
            entry["tool"] = self.tool
        return entry

    def describe(self) -> str:
        """The fault as a plan writes it: ``http_429 (retry_after_ms 0)``."""
        if self.kind == "http_429" and self.retry_after_ms is not None:
            return f"{self.kind} (retry_after_ms {self.retry_after_ms})"
        if self.kind == "cli_exit":
            return f"{self.kind} (code {self.code})"
        if self.tool is not None:
            return f"{self.kind} (tool {self.tool})"
        return self.kind


def _allowed() -> str:
    return ", ".join(
        f"{kind} {{{', '.join(fields)}}}" if fields else kind
        for kind, fields in FAULT_FIELDS.items()
    )


def _whole(value: Any, low: int, high: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ScenarioError(f"{where}: must be a whole number from {low} to {high}, got {value!r}")
    return value


def parse_fault(raw: Any, where: str) -> Fault | None:
    """One entry of a plan: a fault, or None for a clean attempt."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{where}: an entry is a fault kind, a mapping {{kind: ..., <fields>}} or null "
            f"(a clean attempt), got {raw!r}; kinds: {_allowed()}"
        )
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in FAULT_FIELDS:  # a list or mapping: no hash
        import difflib

        close = difflib.get_close_matches(str(kind), list(FAULT_FIELDS), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ScenarioError(f"{where}: unknown fault kind {kind!r}{hint}; kinds: {_allowed()}")
    fields = FAULT_FIELDS[kind]
    for key in raw:
        if key != "kind" and key not in fields:
            allowed = ", ".join(fields) or "no fields"
            raise ScenarioError(
                f"{where}: {kind} takes {allowed}, not '{key}' (kinds: {_allowed()})"
            )
    retry_after = raw.get("retry_after_ms")
    if retry_after is not None:
        retry_after = _whole(retry_after, 0, MAX_RETRY_AFTER_MS, f"{where}.retry_after_ms")
    code = _whole(raw.get("code", 1), 1, 255, f"{where}.code")
    tool = raw.get("tool")
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise ScenarioError(
            f"{where}.tool: must name a tool (as the step's tools: does), got {tool!r}"
        )
    return Fault(kind=str(kind), retry_after_ms=retry_after, code=code, tool=tool)


class FaultPlan(Record):
    """A parsed fault plan: per step (or flow/step), one entry per attempt, in order."""

    entries: dict[str, tuple[Fault | None, ...]] = field(default_factory=dict)
    source: str = "<faults>"
    """Where the plan was written: a file, ``@pytest.mark.swarm_faults``, a scenario."""
    raw: Any = None
    """The mapping as given (JSON-safe), kept in ``spec.json`` for a resumed run."""

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str = "<faults>") -> FaultPlan:
        """Parse a plan mapping; raise ScenarioError naming the source, key and what is allowed."""
        if not isinstance(raw, Mapping):
            raise ScenarioError(
                f"{source}: a fault plan must be a mapping of step id (or flow/step) to a list "
                f"of faults, one per attempt, got {type(raw).__name__}"
            )
        entries: dict[str, tuple[Fault | None, ...]] = {}
        for key, value in raw.items():
            if not isinstance(key, str) or not key:
                raise ScenarioError(f"{source}: keys must be step ids (or flow/step), got {key!r}")
            where = f"{source}: {key}"
            if not isinstance(value, list) or not value or len(value) > MAX_ENTRIES:
                raise ScenarioError(
                    f"{where}: must be a list of 1 to {MAX_ENTRIES} entries, one per attempt "
                    f"(a fault or null), got {value!r}"
                )
            entries[key] = tuple(parse_fault(item, f"{where}[{i}]") for i, item in enumerate(value))
        plain = {
            key: [None if f is None else f.as_entry() for f in faults]
            for key, faults in entries.items()
        }
        return cls(entries=entries, source=source, raw=plain)

    @classmethod
    def from_file(cls, path: Path | str) -> FaultPlan:
        """Read a plan from a YAML (or JSON) file."""
        return cls.from_mapping(read_plan_file(path, "fault plan"), source=str(path))

    def check_steps(self, flows: Iterable[tuple[str, Iterable[str]]]) -> None:
        """Raise ScenarioError if a key names no step of the given (flow, step ids)."""
        self.check_keys(step_names(flows))

    def check_keys(self, known: set[str]) -> None:
        """Raise ScenarioError if a key is none of ``known`` (step ids and flow/step)."""
        for key in self.entries:
            if key not in known:
                import difflib

                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ScenarioError(
                    f"{self.source}: '{key}' names no step of the flows in this run{hint} "
                    "(keys are step ids, or flow/step)"
                )

    def key_for(self, flow_key: str, step_id: str) -> str | None:
        """The plan's key for a step: ``flow/step`` first, then ``step``."""
        for key in (f"{flow_key}/{step_id}", step_id):
            if key in self.entries:
                return key
        return None

    def check_mode(
        self, flow_key: str, step_id: str, mode: str, served: frozenset[str] | None = None
    ) -> None:
        """Refuse a kind the step's engine cannot be given in ``mode``.

        ``served`` is what the engine says it serves (its ``fault_kinds``); without it, the
        kinds of the mode: ``cli_exit`` in cli mode, the HTTP kinds in the others.
        """
        key = self.key_for(flow_key, step_id)
        if key is None or mode == "stub":
            return
        if served is None:
            served = frozenset({"cli_exit"}) if mode == "cli" else HTTP_KINDS | TOOL_KINDS
        for i, fault in enumerate(self.entries[key]):
            if fault is not None and fault.kind not in served:
                raise ScenarioError(f"{self.source}: {key}[{i}]: {_refusal(fault.kind, mode)}")


def _refusal(kind: str, mode: str) -> str:
    """Why ``kind`` is not served in ``mode``, and where it is."""
    if kind in TOOL_KINDS:
        return (
            f"{kind} is injected where the runtime runs the step's tools (stub, sdk, record and "
            f"replay modes), and this step runs in {mode} mode, where its engine runs them"
        )
    if kind == "cli_exit":
        return (
            f"cli_exit is injected in cli and stub modes only, and this step runs in {mode} "
            f"mode (use an HTTP kind: {', '.join(sorted(HTTP_KINDS))})"
        )
    if mode == "cli":
        return (
            f"{kind} is not injected in cli mode here: the HTTP kinds reach a CLI through "
            "the loopback cassette server, which runs when claude-step records through the "
            "CLI (--mode record --record-via cli) or replays a cassette recorded that way; "
            "a live cli run without cassettes and gemini-step take cli_exit only"
        )
    return f"{kind} is not injected by this step's engine in {mode} mode"


class FaultInjector:
    """A plan during one run: hands out each step's next entry, one per attempt."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self._taken: dict[str, int] = {}
        self.armed: Fault | None = None
        """The fault the next HTTP request of the SDK is answered with (then cleared)."""
        self.tool_armed: Fault | None = None
        """The fault the attempt's next call of its tool (or of any tool) is answered with."""

    def next_fault(self, flow_key: str, step_id: str) -> Fault | None:
        """The entry for this attempt of the step (None: a clean attempt)."""
        key = self.plan.key_for(flow_key, step_id)
        if key is None:
            return None
        taken = self._taken.get(key, 0)
        self._taken[key] = taken + 1
        faults = self.plan.entries[key]
        return faults[taken] if taken < len(faults) else None

    def take_armed(self) -> Fault | None:
        """The armed fault, disarmed: each fault answers one request."""
        fault, self.armed = self.armed, None
        return fault

    def take_tool_fault(self, tool: str) -> Fault | None:
        """The armed tool fault if it is for ``tool`` (or for any tool), disarmed."""
        fault = self.tool_armed
        if fault is None or fault.tool not in (None, tool):
            return None
        self.tool_armed = None
        return fault


def step_names(flows: Iterable[tuple[str, Iterable[str]]]) -> set[str]:
    """How a plan or a scenario may name the steps of these (flow, step ids): id or flow/id."""
    known: set[str] = set()
    for flow_key, step_ids in flows:
        for step_id in step_ids:
            known.update((step_id, f"{flow_key}/{step_id}"))
    return known


def read_plan_file(path: Path | str, what: str) -> Any:
    """The document of a YAML (or JSON) file a user wrote; ScenarioError naming ``what``."""
    import yaml

    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.yaml_input import describe_yaml_error, load_yaml

    path = Path(path)
    try:
        text = read_text_limited(path)
    except OSError as exc:
        raise ScenarioError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # too big, not a regular file, not UTF-8
        raise ScenarioError(f"cannot read {what} {path}: {exc}") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        message, line = describe_yaml_error(exc)
        where = f"{path}:{line}" if line else str(path)
        raise ScenarioError(f"{where}: invalid YAML: {message}") from None
    except ValueError as exc:  # a value YAML cannot build, such as a date of month 13
        raise ScenarioError(f"{path}: invalid YAML: {exc}") from None
