"""Signals at awkward moments: Ctrl-C while swarm is still importing, SIGHUP mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.processes import wait_for_line

# Sends this process a Ctrl-C the moment the named module starts importing, or the moment
# a function (``module:qualname``) returns (``@call``: is called): a deterministic "Ctrl-C
# at this point of start-up", with no timer. Ctrl-C in a terminal reaches a process that
# does not ignore SIGINT; a test run started in the background of a script would hand its
# children an ignored SIGINT, so the hook restores Python's own handler.
HOOK = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
point = os.environ["CTRL_C_AT"]
def _ctrl_c():
    open("ctrl-c-sent", "w").close()  # the test knows the point was reached
    os.kill(os.getpid(), signal.SIGINT)
if ":" in point:
    where, _, when = point.partition("@")
    module, qualname = where.split(":")
    def _watch(frame, event, arg):
        code = frame.f_code
        if event == (when or "return") and code.co_qualname == qualname and (
            frame.f_globals.get("__name__") == module
        ):
            sys.setprofile(None)
            _ctrl_c()
    sys.setprofile(_watch)
else:
    class _CtrlC:
        def find_spec(self, name, path=None, target=None):
            if name == point:
                sys.meta_path.remove(self)
                _ctrl_c()
            return None
    sys.meta_path.insert(0, _CtrlC())
"""


def _swarm_run(tmp_path: Path, point: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hook"), "CTRL_C_AT": point}
    proc = subprocess.run(
        [sys.executable, "-m", "swarm_runtime", "run", "stepwise-demo", "--runs-dir", "runs"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (tmp_path / "ctrl-c-sent").exists(), f"{point} was never reached"
    return proc


def _runs_end_with_run_completed(runs: Path) -> bool:
    return not runs.exists() or all(
        json.loads((run / "events.jsonl").read_text().splitlines()[-1])["kind"] == "run_completed"
        for run in runs.iterdir()
    )


@pytest.mark.parametrize(
    "point",
    [
        "typing",  # the first module the package's own import used to pull in
        "swarm_runtime.cli.main",
        "argparse",
        "swarm_runtime.flow.registry",
        "swarm_runtime.orchestrator.run",
        "swarm_runtime.config:resolve_settings",  # the settings are read
        "swarm_runtime.flow.registry:FlowRegistry.__init__",  # the flows dir is found
        "swarm_runtime.orchestrator.assembly:build_orchestrator",
    ],
)
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path, point: str) -> None:
    proc = _swarm_run(tmp_path, point)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "swarm: interrupted\n"
    assert _runs_end_with_run_completed(tmp_path / "runs")


@pytest.mark.parametrize(
    "point",
    [
        "swarm_runtime.orchestrator.run:Orchestrator.prepare@call",  # Ctrl-C is the run's now
        "swarm_runtime.flow.registry:FlowRegistry.get",  # the flows are loaded
        "swarm_runtime.orchestrator.recorder:RunRecorder.create",  # the run dir is made
        "swarm_runtime.orchestrator.run:RunBook.open",  # run_created is written
    ],
)
def test_ctrl_c_while_the_run_is_made_stops_it_before_its_first_step(
    tmp_path: Path, point: str
) -> None:
    proc = _swarm_run(tmp_path, point)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("swarm: stopped at a step boundary after 0 ")
    (run,) = (tmp_path / "runs").iterdir()
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "run_completed" and events[-1]["payload"]["status"] == "stopped"
    assert not [event for event in events if event["kind"] == "step_start"]


def test_sighup_ends_the_run_with_run_completed(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text("read_request: {delay_ms: 60000}\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "swarm_runtime",
            "run",
            "stepwise-demo",
            "--runs-dir",
            "runs",
            "--scenario",
            "slow.yaml",
            "--progress",
            "always",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_line(proc, "read_request")  # the step is under way
    proc.send_signal(signal.SIGHUP)  # the terminal went away
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    (run,) = (tmp_path / "runs").iterdir()
    last = json.loads((run / "events.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "run_completed" and last["payload"]["status"] == "stopped"
    assert json.loads((run / "meta.json").read_text())["status"] == "stopped"


def test_the_console_script_runs_nothing_of_swarms_outside_its_ctrl_c_handling() -> None:
    # What `from swarm_runtime.cli import main` imports runs before main() can catch a
    # Ctrl-C: only the package's own two small modules, nothing slow (not even typing).
    code = (
        "import re, sys; before = set(sys.modules); from swarm_runtime.cli import main; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) <= {
        "__future__",
        "swarm_runtime",
        "swarm_runtime.cli",
        "swarm_runtime.lazy",
        "swarm_runtime.versions",
    }
