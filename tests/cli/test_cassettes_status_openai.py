"""``swarm cassettes status`` on recordings of ``openai-step``, as a user runs it.

The user project of :mod:`tests.cli.test_cassettes_status`, its steps run on openai-step
through runtime.yaml's ``engine_strategy`` and recorded against the local OpenAI
Chat Completions server; then a teaching note, or ``engines.openai.model``, is edited.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli.test_cassettes_status import FLOW, USER_TEST, _edit, _pytest, _status
from tests.fakes.openai_server import OpenAIServer

pytest.importorskip("openai")  # the [openai] extra: the test extra brings it

KEY = "sk-fake-openai-status-0000"

RUNTIME = """\
engine_strategy:
  triage:
    read_ticket: openai-step
    draft_reply: openai-step
    send_reply: openai-step
engines:
  openai:
    model: gpt-4o-mini
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project with its one test recorded on openai-step (once per module)."""
    root = tmp_path_factory.mktemp("recorded")
    (root / "flows").mkdir()
    (root / "flows" / "triage.yaml").write_text(FLOW)
    (root / "swarm" / "config").mkdir(parents=True)
    (root / "swarm" / "config" / "runtime.yaml").write_text(RUNTIME)
    (root / "test_triage.py").write_text(USER_TEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "OPENAI_"))}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    server = OpenAIServer().start()
    try:
        env.update(OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY=KEY)
        done = _pytest(root, "--swarm-mode=record", env=env)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    cassettes = sorted((root / "golden" / "cassettes").rglob("*.yaml"))
    assert len(cassettes) == 3
    assert all(path.read_text().startswith("engine: openai-step\n") for path in cassettes)
    return root


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    shutil.copytree(recorded, tmp_path / "project")
    return tmp_path / "project"


def _stale_lines(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if ".yaml:" in line]


def test_recordings_of_openai_step_match_the_unchanged_project(project: Path) -> None:
    done = _status(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing stale: the 3 recorded call(s)" in done.stdout


def test_an_edited_teaching_note_makes_that_openai_step_call_stale_naming_the_prompt(
    project: Path,
) -> None:
    _edit(project / "flows" / "triage.yaml", "Answer the ask first", "Answer the ask last")
    done = _status(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 of 3 recorded call(s)" in done.stdout
    (line,) = _stale_lines(done.stdout)
    assert line.startswith("triage/draft_reply-reply-writer-0.yaml: prompt ("), line
    assert "'- Answer the ask first'" in line and "'- Answer the ask last'" in line
    assert "re-record: pytest --swarm-mode=record test_triage.py::test_triage" in done.stdout


def test_a_new_openai_model_makes_every_openai_step_call_stale_naming_the_model(
    project: Path,
) -> None:
    _edit(project / "swarm" / "config" / "runtime.yaml", "gpt-4o-mini", "gpt-4.1-mini")
    done = _status(project)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = _stale_lines(done.stdout)
    assert len(lines) == 3, done.stdout
    for line in lines:
        assert ": model (model: recorded 'gpt-4o-mini', now 'gpt-4.1-mini')" in line, line
