"""``swarm run`` and friends as a user runs them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import step_yaml, write_flow


def _only_run(tmp_path: Path) -> Path:
    runs = list((tmp_path / "swarm" / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


def test_default_run_is_the_sdlc_in_stub_mode(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = cli("run")
    assert result.code == 0, result.err
    header = result.out.splitlines()[0].split()
    assert header == ["flow", "steps", "loops", "tokens", "cost_usd", "time_ms"]
    rows = [line.split()[0] for line in result.out.splitlines()[2:]]
    # security-scan ran inside review (a detour: docs/flows.md#detours-and-utility-flows), so its
    # row follows review's.
    assert rows[:8] == [
        "signal",
        "plan",
        "build",
        "review",
        "security-scan",
        "gate",
        "deploy",
        "wisdom",
    ]
    assert rows[8] == "total"
    run_dir = _only_run(tmp_path)
    assert f"run {run_dir.name}: succeeded" in result.out
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["mode"] == "stub" and spec["initiator"] == "cli"
    check = cli("runs", "validate", run_dir.name)
    assert check.code == 0, check.out


def test_progress_line_per_step_when_asked(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "signal", "--progress", "always")
    assert result.code == 0
    assert "[ ok ] signal/normalize_request" in result.out
    assert "loop -> author_requirements (loop_iteration:1)" in result.out


def test_no_progress_lines_when_not_a_terminal(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "signal")
    assert "[ ok ]" not in result.out


def test_failed_run_exits_1_and_says_why(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("author_requirements:\n  result_code: fatal\n  error: out of ideas\n")
    result = cli("run", "signal", "--scenario", str(scenario))
    assert result.code == 1
    assert "out of ideas" in result.err
    assert ": failed" in result.out


def test_usage_errors_exit_2_without_writing(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    for args, needle in [
        (("run", "nosuchflow"), "no flow 'nosuchflow'"),
        (("run", "signl"), "did you mean 'signal'"),
        (("run", "--mode", "warp"), "--mode: 'warp' is not one of"),
        (("run", "signal", "--from", "nope"), "--from nope"),
        (("run", "--backend", "other"), "--backend"),
        (("run", "--param", "novalue"), "KEY=VALUE"),
        (("run", "--flows-dir", str(tmp_path / "absent")), "does not exist"),
    ]:
        result = cli(*args)
        assert result.code == 2, (args, result.err)
        assert needle in result.err, (args, result.err)
        assert "Traceback" not in result.err
    assert not (tmp_path / "swarm" / "runs").exists() or not any(
        (tmp_path / "swarm" / "runs").iterdir()
    )


def test_bad_scenario_file_is_a_usage_error(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("author_requirements:\n  resut_code: fatal\n")
    result = cli("run", "signal", "--scenario", str(scenario))
    assert result.code == 2
    assert "unknown key 'resut_code'" in result.err and str(scenario) in result.err


def test_env_runs_dir_and_flag_precedence(
    cli: Callable[..., CliResult], tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SWARM_RUNS_DIR", str(tmp_path / "from-env"))
    assert cli("run", "stepwise-demo").code == 0
    assert len(list((tmp_path / "from-env").iterdir())) == 1
    assert cli("run", "stepwise-demo", "--runs-dir", str(tmp_path / "from-flag")).code == 0
    assert len(list((tmp_path / "from-flag").iterdir())) == 1
    assert len(list((tmp_path / "from-env").iterdir())) == 1


def test_runtime_yaml_sets_mode_and_bad_value_names_the_file(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    config = tmp_path / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("engines:\n  claude:\n    mode: turbo\n")
    result = cli("run", "stepwise-demo")
    assert result.code == 2
    assert "runtime.yaml: engines.claude.mode" in result.err and "'turbo'" in result.err
    config.write_text("enignes: {}\n")
    result = cli("run", "stepwise-demo")
    assert result.code == 2 and "unknown key 'enignes'" in result.err


def test_users_own_flows_dir_without_flows_yaml(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    write_flow(mine, "beta", [step_yaml("one")])
    write_flow(mine, "alpha", [step_yaml("first"), step_yaml("second")])
    result = cli("run", "--flows-dir", str(mine))
    assert result.code == 0, result.err
    rows = [line.split()[0] for line in result.out.splitlines()[2:4]]
    assert rows == ["alpha", "beta"]  # sorted when there is no flows.yaml
    listing = cli("flows", "list", "--flows-dir", str(mine))
    assert "alpha" in listing.out and "beta" in listing.out


def test_flows_show_and_list(cli: Callable[..., CliResult]) -> None:
    shown = cli("flows", "show", "signal")
    assert shown.code == 0
    assert "microloop -> author_requirements until status in VERIFIED" in shown.out
    listed = cli("flows", "list")
    assert listed.code == 0 and "stepwise-demo" in listed.out


def test_runs_list_and_show(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    assert cli("run", "signal").code == 0
    run_dir = _only_run(tmp_path)
    listed = cli("runs", "list")
    assert run_dir.name in listed.out and "succeeded" in listed.out
    shown = cli("runs", "show", run_dir.name)
    assert shown.code == 0
    assert "signal/critique_requirements" in shown.out
    assert "loop -> author_requirements (loop_iteration:1)" in shown.out
    # The flow's last step ends the flow: the table says so, and never prints "None".
    assert "terminate (end_of_flow)" in shown.out
    assert "None" not in shown.out


def _times(table: str) -> dict[str, int]:
    """The final table's time_ms per row (flow, and ``total``)."""
    rows = [line.split() for line in table.splitlines()]
    start = next(i for i, row in enumerate(rows) if row[:1] == ["flow"]) + 2
    return {row[0]: int(row[5]) for row in rows[start:] if len(row) >= 6}


def test_a_resumed_runs_total_time_holds_its_earlier_attempts(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    shutil.rmtree(tmp_path / "flows")
    write_flow(tmp_path / "flows", "two", [step_yaml("slow"), step_yaml("approve")])
    (tmp_path / "scenario.yaml").write_text(
        "slow: {delay_ms: 1500}\napprove: {result_code: blocked, error: needs a yes}\n"
    )
    first = cli("run", "two", "--scenario", "scenario.yaml")
    assert first.code == 130, first.err  # paused at the blocked step
    assert _times(first.out)["two"] >= 1500
    resumed = cli("resume", _only_run(tmp_path).name, "--input", "yes")
    assert resumed.code == 0, resumed.err
    times = _times(resumed.out)
    assert times["two"] >= 1500  # the flow's time counts the first attempt's step
    assert times["total"] >= times["two"]


def test_schema_prints_json_schema(cli: Callable[..., CliResult]) -> None:
    result = cli("schema", "receipt")
    schema = json.loads(result.out)
    assert "tokens" in schema["properties"] and "engine" in schema["required"]
    event = json.loads(cli("schema", "event").out)
    assert "run_completed" in json.dumps(event)
    assert cli("schema", "nope").code == 2
    result_schema = json.loads(cli("schema", "step_result").out)
    assert result_schema["additionalProperties"] is False
    assert set(result_schema["required"]) == {"step_id", "status"}
    context = json.loads(cli("schema", "step_context").out)
    assert "history" in context["properties"] and "HistoryItem" in json.dumps(context)
    for name in ("transcript", "run_spec", "run_summary"):
        assert cli("schema", name).code == 0


def test_packaged_flows_are_used_outside_a_project(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    shutil.rmtree(tmp_path / "flows")
    result = cli("flows", "list")
    assert result.code == 0 and "signal" in result.out
    assert SHIPPED_FLOWS.is_dir()


def test_swarm_run_keeps_heavy_imports_off_the_run_path(tmp_path: Path) -> None:
    """Start-up time is part of the product: a stub run loads no pydantic, no dataclasses.

    (``inspect`` is not on the list: the records are ``msgspec`` structs, and ``msgspec``
    imports it through ``typing_extensions``.)
    """
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from swarm_runtime.cli.main import main\n"
        f"code = main(['run', 'stepwise-demo', '--flows-dir', {str(SHIPPED_FLOWS)!r},"
        f" '--runs-dir', {str(tmp_path / 'runs')!r}])\n"
        "heavy = sorted(m for m in ('pydantic', 'dataclasses', 'secrets', 'difflib')"
        " if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout


def test_progress_on_a_terminal_replaces_the_running_line() -> None:
    import io

    from swarm_runtime.cli.render import ProgressPrinter

    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=True)
    base = {"flow_key": "f", "step_id": "s"}
    printer.swarm_event({**base, "kind": "step_start", "payload": {}})
    assert stream.getvalue() == "[ .. ] f/s"
    printer.swarm_event(
        {**base, "kind": "step_end", "payload": {"status": "succeeded", "duration_ms": 3}}
    )
    assert stream.getvalue() == "[ .. ] f/s\r\x1b[K[ ok ] f/s (3 ms)\n"


def test_sdk_mode_from_the_command_line(
    cli: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch,
    anthropic_server,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-cli-test")
    config = tmp_path / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("engines:\n  claude:\n    model: claude-haiku-4-5\n")
    result = cli("run", "stepwise-demo", "--mode", "sdk")
    assert result.code == 0, result.err
    run_dir = _only_run(tmp_path)
    receipt = json.loads(next(run_dir.glob("stepwise-demo/receipts/*.json")).read_text())
    assert (receipt["mode"], receipt["provider"], receipt["model"]) == (
        "sdk",
        "anthropic_compat",
        "claude-haiku-4-5",
    )
    assert "0.0000" not in result.out.splitlines()[-2]  # the total row shows a real cost
    assert cli("runs", "validate", run_dir.name).code == 0


def test_sdk_run_of_a_model_without_a_price_shows_an_unknown_cost(
    cli: Callable[..., CliResult],
    monkeypatch,
    anthropic_server,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-cli-test")
    config = Path.cwd() / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("engines:\n  claude:\n    model: claude-without-a-price\n")
    result = cli("run", "stepwise-demo", "--mode", "sdk")
    assert result.code == 0, result.err
    total = next(line for line in result.out.splitlines() if line.startswith("total"))
    assert "\u2014" in total and "0.0000" not in total
    assert "cost unknown" in result.out


def test_cli_usage_errors_exit_2(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    result = cli("run", "stepwise-demo", "--runs-dir", str(tmp_path / "afile"))
    assert result.code == 2 and "exists and is not a directory" in result.err
    result = cli("run", "stepwise-demo", "--mode", "sdk")  # no key in this environment
    assert result.code == 2 and "sdk mode needs ANTHROPIC_API_KEY" in result.err
    result = cli("run", "stepwise-demo", "--mode", "warp")
    assert result.code == 2 and "--mode: 'warp' is not one of" in result.err
    config = tmp_path / "rt.yaml"
    config.write_text("runs_dir: [a, b]\n")
    result = cli("run", "stepwise-demo", "--config", str(config))
    assert result.code == 2 and "'runs_dir' must be a path" in result.err
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("run", "--flows-dir", str(empty))
    assert result.code == 2 and str(empty) in result.err


@pytest.mark.parametrize("value", ["-1", "0", "ten", "2.5"])
def test_max_steps_below_one_is_a_usage_error(cli: Callable[..., CliResult], value: str) -> None:
    result = cli("run", "signal", "--max-steps", value)
    assert result.code == 2
    assert f"--max-steps: {value!r} is not allowed: give a whole number >= 1" in result.err
