"""Flow Studio in a real browser: Debian's Chromium driven by Playwright.

Screenshots of the list and of a run page are saved under ``test-artifacts/studio/`` (or
``$SWARM_TEST_ARTIFACTS/studio/``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime import service
from tests.conftest import REPO
from tests.studio.conftest import Gate, LiveStudio, Project

INSTALL = "apt-get install -y chromium (Debian's Chromium; never 'playwright install')"
REQUIRED = os.environ.get("SWARM_BROWSER_REQUIRED") == "1"
"""Set by .ci/run, which installs Chromium: there a missing browser fails, never skips."""
try:
    from playwright import sync_api
except ImportError:  # pragma: no cover - the test extra installs it
    if REQUIRED:
        raise
    pytest.skip("Playwright is not installed: pip install -e '.[dev]'", allow_module_level=True)
expect = sync_api.expect
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("SWARM_TEST_ARTIFACTS") or REPO / "test-artifacts") / "studio"
XSS = '<script>window.__x=1</script><img src=x onerror="window.__x=2"> and **bold**'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        (pytest.fail if REQUIRED else pytest.skip)(f"Chromium is not installed: {INSTALL}")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()
    assert errors == [], f"the page logged errors: {errors}"


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_the_list_shows_a_run_made_by_swarm_run(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    project = Project(tmp_path)
    run_id = project.run("signal")
    server = live_studio(project.config())
    page.goto(server.url + "/")
    row = page.locator(f'tr.run-row[data-run="{run_id}"]')
    expect(row).to_be_visible()
    expect(row.locator(".badge")).to_have_text("succeeded")
    expect(row.locator("td").nth(3)).to_have_text("signal")
    expect(row.locator("td").nth(4)).to_have_text("10")  # steps, the critic's loop included
    _shot(page, "run-list.png")
    row.locator("a").click()
    expect(page).to_have_url(f"{server.url}/?run={run_id}")
    expect(page.locator("#run-status")).to_have_text("succeeded")


def test_the_run_page_draws_every_step_and_the_loop_and_branch_edges(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    from swarm_runtime.flow.registry import FlowRegistry

    project = Project(tmp_path)
    run_id = project.run("signal", "deploy")
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    flows = FlowRegistry(project.flows_dir)
    for key in ("signal", "deploy"):
        ids = [step.id for step in flows.get(key).steps]
        nodes = page.locator(f'g.node[data-flow="{key}"]')
        expect(nodes).to_have_count(len(ids))
        assert [n.get_attribute("data-step") for n in nodes.all()] == ids
    loop = page.locator(
        'svg[data-flow="signal"] path.edge[data-kind="loop"][data-from="critique_requirements"]'
    )
    expect(loop).to_have_attribute("data-to", "author_requirements")
    deploy = page.locator('svg[data-flow="deploy"]')
    expect(deploy.locator('path.edge[data-kind="branch"]')).to_have_count(3)
    labels = deploy.locator("text.edge-label").all_text_contents()
    assert {"health=HEALTHY", "health=DEGRADED", "default"} <= set(labels)
    author = page.locator('g.node[data-flow="signal"][data-step="author_requirements"]')
    expect(author).to_have_attribute("data-count", "2")
    expect(author).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#timeline-rows tr")).to_have_count(
        len((project.runs_dir / run_id / "events.jsonl").read_text().splitlines())
    )
    # Each payload is laid out by the fields its kind's contract declares, in their order.
    loop_row = page.locator('#timeline-rows tr[data-kind="route_decision"]').filter(
        has_text="decision=loop"
    )
    expect(loop_row.first.locator("td").nth(4)).to_have_text(
        re.compile(
            r"^from_step=critique_requirements to_step=author_requirements decision=loop "
            r"reason=\S+ loop_state=\{.*\} routing_source=\w+$"
        )
    )
    start_row = page.locator('#timeline-rows tr[data-kind="step_start"]').first
    expect(start_row.locator("td").nth(4)).to_contain_text("step_index=1")
    _shot(page, "run-page.png")


def test_a_step_transcript_opens_and_model_output_stays_text(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    project = Project(tmp_path)
    scenario = project.root / "xss.yaml"
    scenario.write_text(f"read_request:\n  text: {XSS!r}\n".replace("'", '"', 2))
    scenario.write_text("read_request:\n  text: '" + XSS.replace("'", "''") + "'\n")
    run_id = project.run("stepwise-demo", "--scenario", str(scenario))
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    page.locator('g.node[data-step="read_request"]').click()
    transcript = page.locator("#transcript")
    expect(transcript.locator(".message")).to_have_count(3)
    expect(transcript.locator('.message[data-role="assistant"] pre')).to_contain_text(XSS)
    assert page.evaluate("window.__x") is None
    expect(page.locator("#step-panel img")).to_have_count(0)
    expect(page.locator("#step-panel script")).to_have_count(0)
    expect(page.locator("#receipt")).to_contain_text('"step_id": "read_request"')


def test_a_run_started_while_the_page_is_open_appears_and_turns_green_live(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any, gate: Gate
) -> None:
    project = Project(tmp_path)
    server = live_studio(project.config())
    page.goto(server.url + "/")
    expect(page.locator("#run-rows")).to_contain_text("No runs yet.")
    run_id = server.studio.actions.start(
        {"flows": ["stepwise-demo"], "backend": "gated-step-orchestrator"}
    )
    row = page.locator(f'tr.run-row[data-run="{run_id}"]')
    expect(row.locator(".badge")).to_have_text("running")
    row.locator("a").click()
    page.evaluate("window.__same_page = true")
    first = page.locator('g.node[data-step="read_request"]')
    expect(first).to_have_attribute("data-status", "running")
    second = page.locator('g.node[data-step="write_spec"]')
    expect(second).to_have_attribute("data-status", "not_run")
    gate.let()
    expect(first).to_have_attribute("data-status", "succeeded")
    expect(second).to_have_attribute("data-status", "running")
    gate.let(100)
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator('g.node[data-step="summarize_demo"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    expect(page.locator('g.node[data-status="running"]')).to_have_count(0)
    assert page.evaluate("window.__same_page") is True  # updated in place, never reloaded


def test_start_pause_stop_and_resume_from_the_page(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any, gate: Gate
) -> None:
    project = Project(tmp_path)
    server = live_studio(project.config())
    page.goto(server.url + "/")
    form = page.locator("#start-form")
    expect(form.locator('input[value="stepwise-demo"]')).to_be_visible()
    for box in form.locator("input[name=flow]").all():
        box.set_checked(box.get_attribute("value") == "stepwise-demo")
    expect(page.locator("#mode")).to_have_value("stub")
    page.locator("#backend").select_option("gated-step-orchestrator")
    page.locator("#start").click()
    expect(page).to_have_url(re.compile(r"\?run=run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}$"))
    assert page.url.endswith(project.runs()[0])
    expect(page.locator("#run-status")).to_have_text("running")
    page.locator("#pause").click()
    expect(page.locator("#notice")).to_contain_text("to pause at its next step boundary")
    gate.let()
    expect(page.locator("#run-status")).to_have_text("paused")
    expect(page.locator("#pause")).to_be_disabled()
    page.locator("#resume").click()
    expect(page.locator("#run-status")).to_have_text("running")
    page.locator("#stop").click()
    expect(page.locator("#notice")).to_contain_text("to stop at its next step boundary")
    gate.let()
    expect(page.locator("#run-status")).to_have_text("stopped")
    expect(page.locator('g.node[data-step="read_request"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    page.locator("#resume").click()
    gate.let(100)
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator('g.node[data-step="summarize_demo"]')).to_have_attribute(
        "data-status", "succeeded"
    )


def test_the_start_form_offers_no_utility_flow(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    """A utility flow is only injected: ``swarm run`` refuses it, the page does not offer it."""
    server = live_studio(Project(tmp_path).config())
    page.goto(server.url + "/")
    form = page.locator("#start-form")
    expect(form.locator('input[value="stepwise-demo"]')).to_be_visible()
    expect(form.locator('input[value="review"]')).to_be_visible()
    expect(form.locator('input[value="security-scan"]')).to_have_count(0)


def test_the_compare_page_shows_changed_steps_and_diffs(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    project = Project(tmp_path)
    signal = project.run("signal")
    failing = project.root / "fail.yaml"
    failing.write_text("frame_problem:\n  result_code: fatal\n  error: nope\n")
    broken = project.run("signal", "--scenario", str(failing))
    server = live_studio(project.config())
    page.goto(f"{server.url}/?compare=golden:signal,{signal}")
    expect(page.locator("#compare-title")).to_contain_text("No differences")
    page.goto(f"{server.url}/?compare={signal},{broken}")
    expect(page.locator("#compare-title")).to_contain_text("file(s) changed")
    expect(page.locator("#compare-steps")).to_contain_text("frame_problem")
    expect(page.locator("pre.diff span.add").first).to_be_visible()
    _shot(page, "compare.png")


def test_a_flow_without_a_definition_here_is_drawn_from_its_events_as_they_come(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any, gate: Gate
) -> None:
    project = Project(tmp_path)
    backend = service.new_backend(
        "gated-step-orchestrator", runs_dir=project.runs_dir, flows_dir=project.flows_dir
    )
    nowhere = tmp_path / "no-flows"
    nowhere.mkdir()
    server = live_studio(project.config(flows_dir=nowhere))  # the studio knows no flow
    run_id = backend.start({"flows": ["stepwise-demo"]})
    try:
        page.goto(f"{server.url}/?run={run_id}")
        nodes = page.locator('g.node[data-flow="stepwise-demo"]')
        expect(nodes).to_have_count(1)
        expect(nodes.first).to_have_attribute("data-status", "running")
        gate.let()
        expect(nodes).to_have_count(2)
        expect(page.locator('g.node[data-step="read_request"]')).to_have_attribute(
            "data-status", "succeeded"
        )
        gate.let(100)
        expect(page.locator("#run-status")).to_have_text("succeeded")
        expect(page.locator('g.node[data-step="summarize_demo"]')).to_have_attribute(
            "data-status", "succeeded"
        )
        expect(page.locator("p.muted", has_text="drawn from the run's events")).to_be_visible()
    finally:
        gate.let(100)
        backend.shutdown()


def test_the_route_taken_and_the_off_road_moves_are_drawn(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    from tests.cli.test_navigator_command import FLOW

    project = Project(tmp_path)
    (project.flows_dir / "review.yaml").write_text(FLOW, encoding="utf-8")
    scenario = project.root / "s.yaml"
    scenario.write_text(
        "critique_code:\n  handoff: {status: NEEDS_WORK}\n"
        "navigator:\n  critique_code: [back_to_author, forward]\n"
    )
    run_id = project.run("review", "--scenario", str(scenario))
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    graph = page.locator('svg[data-flow="review"]')
    back = graph.locator('path.edge[data-from="critique_code"][data-to="write_code"]')
    expect(back).to_have_attribute("data-kind", "navigator")
    expect(back).to_have_attribute("data-taken", "1")
    expect(back).to_have_attribute("data-offroad", "true")
    forward = graph.locator(
        'path.edge[data-kind="navigator"][data-from="critique_code"][data-to="run_tests"]'
    )
    expect(forward).to_have_attribute("data-taken", "1")
    assert forward.get_attribute("data-offroad") is None  # the golden path
    skipped = graph.locator('path.edge[data-from="critique_code"][data-to="ship"]')
    assert skipped.get_attribute("data-taken") is None
    expect(page.locator('#timeline-rows tr[data-kind="routing_decision"]')).to_have_count(2)
    _shot(page, "navigator-run.png")


def test_each_branch_label_sits_on_its_own_curve_and_the_flows_fit_the_page(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    project = Project(tmp_path)
    run_id = project.run()  # the seven SDLC flows, and security-scan inside review
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    graphs = page.locator("svg.flow-graph")
    expect(graphs).to_have_count(8)
    width = page.viewport_size["width"]
    for graph in graphs.all():  # every flow is on the page: none cut off at the side
        box = graph.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    labels = page.locator('svg[data-flow="deploy"] text.edge-label').all()
    boxes = [label.bounding_box() for label in labels]
    assert len(boxes) >= 3 and all(boxes)

    def apart(a: Any, b: Any) -> bool:
        return (
            a["x"] + a["width"] <= b["x"]
            or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"]
            or b["y"] + b["height"] <= a["y"]
        )

    texts = [label.text_content() for label in labels]
    assert all(apart(a, b) for n, a in enumerate(boxes) for b in boxes[n + 1 :]), list(
        zip(texts, boxes, strict=True)
    )


def test_injected_flows_are_drawn_nested_under_the_step_that_entered_them(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    import yaml

    from tests.runtime.orchestrator.test_detours import EVERY_DETOUR, _flows

    _flows(tmp_path / "flows")
    project = Project(tmp_path)
    scenario = project.root / "s.yaml"
    scenario.write_text(yaml.safe_dump(EVERY_DETOUR), encoding="utf-8")
    run_id = project.run("build", "--scenario", str(scenario))
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    rebase = page.locator('section.graph.injected[data-injected-by="build/write_code"]')
    expect(rebase.locator('svg[data-flow="rebase"]')).to_have_count(1)
    expect(rebase).to_have_attribute("data-depth", "2")
    expect(rebase.locator("p.injected-by")).to_have_text("↳ entered from build/write_code")
    resolve = page.locator('section.graph.injected[data-injected-by="rebase/replay"]')
    expect(resolve).to_have_attribute("data-depth", "3")
    expect(resolve.locator('g.node[data-step="check"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    # Each injected flow follows the flow that entered it; three deep sits further in.
    titles = page.locator("section.graph h3").all_inner_texts()
    assert [t.split(":")[0] for t in titles] == ["build", "rebase", "resolve", "security-scan"]
    indent = resolve.evaluate("e => parseFloat(getComputedStyle(e).marginLeft)")
    assert indent > rebase.evaluate("e => parseFloat(getComputedStyle(e).marginLeft)")
    _shot(page, "injected-flows.png")


def test_a_golden_run_opens_as_a_run_page(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    project = Project(tmp_path)
    server = live_studio(project.config())
    page.goto(server.url)
    page.locator("#goldens a", has_text="sdlc").first.click()
    expect(page.locator("#where")).to_have_text("golden:sdlc")
    graph = page.locator('svg[data-flow="review"]')
    expect(graph.locator('g.node[data-step="work_blocking_items"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    expect(page.locator('#timeline-rows tr[data-kind="run_completed"]')).to_have_count(1)
    assert "NaN" not in page.locator("#run-header").inner_text()  # its times are placeholders
    page.locator('g.node[data-flow="signal"]').first.click()
    expect(page.locator("#step-panel")).to_contain_text("receipt")
    refused = page.request.post(
        f"{server.url}/api/runs/golden:sdlc/resume", headers={"Origin": server.url}
    )
    assert refused.status >= 400 and "golden run" in refused.text()
    _shot(page, "golden-run.png")


def test_a_steps_tool_calls_show_in_order_as_text_long_output_cut_and_whole_on_a_click(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    from tests.studio.conftest import HOSTILE, LONG_OUTPUT, tool_project

    project, run_id = tool_project(tmp_path)
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    page.locator('g.node[data-step="research"]').click()
    calls = page.locator("#tool-calls li.tool-call")
    expect(calls).to_have_count(1)  # the latest execution: one call
    expect(calls.first.locator(".tool-name")).to_have_text("fetch_page")
    page.locator("#iteration").select_option("0")
    expect(calls).to_have_count(3)
    expect(calls.locator(".tool-name")).to_have_text(["search", "fetch_page", HOSTILE])
    expect(calls.locator(".badge")).to_have_text(["ok", "ok", "failed"])
    expect(calls.first.locator(".tool-ms")).to_have_text(re.compile(r"^\d+ ms$"))
    shown = json.dumps({"q": HOSTILE}, indent=2)  # as JSON, quotes escaped, markup as text
    expect(calls.first.locator(".tool-input pre")).to_have_text(shown)
    expect(calls.nth(2)).to_have_attribute("data-tool", HOSTILE)
    expect(page.locator("#step-panel h4").nth(1)).to_have_text(
        "Tool calls: 3 (allowed: search, fetch_page)"
    )
    long = calls.nth(1).locator(".tool-output")
    cut = long.locator("pre.cut")
    expect(cut).to_have_text(re.compile(r"… \(\d+ more characters\)$"))
    shown, _, more = str(cut.text_content()).rpartition("… (")
    assert len(shown) + int(more.split()[0]) == len(LONG_OUTPUT) > len(shown) > 0
    assert LONG_OUTPUT.startswith(shown)
    whole = long.locator("details pre.whole")
    expect(whole).to_be_hidden()
    long.locator("details summary").click()
    expect(whole).to_be_visible()
    assert whole.text_content() == LONG_OUTPUT
    assert page.evaluate("window.__x") is None
    expect(page.locator("#step-panel img")).to_have_count(0)
    expect(page.locator("#step-panel script")).to_have_count(0)
    _shot(page, "tool-calls.png")


def test_a_steps_judgements_show_their_verdict_score_and_reason_as_text(
    tmp_path: Path, live_studio: Callable[..., LiveStudio], page: Any
) -> None:
    from tests.studio.conftest import Project

    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "support.yaml").write_text(JUDGED)
    (tmp_path / "flows" / "flows.yaml").write_text("order: [support]\n")
    scenario = tmp_path / "judged.json"
    scenario.write_text(
        json.dumps({"judges": {"draft": {"facts": {"score": 0.25, "reason": XSS}}}})
    )
    project = Project(tmp_path)
    run_id = project.run("support", "--scenario", str(scenario))
    server = live_studio(project.config())
    page.goto(f"{server.url}/?run={run_id}")
    page.locator('g.node[data-step="draft"]').click()
    verdicts = page.locator("#judgements li.judgement")
    expect(verdicts).to_have_count(2)
    expect(verdicts.locator(".judge-name")).to_have_text(["tone", "facts"])
    expect(verdicts.locator(".badge")).to_have_text(["passed", "failed"])
    expect(verdicts.nth(1).locator(".judge-score")).to_have_text(
        "0.25 (threshold 0.5) · claude-stub"
    )
    expect(verdicts.nth(1).locator(".judge-reason pre")).to_have_text(XSS)
    expect(page.locator("#step-panel")).to_contain_text("Judgements: 1 of 2 passed")
    assert page.evaluate("window.__x") is None
    expect(page.locator("#step-panel img")).to_have_count(0)
    _shot(page, "judgements.png")


JUDGED = """\
key: support
title: Support
description: Drafts a reply.
steps:
  - id: draft
    agents: [writer]
    role: Draft the reply.
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    judges:
      - {name: tone, rubric: The reply is polite., threshold: 0.7}
      - {name: facts, rubric: The reply names the amount., threshold: 0.5}
"""


def test_a_page_told_the_run_is_over_shows_every_event_of_it_even_if_its_stream_missed_them(
    tmp_path: Path,
    live_studio: Callable[..., LiveStudio],
    page: Any,
    gate: Gate,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream that ends having sent nothing (the race of a resume answered before its
    worker shows) must not leave the graph behind a summary that says the run is over."""
    from starlette.responses import StreamingResponse

    from swarm_runtime.studio import app as studio_app
    from swarm_runtime.studio.files import run_row

    project = Project(tmp_path)
    server = live_studio(project.config())
    files = server.app.state.studio.files
    real_stream = studio_app.event_stream

    def blind_stream(slots: Any, run_id: str, tail: Any, **kwargs: Any) -> Any:
        if not blind:
            return real_stream(slots, run_id, tail, **kwargs)

        async def ended() -> Any:  # waits out the run, sends none of its events, ends
            import asyncio

            while run_row(files, run_id)["status"] in ("pending", "running"):
                await asyncio.sleep(0.05)
            yield "event: end\ndata: {}\n\n"

        return StreamingResponse(ended(), media_type="text/event-stream")

    blind = False
    monkeypatch.setattr(studio_app, "event_stream", blind_stream)
    page.goto(server.url + "/")
    form = page.locator("#start-form")
    expect(form.locator('input[value="stepwise-demo"]')).to_be_visible()
    for box in form.locator("input[name=flow]").all():
        box.set_checked(box.get_attribute("value") == "stepwise-demo")
    page.locator("#backend").select_option("gated-step-orchestrator")
    page.locator("#start").click()
    expect(page.locator("#run-status")).to_have_text("running")
    page.locator("#stop").click()
    # The stop is asked before the step is let go: else the run goes on to the next step,
    # held at the gate, and never reaches the boundary it would stop at.
    expect(page.locator("#notice")).to_contain_text("to stop at its next step boundary")
    gate.let()
    expect(page.locator("#run-status")).to_have_text("stopped")
    blind = True
    gate.let(100)
    page.locator("#resume").click()
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator('g.node[data-step="summarize_demo"]')).to_have_attribute(
        "data-status", "succeeded"
    )
    seqs = page.locator("#timeline-rows tr").evaluate_all("rows => rows.map(r => r.dataset.seq)")
    assert len(seqs) == len(set(seqs)), seqs  # each event shown once
