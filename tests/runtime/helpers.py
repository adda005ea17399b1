"""Helpers for runtime tests: running flows in-process and reading what a run wrote."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.plugins import SwarmPlugins, process_plugins
from swarm_runtime.storage.store import read_event_log

NOTES = """\
    teaching_notes:
      inputs: ["input of {id}"]
      outputs: ["output of {id}"]
      emphasizes: ["emphasis of {id}"]
      constraints: ["constraint of {id}"]
"""


def step_yaml(step_id: str, routing: str = "", agent: str = "worker") -> str:
    """A valid step block (indented for a flow's `steps:` list), optional routing lines."""
    text = f'  - id: {step_id}\n    agents: [{agent}]\n    role: "Does {step_id}."\n'
    text += NOTES.format(id=step_id)
    if routing:
        text += textwrap.indent(textwrap.dedent(routing).strip("\n"), "    ") + "\n"
    return text


def write_flow(flows_dir: Path, key: str, steps: list[str], head: str = "") -> Path:
    """Write a flow file made of step blocks from :func:`step_yaml` (``head``: more top keys)."""
    flows_dir.mkdir(parents=True, exist_ok=True)
    path = flows_dir / f"{key}.yaml"
    path.write_text(
        f'key: {key}\ntitle: "Flow {key}"\ndescription: "Test flow {key}."\n{head}steps:\n'
        + "".join(steps),
        encoding="utf-8",
    )
    return path


class OnEvent:
    """A listener calling ``observe`` with every event: how a test watches a run."""

    def __init__(self, observe: Callable[[dict[str, Any]], Any]) -> None:
        self.observe = observe

    def swarm_event(self, event: dict[str, Any]) -> None:
        self.observe(event)


def listening(*observers: Callable[[dict[str, Any]], Any] | None) -> SwarmPlugins:
    """The process's plugins, with ``observers`` (None: none) hearing every event beside them."""
    return process_plugins().with_listeners(*(OnEvent(o) for o in observers if o is not None))


def run_flows(
    flows_dir: Path,
    runs_dir: Path,
    flows: tuple[str, ...] | None = None,
    *,
    scenario: dict[str, Any] | None = None,
    **kwargs: Any,
) -> RunOutcome:
    registry = FlowRegistry(flows_dir)
    deps = {name: kwargs.pop(name) for name in ("clock", "jitter") if name in kwargs}
    limits = {name: kwargs.pop(name) for name in ("max_steps", "history_budget") if name in kwargs}
    orchestrator = Orchestrator(
        registry,
        runs_dir=runs_dir,
        deps=RunDeps(sleep=kwargs.pop("sleep", lambda _s: None), **deps),
        engine=EngineChoice(
            scenario=Scenario.from_mapping(scenario) if scenario is not None else None
        ),
        limits=RunLimits(**limits),
        **kwargs,
    )
    return orchestrator.run(RunSpec(flows=flows or tuple(registry.order())))


def events_of(outcome: RunOutcome) -> list[dict[str, Any]]:
    return read_event_log(outcome.path / "events.jsonl").events


def kinds(outcome: RunOutcome) -> list[str]:
    return [event["kind"] for event in events_of(outcome)]


def receipt(outcome: RunOutcome, flow: str, step: str, agent: str) -> dict[str, Any]:
    path = outcome.path / flow / "receipts" / f"{step}-{agent}.json"
    value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return value


def route_decisions(outcome: RunOutcome, step: str | None = None) -> list[dict[str, Any]]:
    return [
        event["payload"]
        for event in events_of(outcome)
        if event["kind"] == "route_decision" and (step is None or event["step_id"] == step)
    ]


TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


def normalised_tree(root: Path, run_id: str) -> dict[str, str]:
    """Every file of a run with run id, timestamps and durations replaced by placeholders."""
    files: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8").replace(run_id, "<RUN_ID>")
        text = TS.sub("<TS>", text)
        text = re.sub(
            r'"(duration_ms|durationMs|llmWaitMs|toolCallMs|ioMs)": \d+', r'"\1": "<MS>"', text
        )
        files[str(path.relative_to(root))] = text
    return files


class Crash(BaseException):
    """Stands for SIGKILL: no handler of the run catches it."""


def crash_at_checkpoint(
    monkeypatch: Any, at: int, *, before: bool, run: Callable[[], object]
) -> None:
    """Call ``run`` and crash it at its ``at``-th checkpoint, just before or just after it."""
    from swarm_runtime.orchestrator.recorder import RunRecorder

    real = RunRecorder.write_checkpoint
    calls = {"n": 0}

    def crashing(self: RunRecorder, document: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] == at and before:
            raise Crash
        real(self, document)
        if calls["n"] == at:
            raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(RunRecorder, "write_checkpoint", crashing)
        try:
            run()
        except Crash:
            return
    raise AssertionError(f"the run never reached checkpoint {at}")


def claude_choice(
    mode: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    cassettes: Any = None,
    env: dict[str, str] | None = None,
    **claude: Any,
) -> Any:
    """The engine choice of a run on claude-step: its key and URL as the environment gives
    them, ``claude`` as runtime.yaml's ``engines.claude``."""
    from swarm_runtime.orchestrator.plan import EngineChoice

    given = dict(env or {})
    if api_key is not None:
        given["ANTHROPIC_API_KEY"] = api_key
    if base_url is not None:
        given["ANTHROPIC_BASE_URL"] = base_url
    return EngineChoice(
        mode=mode, cassettes=cassettes, env=given, sections={"claude": claude} if claude else {}
    )
