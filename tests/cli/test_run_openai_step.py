"""``swarm run --engine openai-step``, as a user runs it: recorded against a local OpenAI
Chat Completions server into ``--cassette-dir``, replayed with no server, and stopped at
start-up when a recording has neither a key nor a server to reach."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.fakes.openai_server import OpenAIServer
from tests.runtime.helpers import step_yaml, write_flow

pytest.importorskip("openai")  # the [openai] extra: the test extra brings it

KEY = "sk-fake-openai-cli-run-0000"
ECHO = "x-echoed-key"


def _swarm(cwd: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    """``swarm ARGS`` in ``cwd`` with no key or server of the machine's, only ``env``."""
    given = {
        k: v
        for k, v in os.environ.items()
        if k == "SWARM_CACHE_DIR" or not k.startswith(("SWARM_", "ANTHROPIC_", "OPENAI_"))
    }
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=cwd,
        env={**given, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(SHIPPED_FLOWS, tmp_path / "flows")
    return tmp_path


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    running = OpenAIServer()
    running.echo_key_header = ECHO  # a careless server echoes the key
    running.start()
    yield running
    running.stop()


RUN = ("run", "stepwise-demo", "--engine", "openai-step")


def _receipts(run_dir: Path) -> dict[str, dict[str, object]]:
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted(run_dir.glob("stepwise-demo/receipts/*.json"))
    }


def _holding(root: Path, secret: str) -> list[str]:
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes()
    ]


def test_a_run_on_openai_step_records_against_a_local_server_and_replays_with_none(
    project: Path, server: OpenAIServer
) -> None:
    live = {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": KEY}
    recorded = _swarm(
        project, *RUN, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", env=live
    )
    assert recorded.code == 0, recorded.err
    assert "recorded the run's calls in cas" in recorded.err
    cassettes = sorted((project / "cas" / "stepwise-demo").glob("*.yaml"))
    assert cassettes and len(cassettes) == len(server.requests)
    assert all(path.read_text().startswith("engine: openai-step\n") for path in cassettes)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert _holding(project, KEY) == []  # the echoed key included
    server.stop()  # the replay has no server to reach, and no key or base URL

    replayed = _swarm(project, *RUN, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replayed.code == 0, replayed.err
    ((first,), (second,)) = (list((project / "a").iterdir()), list((project / "b").iterdir()))
    same = _swarm(project, "golden", "diff", str(first), str(second))
    assert same.code == 0 and "No differences" in same.out, same.out
    receipts = _receipts(second)
    assert len(receipts) == len(cassettes)
    assert {receipt["engine"] for receipt in receipts.values()} == {"openai-step"}
    assert _swarm(project, "runs", "validate", str(second)).code == 0


def test_record_without_a_key_or_a_server_stops_at_start_up_saying_what_to_set(
    project: Path,
) -> None:
    done = _swarm(project, *RUN, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a")
    assert done.code == 2, done.err
    assert done.err.startswith("swarm: error: ")
    assert "OPENAI_API_KEY" in done.err and "OPENAI_BASE_URL" in done.err
    assert "Traceback" not in done.err
    assert not (project / "a").exists() and not (project / "cas").exists()


def test_a_step_on_openai_step_after_claude_step_steps_is_checked_before_the_run_begins(
    tmp_path: Path,
) -> None:
    write_flow(
        tmp_path / "flows",
        "mixed",
        [step_yaml("read"), step_yaml("draft") + "    engine: openai-step\n"],
    )
    claude_only = {"ANTHROPIC_API_KEY": "sk-ant-fake-cli-run-0000"}
    done = _swarm(
        tmp_path,
        "run",
        "mixed",
        "--mode",
        "record",
        "--cassette-dir",
        "cas",
        "--runs-dir",
        "a",
        env=claude_only,
    )
    assert done.code == 2, done.err
    assert "step 'draft'" in done.err and "OPENAI_API_KEY" in done.err
    assert not (tmp_path / "a").exists()


def test_a_key_in_a_variable_named_by_api_key_env_is_kept_out_of_the_recordings(
    project: Path, server: OpenAIServer
) -> None:
    config = project / "swarm" / "config"
    config.mkdir(parents=True)
    (config / "runtime.yaml").write_text("engines:\n  openai:\n    api_key_env: SUPPORT_LLM_AUTH\n")
    env = {"OPENAI_BASE_URL": server.url + "/v1", "SUPPORT_LLM_AUTH": KEY}
    done = _swarm(
        project, *RUN, "--to", "read_request", "--mode", "record", "--cassette-dir", "cas", env=env
    )
    assert done.code == 0, done.err
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert _holding(project, KEY) == []
    (cassette,) = (project / "cas" / "stepwise-demo").glob("*.yaml")
    assert f"{ECHO}:\n      - Bearer [scrubbed SUPPORT_LLM_AUTH]\n" in cassette.read_text()
