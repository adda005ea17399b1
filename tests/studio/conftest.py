"""Studio fixtures: runs made by ``swarm run``, the app in-process, and a real server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SHIPPED_FLOWS

pytest.importorskip("starlette", reason="the studio extra: pip install -e '.[studio]'")

from starlette.testclient import TestClient

from swarm_runtime import service
from swarm_runtime.storage.lock import RunLock
from swarm_runtime.studio.app import StudioConfig, create_app

LOCAL = "http://127.0.0.1:5000"
"""The address the in-process client pretends to call: a loopback name, as a browser would."""


SWARM = [sys.executable, "-m", "swarm_runtime.cli.main"]
"""The ``swarm`` command as a process."""


def swarm_env() -> dict[str, str]:
    """The environment without the developer's SWARM_ settings, with the session's cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    return env


def swarm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``swarm`` as a user runs it, in ``cwd``."""
    return subprocess.run(
        [*SWARM, *args],
        cwd=cwd,
        env=swarm_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


class Project:
    """A user project: ./flows, ./swarm/runs, runs made with ``swarm run``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs_dir = root / "swarm" / "runs"
        self.flows_dir = root / "flows"
        if not self.flows_dir.exists():
            shutil.copytree(SHIPPED_FLOWS, self.flows_dir)

    def run(self, *args: str) -> str:
        """``swarm run ARGS``; the id of the run it made."""
        before = set(self.runs()) if self.runs_dir.is_dir() else set()
        done = swarm("run", *args, "--progress", "never", cwd=self.root)
        assert done.returncode in (0, 1), done.stderr
        (made,) = set(self.runs()) - before
        return made

    def running_run(self, run_id: str) -> RunLock:
        """A run another process is running: meta says so, and this process holds its lock."""
        run_dir = self.runs_dir / run_id
        run_dir.mkdir(parents=True)
        (run_dir / "meta.json").write_text(json.dumps({"status": "running", "flows": ["x"]}))
        lock = RunLock(run_dir)
        lock.acquire("now")
        return lock

    def runs(self) -> list[str]:
        return sorted(p.name for p in self.runs_dir.glob("run-*"))

    def config(self, **changes: Any) -> StudioConfig:
        settings: dict[str, Any] = {
            "runs_dir": self.runs_dir,
            "flows_dir": self.flows_dir,
            "golden_dir": REPO / "golden",
        }
        return StudioConfig(**{**settings, **changes})


HOSTILE = '<script>window.__x=1</script><img src=x onerror="window.__x=2">'
"""Markup a tool's name, input or output may hold: the studio shows it as text."""
LONG_OUTPUT = "line of a long page\n" * 400
TOOLY = """key: support
title: "Support"
description: "Look a question up, check the answer."
steps:
  - id: research
    agents: [researcher]
    role: "Look the question up."
    teaching_notes: {inputs: [a question], outputs: [notes], emphasizes: [sources], constraints: [quote]}
    tools: [search, fetch_page]
  - id: check
    agents: [checker]
    role: "Check the notes."
    teaching_notes: {inputs: [notes], outputs: [a verdict], emphasizes: [facts], constraints: [brief]}
    routing:
      kind: microloop
      loop_target: research
      loop_condition_field: status
      loop_success_values: [VERIFIED]
      max_iterations: 3
"""
TOOLY_SCENARIO = {
    "research": [
        {
            "tools": [
                {"tool": "search", "input": {"q": HOSTILE}, "output": ["doc-7", HOSTILE]},
                {"tool": "fetch_page", "input": {"id": "doc-7"}, "output": LONG_OUTPUT},
                {"tool": HOSTILE, "input": {}, "output": "no such tool", "success": False},
            ]
        },
        {"tools": [{"tool": "fetch_page", "input": {"id": "doc-8"}, "output": "short"}]},
    ],
    "check": [{"handoff": {"status": "REVISE"}}, {"handoff": {"status": "VERIFIED"}}],
}
"""Two executions of research: three calls (one refused), then one."""


def tool_project(root: Path) -> tuple[Project, str]:
    """A project whose flow's first step calls tools, and its run made by ``swarm run``."""
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "support.yaml").write_text(TOOLY, encoding="utf-8")
    scenario = root / "tools.json"
    scenario.write_text(json.dumps(TOOLY_SCENARIO), encoding="utf-8")
    project = Project(root)
    return project, project.run("support", "--scenario", str(scenario))


@pytest.fixture(scope="module")
def made_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, dict[str, str]]:
    """One project with a signal run, a deploy run and a failing build run, made once."""
    project = Project(tmp_path_factory.mktemp("project"))
    scenario = project.root / "fail.yaml"
    scenario.write_text("implement_code:\n  result_code: fatal\n  error: the build broke\n")
    runs = {
        "signal": project.run("signal"),
        "deploy": project.run("deploy"),
        "build_fails": project.run("build", "--scenario", str(scenario)),
    }
    return project, runs


@pytest.fixture
def client_for() -> Iterator[Callable[[StudioConfig], TestClient]]:
    """A TestClient of the studio for a config (its runs cancelled at the end)."""
    apps: list[Any] = []

    def make(config: StudioConfig) -> TestClient:
        app = create_app(config)
        apps.append(app)
        return TestClient(app, base_url=LOCAL)

    yield make
    for app in apps:
        app.state.studio.actions.shutdown()
        app.state.studio.index.close()


class LiveStudio:
    """The studio served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, config: StudioConfig) -> None:
        import uvicorn

        from swarm_runtime.studio.server import bind

        self.app = create_app(config)
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        ready = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                ready.set()

        self.server = Server(
            uvicorn.Config(
                self.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
            )
        )
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        assert ready.wait(30), "the studio did not start"

    @property
    def studio(self) -> Any:
        return self.app.state.studio

    def close(self) -> None:
        self.studio.actions.shutdown()
        self.studio.closing.set()  # as the server does on Ctrl-C
        self.server.should_exit = True
        self.thread.join(30)
        self.studio.index.close()
        self.sock.close()


@pytest.fixture
def live_studio() -> Iterator[Callable[[StudioConfig], LiveStudio]]:
    servers: list[LiveStudio] = []

    def start(config: StudioConfig) -> LiveStudio:
        server = LiveStudio(config)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


class Gate:
    """Holds every step of a run until the test lets it go, one step at a time."""

    def __init__(self) -> None:
        self._steps = threading.Semaphore(0)
        self.resumed_start = threading.Event()
        """Set by a test to hold a resumed run before it writes anything: the instant after
        the resume was answered, when the run's files still say it is stopped."""
        self.resumed_start.set()

    def let(self, steps: int = 1) -> None:
        for _ in range(steps):
            self._steps.release()

    def sleep_for(self, cancellable: Callable[[float], None]) -> Callable[[float], None]:
        def sleep(seconds: float) -> None:
            if not self._steps.acquire(timeout=120):
                raise TimeoutError("the test never let this step go")
            cancellable(0)  # a cancel requested meanwhile still cuts the step short

        return sleep


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """A backend ``gated-step-orchestrator``: the stub, each step held by the gate."""
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.assembly import build_orchestrator, orchestrator_for_run
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps

    held = Gate()

    def factory(**options: Any) -> service.Backend:
        settings = resolve_settings(
            env={}, mode="stub", runs_dir=options["runs_dir"], flows_dir=options["flows_dir"]
        )
        flows = FlowRegistry(options["flows_dir"])
        steps = flows.get("stepwise-demo").steps
        scenario = Scenario.from_mapping({step.id: {"delay_ms": 1} for step in steps})
        return service.Backend(
            "gated-step-orchestrator",
            settings.runs_dir,
            lambda sleep: build_orchestrator(
                settings,
                flows,
                env={},
                deps=RunDeps(sleep=held.sleep_for(sleep)),
                engine=EngineChoice(mode=settings.mode, scenario=scenario),
            ),
            # Resumed the one way (spec.json gives the flows dir and the scenario), held too.
            resume=lambda run_dir, sleep: _HeldStart(
                orchestrator_for_run(run_dir, env={}, sleep=held.sleep_for(sleep)), held
            ),
        )

    monkeypatch.setitem(service._FACTORIES, "gated-step-orchestrator", factory)
    yield held
    held.let(1000)  # nothing left waiting when the studio shuts down


class _HeldStart:
    """An orchestrator whose resumed run waits for ``gate.resumed_start`` before it begins."""

    def __init__(self, orchestrator: Any, gate: Gate) -> None:
        self._orchestrator = orchestrator
        self._gate = gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._orchestrator, name)

    def prepare_resume(self, run_dir: Path, **options: Any) -> Any:
        prepared = self._orchestrator.prepare_resume(run_dir, **options)
        gate = self._gate

        class Held:
            run_id = prepared.run_id

            def execute(self) -> Any:
                if not gate.resumed_start.wait(120):
                    raise TimeoutError("the test never let the resumed run start")
                return prepared.execute()

        return Held()
