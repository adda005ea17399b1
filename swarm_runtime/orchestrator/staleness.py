"""Which recorded calls the current flows would no longer send, without a run.

A cassette ``<test>/<flow>/<step>-<agent>-<iteration>.yaml`` holds the requests one step
call sent. The parts of such a request that come from the flow files and the settings are
built again here and compared, part by part: the system prompt (persona, flow title, step
header, role, teaching notes, handoff fields) and the fixed headings of the user prompt are
the ``prompt``; ``model``; ``tools``; ``max_tokens``, ``stream`` and any other key are the
``parameters``. What depends on the run (the request's params, earlier outputs) is never
recomputed: nothing runs. A call whose flow or step no longer exists is listed as such.

A cassette a CLI recorded (``recorded_via: cli``) is checked for its flow and step only:
the CLI builds its own request around the prompt.

See docs/record-replay.md#stale-cassettes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.engines.cassette import ENGINE_LINE, body_value
from swarm_runtime.engines.cli_match import recorded_via
from swarm_runtime.engines.replay import load_recording
from swarm_runtime.engines.request_parts import PARTS, Expected
from swarm_runtime.engines.tool_calls import wire_name
from swarm_runtime.engines.tool_tape import is_tool_uri
from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.context import system_prompt
from swarm_runtime.orchestrator.judging import SYSTEM as JUDGE_SYSTEM
from swarm_runtime.orchestrator.judging import judge_heading
from swarm_runtime.orchestrator.routing import SYSTEM as NAVIGATOR_SYSTEM
from swarm_runtime.record import Record

_FILE = re.compile(r"^(?P<call>.+)-(?P<iteration>[0-9]+)\.yaml$")
_RUN_SUFFIX = re.compile(r"@[0-9]+$")
REQUEST_HEADING = "## Request\n"
HISTORY_HEADING = "\n\n## History (newest first)\n"


class StaleCall(Record):
    """A recorded call the current flows would not send, and why."""

    test: str
    """The cassette directory of the test it belongs to ("" for a ``swarm run`` one)."""
    flow_key: str
    cassette: str
    """The file, relative to the cassette dir."""
    parts: tuple[str, ...]
    """The changed parts (:data:`PARTS`); empty when the flow or step is gone."""
    details: tuple[str, ...]
    engine: str = "claude-step"
    """The engine that recorded the call (the cassette's first line says)."""


def cassette_files(root: Path) -> Iterator[tuple[str, str, Path]]:
    """Every cassette under ``root``: (test dir, flow key, path), in path order."""
    for path in sorted(root.rglob("*.yaml")):
        parts = path.relative_to(root).parts
        if len(parts) < 2 or any(part.startswith(".") for part in parts):
            continue  # a stray file, or a staging dir a recording left
        yield "/".join(parts[:-2]), parts[-2], path


def stale_calls(root: Path, flows: FlowRegistry, expected: dict[str, Expected]) -> list[StaleCall]:
    """The recorded calls under ``root`` the flows of ``flows`` would no longer send."""
    if not root.is_dir():
        raise SwarmUsageError(f"cassette dir {root}: not a directory")
    known = set(flows.keys())
    found: list[StaleCall] = []
    for test, flow_key, path in cassette_files(root):
        name = path.relative_to(root).as_posix()
        if flow_key not in known:
            found.append(StaleCall(test, flow_key, name, (), (f"flow '{flow_key}' is gone",)))
            continue
        parts, details = _check(path, flows, flows.get(flow_key), expected)
        if details:
            found.append(StaleCall(test, flow_key, name, parts, details, recorded_engine(path)))
    return found


def _step_of(flow: FlowSpec, call: str) -> tuple[StepSpec | None, str]:
    """The step a cassette's ``<step>-<agent>`` names, and the agent it names."""
    best: StepSpec | None = None
    for step in flow.steps:
        if call.startswith(f"{step.id}-") and (best is None or len(step.id) > len(best.id)):
            best = step
    agent = call[len(best.id) + 1 :] if best is not None else ""
    return best, agent


def _check(
    path: Path, flows: FlowRegistry, flow: FlowSpec, expected: dict[str, Expected]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(changed parts, what changed) of one cassette; nothing when it still matches."""
    match = _FILE.match(path.name)
    step, agent = _step_of(flow, match.group("call")) if match else (None, "")
    if step is None:
        return (), (f"step is gone from flow '{flow.key}'",)
    judge = None  # the step's own agent first: an agent may be called judge-something
    if agent not in (step.primary_agent, "navigator") and agent.startswith("judge-"):
        judge = agent.removeprefix("judge-")
    if agent not in (step.primary_agent, "navigator") and judge is None:
        return ("prompt",), (f"agent: recorded '{agent}', now '{step.primary_agent}'",)
    if recorded_via(path) == "cli":
        return (), ()
    try:
        requests, _ = load_recording(path)
    except ValueError as exc:
        raise SwarmUsageError(str(exc)) from None
    engine = recorded_engine(path)
    if engine not in expected:
        return (), ()  # an engine of a plugin's: its requests are its own
    rubric: str | None = None
    if judge is not None:  # a flow's judge: its rubric is known; a test's own: only its form
        rubric = next((j.rubric for j in step.judges if j.name == judge), None)
        heading = judge_heading(flow, step, rubric) if rubric is not None else "## Rubric\n"
        system = JUDGE_SYSTEM
    elif agent == "navigator":
        system, heading = NAVIGATOR_SYSTEM, f"# Flow: {flow.title} ({flow.key})\n\n"
    else:
        system = system_prompt(flow, step, persona=flows.persona(step.primary_agent))
        heading = REQUEST_HEADING
    found: dict[str, str] = {}
    tools = () if agent == "navigator" or judge is not None else tuple(step.tools or ())
    for request in requests:
        if is_tool_uri(request.uri):
            continue  # a tool call the step made: its answer, not a request to compare
        body = body_value(request.body)
        if isinstance(body, dict):
            for part, detail in compare_body(body, expected[engine], system, heading, tools):
                if rubric is not None and detail.startswith("user prompt"):
                    detail = _rubric_change(body, judge, rubric) or detail
                found.setdefault(part, detail)
    return tuple(p for p in PARTS if p in found), tuple(found[p] for p in PARTS if p in found)


def _rubric_change(body: dict[str, Any], judge: str | None, rubric: str) -> str | None:
    """What changed in a judge's rubric since its call was recorded, if it did."""
    _, user = prompt_of(body)
    recorded = user.removeprefix("## Rubric\n").split("\n\n## The step: ", 1)[0]
    if recorded == rubric:
        return None
    return f"judge '{judge}' rubric: " + first_difference(recorded, rubric)


def compare_body(
    body: dict[str, Any],
    expected: Expected,
    system: str,
    heading: str,
    tools: tuple[str, ...] = (),
) -> list[tuple[str, str]]:
    """(part, what changed) for each part of a recorded body the current flows change.

    ``tools`` are the step's ``tools:`` now: a recorded call offered another set.
    """
    changes: list[tuple[str, str]] = []
    recorded_system, user = prompt_of(body)
    if recorded_system != system:
        changes.append(("prompt", "system prompt: " + first_difference(recorded_system, system)))
    else:
        if not user.startswith(heading) or (
            heading == REQUEST_HEADING and HISTORY_HEADING not in user
        ):
            changes.append(("prompt", "user prompt: its fixed headings differ"))
    if body.get("model") != expected.model:
        changes.append(("model", f"model: recorded {body.get('model')!r}, now {expected.model!r}"))
    offered = tool_names(body.get("tools"))
    now = sorted(wire_name(name) for name in tools)
    if offered != now:
        said = ", ".join(offered) or "none"
        changes.append(("tools", f"tools: recorded with {said}, now {', '.join(now) or 'none'}"))
    params = expected.params
    for key in sorted(set(body) - {"system", "messages", "model", "tools"} | set(params)):
        if body.get(key) != params.get(key):
            changes.append(
                ("parameters", f"{key}: recorded {body.get(key)!r}, now {params.get(key)!r}")
            )
            break
    return changes


def tool_names(offered: Any) -> list[str]:
    """The names of the tools a recorded request offered (either API's shape), sorted."""
    names: list[str] = []
    for entry in offered if isinstance(offered, list) else ():
        if isinstance(entry, dict):
            function = entry.get("function")
            name = function.get("name") if isinstance(function, dict) else entry.get("name")
            names.append(str(name))
    return sorted(names)


def prompt_of(body: dict[str, Any]) -> tuple[Any, str]:
    """A request's system prompt and the text of its first user message.

    The system prompt is the body's ``system`` (the Messages API's) or its first message of
    role ``system`` (Chat Completions').
    """
    messages = body.get("messages")
    messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    system: Any = body.get("system")
    if "system" not in body and messages and messages[0].get("role") == "system":
        system = messages.pop(0).get("content")
    users = [m for m in messages if m.get("role", "user") == "user"]
    content = users[0].get("content") if users else ""
    return system, content if isinstance(content, str) else ""


def recorded_engine(path: Path) -> str:
    """The engine a cassette's first line names (``engine: openai-step``); else claude-step."""
    from swarm_runtime.inputs.files import read_prefix

    try:
        head = read_prefix(path, 80).decode("utf-8", "replace")
    except (OSError, ValueError):
        return "claude-step"
    line = head.split("\n", 1)[0]
    return line.removeprefix(ENGINE_LINE).strip() if line.startswith(ENGINE_LINE) else "claude-step"


def first_difference(recorded: Any, now: str) -> str:
    """The first line where a recorded text and the current one differ, both sides shown."""
    if not isinstance(recorded, str):
        return f"recorded {type(recorded).__name__}, now text"
    old, new = recorded.splitlines(), now.splitlines()
    for number, (before, after) in enumerate(zip(old, new, strict=False), start=1):
        if before != after:
            return f"line {number}: recorded {_short(before)}, now {_short(after)}"
    number = min(len(old), len(new)) + 1
    if len(old) == len(new):
        return "the line breaks or the whitespace at its end differ"
    if len(old) > len(new):
        return f"line {number}: recorded {_short(old[number - 1])}, now nothing"
    return f"line {number}: recorded nothing, now {_short(new[number - 1])}"


def _short(line: str, limit: int = 80) -> str:
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


def base_test(test: str) -> str:
    """A test's cassette dir without the ``@N`` of its later runs."""
    return _RUN_SUFFIX.sub("", test)
