"""Every hostile input is refused with one line naming it: no traceback, no crash, no
hang, nothing written outside the runs dir (docs/bad-input.md)."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Outcome, files_under

DEEP = "[" * 25_000 + "]" * 25_000
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['xxxxxxxx'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefgh", strict=True)
)
"""Nine to the eighth power strings from ~300 bytes: a "billion laughs"."""


def _memory_cap() -> None:
    # The bomb must be refused within a bound: with 1 GiB of address space, expanding it
    # (gigabytes) would end in MemoryError, which the test would see as a traceback.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _write(project: Path, name: str, text: str | bytes) -> None:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


Setup = Callable[[Path], None]
CASES: list[tuple[str, Setup, list[str | bytes], dict[str, str], int, list[str]]] = [
    (
        "flow nested 25 000 deep (run)",
        lambda p: _write(p, "flows/deep.yaml", f"key: deep\nsteps: {DEEP}\n"),
        ["run", "deep", "--flows-dir", "flows", "--runs-dir", "runs"],
        {},
        2,
        ["deep.yaml", "nesting deeper than"],
    ),
    (
        "scenario nested 25 000 deep",
        lambda p: _write(p, "scenario.yaml", f"a: {DEEP}\n"),
        ["run", "stepwise-demo", "--scenario", "scenario.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["scenario.yaml", "nesting deeper than"],
    ),
    (
        "runtime.yaml nested 25 000 deep",
        lambda p: _write(p, "swarm/config/runtime.yaml", f"engines: {DEEP}\n"),
        ["run", "stepwise-demo", "--runs-dir", "runs"],
        {},
        2,
        ["runtime.yaml", "nesting deeper than"],
    ),
    (
        "scenario alias bomb",
        lambda p: _write(p, "bomb.yaml", BOMB + "x: {handoff: {h: *h}}\n"),
        ["run", "stepwise-demo", "--scenario", "bomb.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["bomb.yaml", "expands to more than"],
    ),
    (
        "flow alias bomb",
        lambda p: _write(p, "flows/bomb.yaml", BOMB),
        ["run", "bomb", "--flows-dir", "flows", "--runs-dir", "runs"],
        {},
        2,
        ["bomb.yaml", "expands to more than"],
    ),
    (
        "scenario bigger than the input limit",
        lambda p: _write(p, "big.yaml", "a: '" + "x" * (9 << 20) + "'\n"),
        ["run", "stepwise-demo", "--scenario", "big.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["big.yaml", "at most"],
    ),
    (
        "scenario that is a FIFO (would block a reader)",
        lambda p: os.mkfifo(p / "fifo.yaml"),
        ["run", "stepwise-demo", "--scenario", "fifo.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["fifo.yaml", "not a regular file"],
    ),
    (
        "scenario not UTF-8",
        lambda p: _write(p, "latin.yaml", b"a: caf\xe9\n"),
        ["run", "stepwise-demo", "--scenario", "latin.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["cannot read scenario file latin.yaml", "is not UTF-8 (byte 0xe9"],
    ),
    (
        "param that is not UTF-8",
        lambda p: None,
        ["run", "stepwise-demo", "--runs-dir", "runs", "--param", b"x=\xff\xfe"],
        {},
        2,
        ["not valid UTF-8", "x=\\xff\\xfe"],
    ),
    (
        "empty --runs-dir",
        lambda p: None,
        ["run", "stepwise-demo", "--runs-dir", ""],
        {},
        2,
        ["--runs-dir", "empty path"],
    ),
    (
        "runs dir is a dangling symlink",
        lambda p: os.symlink(p / "nowhere", p / "runs"),
        ["run", "stepwise-demo", "--runs-dir", "runs"],
        {},
        2,
        ["runs", "symlink", "does not exist"],
    ),
    (
        "runs dir below a file (cannot be created)",
        lambda p: _write(p, "afile", "x"),
        ["run", "stepwise-demo", "--runs-dir", "afile/runs"],
        {},
        2,
        # Our words and the dir; the OS's reason (strerror) is not asserted.
        ["cannot create runs dir", "afile/runs", "choose another with --runs-dir"],
    ),
    (
        "runs dir is a file",
        lambda p: _write(p, "afile", "x"),
        ["run", "stepwise-demo", "--runs-dir", "afile"],
        {},
        2,
        ["afile", "not a directory"],
    ),
    (
        "runtime.yaml is a directory",
        lambda p: (p / "swarm/config/runtime.yaml").mkdir(parents=True),
        ["run", "stepwise-demo", "--runs-dir", "runs"],
        {},
        2,
        ["runtime.yaml", "not a readable file"],
    ),
    (
        "SWARM_GEMINI_STUB out of range",
        lambda p: None,
        ["run", "stepwise-demo", "--runs-dir", "runs"],
        {"SWARM_GEMINI_STUB": "7"},
        2,
        ["SWARM_GEMINI_STUB: '7'", "1 (stub, the default), 0 (run the Gemini CLI)"],
    ),
    (
        "scenario tokens of 10**29",
        lambda p: _write(p, "s.yaml", f"x: {{tokens: {{prompt: {10**29}}}}}\n"),
        ["run", "stepwise-demo", "--scenario", "s.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["s.yaml", "tokens", "1000000000"],
    ),
    (
        "scenario delay of years",
        lambda p: _write(p, "s.yaml", "x: {delay_ms: 100000000000}\n"),
        ["run", "stepwise-demo", "--scenario", "s.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["s.yaml", "delay_ms", "3600000"],
    ),
    (
        "scenario retry_after_ms of years",
        lambda p: _write(
            p, "s.yaml", "x: {result_code: retryable, retry_after_ms: 100000000000}\n"
        ),
        ["run", "stepwise-demo", "--scenario", "s.yaml", "--runs-dir", "runs"],
        {},
        2,
        ["s.yaml", "retry_after_ms", "3600000"],
    ),
    (
        "runs list of a missing dir",
        lambda p: None,
        ["runs", "list", "--runs-dir", "missing"],
        {},
        2,
        ["missing", "no such directory"],
    ),
]


@pytest.mark.parametrize(
    ("setup", "args", "env", "code", "needles"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_hostile_input_is_refused_in_one_line(
    swarm: Callable[..., Outcome],
    setup: Setup,
    args: list[str | bytes],
    env: dict[str, str],
    code: int,
    needles: list[str],
) -> None:
    project = swarm("--help").cwd
    setup(project)
    before = files_under(project)
    result = swarm(*args, env=env, preexec=_memory_cap)
    assert result.code == code, result.err
    result.one_line_error(*needles)
    assert files_under(project) == before  # refused before anything was written


def test_flows_validate_reports_the_deep_file_and_does_not_crash(
    swarm: Callable[..., Outcome],
) -> None:
    project = swarm("--help").cwd
    _write(project, "flows/deep.yaml", f"key: deep\nsteps: {DEEP}\n")
    result = swarm("flows", "validate", "flows")
    assert result.code == 2  # a segfault was 139
    assert "Traceback" not in result.err
    assert "flows/deep.yaml:2: invalid YAML: nesting deeper than 100 levels" in (
        result.out + result.err
    )


def test_params_too_big_or_not_json_are_refused_where_they_enter(
    swarm: Callable[..., Outcome],
) -> None:
    many = [arg for n in range(5) for arg in ("--param", f"p{n}=" + "x" * 60_000)]
    big = swarm("run", "stepwise-demo", "--runs-dir", "runs", *many)
    assert big.code == 2
    big.one_line_error("the params are 300020 bytes; at most 262144")
    assert not (big.cwd / "runs").exists()


def test_a_run_dir_past_its_size_limit_ends_the_run_cleanly(
    swarm: Callable[..., Outcome],
) -> None:
    from swarm_runtime.contracts.check import validate_run_dir
    from swarm_runtime.flow.registry import FlowRegistry
    from tests.conftest import SHIPPED_FLOWS

    project = swarm("--help").cwd
    # Every reply 200 KB: each transcript carries it, and the history of the ones before.
    steps = [s.id for s in FlowRegistry(SHIPPED_FLOWS).get("stepwise-demo").steps]
    reply = "'" + "x" * 200_000 + "'"
    (project / "s.yaml").write_text("".join(f"{step}:\n  text: {reply}\n" for step in steps))
    result = swarm(
        "run",
        "stepwise-demo",
        "--scenario",
        "s.yaml",
        "--runs-dir",
        "runs",
        "--max-steps",
        "100000",
        "--max-run-mb",
        "3",  # spec.json holds the scenario: 2 MB of it
    )
    assert result.code == 1
    assert "past its limit of 3 MiB" in result.err and "--max-run-mb" in result.err
    (run_dir,) = (project / "runs").iterdir()
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    # Ended before the write that would have passed the limit: past it are only the lines
    # that close the run (step_error, run_completed, meta.json), a few KiB.
    assert 2 << 20 < size <= (3 << 20) + (16 << 10), size
    assert validate_run_dir(run_dir) == []  # and cleanly: run_completed, meta agreeing
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [event["kind"] for event in events]
    assert kinds[-2:] == ["step_error", "run_completed"]
    assert "past its limit of 3 MiB" in events[-2]["payload"]["error"]
    assert kinds.count("step_end") >= 2  # it ended part-way through, not at its start
    assert kinds.count("step_end") < len(steps)  # the flow was not run to its end
