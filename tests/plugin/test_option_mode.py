"""--swarm-mode: precedence CLI > env > ini > default, the header, bad values, credentials."""

from __future__ import annotations

import pytest

SHOW_MODE = """
def test_mode(swarm_mode, swarm_options):
    print("MODE=" + swarm_mode + " FROM=" + swarm_options.sources["mode"])
"""


def _mode(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    line = next(line for line in result.outlines if "MODE=" in line)
    return line[line.index("MODE=") :]


@pytest.mark.parametrize(
    ("cli", "env", "ini", "expected"),
    [
        (None, None, None, "MODE=stub FROM=default"),
        (None, None, "replay", "MODE=replay FROM=ini swarm_mode"),
        (None, "replay", "stub", "MODE=replay FROM=SWARM_MODE"),
        ("stub", "replay", "replay", "MODE=stub FROM=--swarm-mode"),
    ],
)
def test_precedence(
    swarm_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    cli: str | None,
    env: str | None,
    ini: str | None,
    expected: str,
) -> None:
    swarm_pytester.makepyfile(SHOW_MODE)
    if ini:
        swarm_pytester.makeini(f"[pytest]\nswarm_mode = {ini}\n")
    if env:
        monkeypatch.setenv("SWARM_MODE", env)
    args = [f"--swarm-mode={cli}"] if cli else []
    assert _mode(swarm_pytester, *args) == expected


def test_mode_in_report_header(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(SHOW_MODE)
    result = swarm_pytester.runpytest("--swarm-mode=replay")
    result.stdout.fnmatch_lines(
        ["swarm: mode=replay (--swarm-mode), record mode none, network blocked, flows=*flows*"]
    )


@pytest.mark.parametrize("source", ["cli", "env", "ini"])
def test_invalid_mode_names_its_source(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    swarm_pytester.makepyfile(SHOW_MODE)
    args: list[str] = []
    if source == "cli":
        args = ["--swarm-mode=live"]
        where = "--swarm-mode"
    elif source == "env":
        monkeypatch.setenv("SWARM_MODE", "live")
        where = "SWARM_MODE"
    else:
        swarm_pytester.makeini("[pytest]\nswarm_mode = live\n")
        where = "ini swarm_mode"
    result = swarm_pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*mode 'live' from {where} is not one of stub, replay, record, sdk, cli*"]
    )


def test_sdk_without_api_key_stops_at_startup(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(SHOW_MODE)
    result = swarm_pytester.runpytest("--swarm-mode=sdk")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*mode sdk (from --swarm-mode) makes live API calls and needs ANTHROPIC_API_KEY*"]
    )
    assert "Traceback" not in result.stderr.str()
    assert "MODE=" not in result.stdout.str()  # nothing ran


def test_help_and_collect_only_work_without_credentials(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_MODE", "sdk")
    swarm_pytester.makepyfile(SHOW_MODE)
    assert swarm_pytester.runpytest("--help").ret == 0
    assert swarm_pytester.runpytest("--collect-only").ret == 0
    result = swarm_pytester.runpytest()
    result.stderr.fnmatch_lines(["*mode sdk (from SWARM_MODE) makes live API calls*"])


def test_sdk_with_a_key_starts(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-test-key")
    swarm_pytester.makepyfile(SHOW_MODE)
    assert _mode(swarm_pytester, "--swarm-mode=sdk") == "MODE=sdk FROM=--swarm-mode"


@pytest.mark.parametrize("mode", ["record", "sdk"])
def test_record_and_sdk_accept_a_base_url_instead_of_a_key(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # As `swarm run --mode sdk` does: a local Anthropic-compatible server needs no key.
    swarm_pytester.makepyfile(SHOW_MODE)
    result = swarm_pytester.runpytest(f"--swarm-mode={mode}")
    result.stderr.fnmatch_lines(["*needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL*"])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert _mode(swarm_pytester, f"--swarm-mode={mode}") == f"MODE={mode} FROM=--swarm-mode"


def test_cli_mode_needs_the_executable(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_CLAUDE_CLI", "/nonexistent/claude")
    swarm_pytester.makepyfile(SHOW_MODE)
    result = swarm_pytester.runpytest("--swarm-mode=cli")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'/nonexistent/claude' is not on PATH*SWARM_CLAUDE_CLI*"])


IMPORTS_PROBE = """
import sys
from pathlib import Path

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    found = [name for name in ("anthropic", "openai", "vcr") if name in sys.modules]
    Path("imported.txt").write_text(" ".join(found) or "none")
"""


def test_a_replay_session_starts_without_importing_a_provider_sdk_or_vcrpy(
    swarm_pytester: pytest.Pytester,
) -> None:
    # The check that replay has what it needs finds the packages; a process that replays
    # nothing (xdist's controller, this session) never imports them.
    swarm_pytester.makeconftest(IMPORTS_PROBE)
    swarm_pytester.makepyfile("def test_x():\n    pass\n")
    result = swarm_pytester.runpytest_subprocess("--swarm-mode=replay")
    result.assert_outcomes(passed=1)
    assert (swarm_pytester.path / "imported.txt").read_text() == "none"
