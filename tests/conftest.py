"""Shared fixtures: a pinned clock, a copy of the shipped flows, and CLI runners."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from swarm_runtime.cli.main import main

REPO = Path(__file__).resolve().parent.parent
SHIPPED_FLOWS = REPO / "flows"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>`` (an executable with no ``.py``) as a module, to test its parts."""
    loader = SourceFileLoader(
        name.removesuffix(".py").replace("-", "_"), str(REPO / "scripts" / name)
    )
    module = ModuleType(loader.name)
    module.__file__ = loader.path
    loader.exec_module(module)
    return module


def pytest_configure(config: pytest.Config) -> None:
    """The flow cache of this test session is its own temp dir, never the user's."""
    if "SWARM_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["SWARM_CACHE_DIR"] = tempfile.mkdtemp(prefix="swarm-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("SWARM_CACHE_DIR"), True))


class StepClock:
    """A clock that advances by a fixed step on every reading."""

    def __init__(self, start: datetime | None = None, step_ms: int = 1) -> None:
        self.now = start or datetime(2025, 1, 15, 10, 0, 0, tzinfo=UTC)
        self.step = timedelta(milliseconds=step_ms)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def flows_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped flows."""
    target = tmp_path / "flows"
    shutil.copytree(SHIPPED_FLOWS, target)
    return target


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., CliResult]:
    """Run ``swarm`` in-process from ``tmp_path`` (with the shipped flows as ./flows)."""
    monkeypatch.chdir(tmp_path)
    for name in (
        "SWARM_RUNS_DIR",
        "SWARM_FLOWS_DIR",
        "SWARM_CLAUDE_STEP_ENGINE_MODE",
        "SWARM_NAVIGATOR",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    if not (tmp_path / "flows").exists():
        shutil.copytree(SHIPPED_FLOWS, tmp_path / "flows")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def swarm_process(tmp_path: Path) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """Run ``swarm`` as a real process (for exit codes, tracebacks and signals)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]  # the session's (pytest_configure)

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "swarm_runtime.cli.main", *args],
            cwd=cwd or tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    yield run


@pytest.fixture
def anthropic_server() -> Iterator[Any]:
    """A local Anthropic Messages API on 127.0.0.1 (see tests/fakes/anthropic_server.py)."""
    from tests.fakes.anthropic_server import running_server

    yield from running_server()


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """A local OpenAI Chat Completions API on 127.0.0.1 (see tests/fakes/openai_server.py)."""
    from tests.fakes.openai_server import running_openai_server

    yield from running_openai_server()


def plugin_distribution(root: Path, module: str, source: str, entry_points: str) -> Path:
    """A distribution as pip installs one: ``<module>.py`` and its ``*.dist-info`` (with
    ``entry_points.txt``) in ``root``, which a process has on its ``PYTHONPATH``."""
    import textwrap

    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def _no_http_library_left_patched() -> Iterator[None]:
    """A test leaves the process's HTTP libraries as it found them (no recorder left open).

    A recorder left open would answer every later test's HTTP from its cassette.
    """
    import http.client

    import httpx2

    transport = httpx2.HTTPTransport
    before = (http.client.HTTPConnection, transport.handle_request)
    yield
    after = (http.client.HTTPConnection, transport.handle_request)
    if after != before:
        # The next tests run on the real ones.
        http.client.HTTPConnection, transport.handle_request = before  # type: ignore[misc,method-assign]
        pytest.fail(f"the test left an HTTP library patched ({after})", pytrace=False)
