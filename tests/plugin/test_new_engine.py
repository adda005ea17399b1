"""A new engine is one file and one registration: an OpenAI-shaped engine from a user's
conftest reads its own ``engines.toy`` section of runtime.yaml, names its own provider,
and its runs pass the contract suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.helpers import step_yaml, write_flow

FAKE_KEY = "sk-fake-openai-0000"

ENGINE = '''
"""toy-step: steps answered by an OpenAI-compatible chat completions server."""

import json
import os
import urllib.request

from swarm_runtime import StepEngine, StepOutcome, StepResult, StubEngine, TokenUsage


class OpenAIStep(StepEngine):
    engine_id = "toy-step"
    engine_short = "toy"
    mode = "sdk"

    def __init__(self, section):
        self.base_url = section["base_url"]
        self.model = section.get("model", "gpt-toy")
        self.key = section.get("api_key") or os.environ["OPENAI_API_KEY"]

    @classmethod
    def factory(cls, options):
        if options.mode == "stub":
            return StubEngine(
                engine_id=cls.engine_id, engine_short=cls.engine_short, scenario=options.scenario
            )
        return cls(options.section)

    def run_step(self, ctx):
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": ctx.prompt.system},
                {"role": "user", "content": ctx.prompt.user},
            ],
        }
        request = urllib.request.Request(
            self.base_url + "/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": "Bearer " + self.key,
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=ctx.timeout_s) as answer:
            reply = json.load(answer)
        text = reply["choices"][0]["message"]["content"]
        usage = reply["usage"]
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="succeeded", output=text),
            text=text,
            tokens=TokenUsage(usage["prompt_tokens"], usage["completion_tokens"]),
            model=reply["model"],
            provider="openai",
            mode="sdk",
            transcript=({"role": "assistant", "content": text},),
        )
'''

CONFTEST = """
from openai_step import OpenAIStep

def swarm_register_engines(registry):
    registry.register("toy-step", OpenAIStep.factory, section="toy")
"""

TEST = """
def test_one(flow_runner, swarm_contract):
    record = flow_runner("one")
    assert record.status == "succeeded", record.status
    swarm_contract.assert_run(record)
    (receipt,) = record.receipts.values()
    assert (receipt["engine"], receipt["provider"], receipt["model"]) == (
        "toy-step", "openai", "gpt-toy-1"
    )
    assert receipt["tokens"] == {"prompt": 11, "completion": 7, "total": 18}
"""


class _OpenAIServer:
    """Speaks POST /v1/chat/completions on 127.0.0.1, and keeps what it was sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.echo = False
        """Answer with the Authorization header in the reply, as a careless server may."""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.requests.append(
                    {
                        "path": self.path,
                        "auth": self.headers["Authorization"],
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                reply = {
                    "id": "chatcmpl-fake",
                    "model": "gpt-toy-1",
                    "choices": [
                        {
                            "message": {
                                "role": "assistant",
                                "content": f"Done. ({self.headers['Authorization']})"
                                if outer.echo
                                else "Done.",
                            }
                        }
                    ],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def openai_server() -> Iterator[_OpenAIServer]:
    server = _OpenAIServer()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _project(root: Path, section: str, url: str, extra: str = "") -> None:
    shutil.rmtree(root / "flows", ignore_errors=True)  # the project's flows are its own
    write_flow(root / "flows", "one", [step_yaml("ask")])
    config = root / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"engines:\n  {section}:\n    base_url: {url}\n    model: gpt-toy\n{extra}"
        "engine_strategy:\n  one:\n    ask: toy-step\n",
        encoding="utf-8",
    )


def test_an_openai_shaped_engine_from_a_conftest_runs_and_passes_the_contract(
    swarm_pytester: pytest.Pytester,
    openai_server: _OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _project(swarm_pytester.path, "toy", openai_server.url)
    swarm_pytester.makepyfile(openai_step=ENGINE, test_one=TEST)
    swarm_pytester.makeconftest(CONFTEST)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    # No step runs on claude-step: its start-up check asks for no Anthropic key or server.
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = swarm_pytester.runpytest("--swarm-mode=sdk", "--swarm-runs-dir=runs")
    result.assert_outcomes(passed=1)
    (request,) = openai_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == f"Bearer {FAKE_KEY}"
    assert request["body"]["model"] == "gpt-toy"  # from engines.toy in runtime.yaml
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    for path in (swarm_pytester.path / "runs").rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text(encoding="utf-8", errors="replace")


def test_a_key_in_an_engines_own_section_is_never_written(
    swarm_pytester: pytest.Pytester,
    openai_server: _OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-fake-section-secret-0001"
    _project(swarm_pytester.path, "toy", openai_server.url, f"    api_key: {secret}\n")
    openai_server.echo = True  # the server sends the key back inside its reply
    swarm_pytester.makepyfile(
        openai_step=ENGINE,
        test_one="""
        def test_one(flow_runner):
            record = flow_runner("one")
            assert record.status == "failed"
            assert "engines.toy.api_key" in record.cause()
        """,
    )
    swarm_pytester.makeconftest(CONFTEST)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = swarm_pytester.runpytest("--swarm-mode=sdk", "--swarm-runs-dir=runs")
    result.assert_outcomes(passed=1)
    assert openai_server.requests[0]["auth"] == f"Bearer {secret}"
    for path in (swarm_pytester.path / "runs").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path


def test_an_engine_section_no_engine_owns_is_named_with_the_sections_there_are(
    tmp_path: Path,
) -> None:
    _project(tmp_path, "opnai", "http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime", "run", "one", "--flows-dir", "flows"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "'engines.opnai' is no registered engine's section" in done.stderr
    assert "registered: claude, gemini, openai" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "swarm" / "runs").exists()  # no run was begun


def test_claude_steps_beside_an_engines_own_still_need_their_key_at_start_up(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(swarm_pytester.path, "toy", "http://127.0.0.1:9")
    write_flow(swarm_pytester.path / "flows", "two", [step_yaml("draft")])  # no strategy
    swarm_pytester.makepyfile(openai_step=ENGINE, test_one=TEST)
    swarm_pytester.makeconftest(CONFTEST)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = swarm_pytester.runpytest("--swarm-mode=sdk", "--swarm-runs-dir=runs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*mode sdk (from --swarm-mode)*needs ANTHROPIC_API_KEY*"])


def _readme_engine() -> str:
    """The docs' whole engine (docs/engines.md), as a user copies it into their conftest.py."""
    from tests.conftest import REPO
    from tests.docs.blocks import page_blocks

    page = REPO / "docs" / "engines.md"
    (block,) = [b for b in page_blocks(page, REPO) if b.id == "echo-conftest"]
    return block.body


README_ENGINE_TEST = """
def test_the_flow(flow_runner, swarm_contract):
    record = flow_runner("one")
    assert record.status == "succeeded", record.status
    swarm_contract.assert_run(record)
    receipts = list(record.receipts.values())
    assert {r["engine"] for r in receipts} == {"echo-step"}
    assert {r["transcript_path"] for r in receipts} == {
        "llm/ask-worker-echo.jsonl", "llm/answer-worker-echo.jsonl"
    }
"""


@pytest.mark.parametrize("mode", ["sdk", "stub"])
def test_the_readmes_engine_copied_into_a_project_passes_the_contract(
    swarm_pytester: pytest.Pytester, mode: str
) -> None:
    root = swarm_pytester.path
    shutil.rmtree(root / "flows")
    engine = "    engine: echo-step\n"
    write_flow(root / "flows", "one", [step_yaml("ask", engine), step_yaml("answer", engine)])
    swarm_pytester.makeconftest(_readme_engine())
    swarm_pytester.makepyfile(test_one=README_ENGINE_TEST)
    result = swarm_pytester.runpytest(f"--swarm-mode={mode}", "--swarm-runs-dir=runs")
    result.assert_outcomes(passed=1)
    (run,) = (root / "runs").iterdir()
    assert sorted(p.name for p in (run / "one" / "llm").iterdir()) == [
        "answer-worker-echo.jsonl",
        "ask-worker-echo.jsonl",
    ]


def test_a_transcript_line_with_content_that_is_no_string_is_named_with_what_it_held(
    swarm_pytester: pytest.Pytester,
) -> None:
    root = swarm_pytester.path
    shutil.rmtree(root / "flows")
    write_flow(root / "flows", "one", [step_yaml("ask", "    engine: echo-step\n")])
    # The SDK's content blocks handed on as they came, instead of the reply's text.
    conftest = _readme_engine().replace(
        'transcript=({"role": "assistant", "content": text},)',
        'transcript=({"role": "assistant", "content": [{"type": "text", "text": text}]},)',
    )
    assert conftest != _readme_engine()
    swarm_pytester.makeconftest(conftest)
    swarm_pytester.makepyfile(
        test_one="""
        def test_the_flow(flow_runner, swarm_contract):
            swarm_contract.assert_run(flow_runner("one"))
        """
    )
    result = swarm_pytester.runpytest("--swarm-mode=sdk", "--swarm-runs-dir=runs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*transcript contract broken in run run-*",
            "*one/llm/ask-worker-echo.jsonl:3: content: received [[]{'text': 'Done: *', "
            "'type': 'text'}[]] (list); allowed: a string, the message's text (an engine's "
            'StepOutcome.transcript line is {"role": "assistant", "content": text})*',
        ]
    )
