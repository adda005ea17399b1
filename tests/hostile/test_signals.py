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

# Sends this process a Ctrl-C the moment the named module starts importing: a
# deterministic "Ctrl-C during imports", with no timer. Ctrl-C in a terminal reaches a
# process that does not ignore SIGINT; a test run started in the background of a script
# would hand its children an ignored SIGINT, so the hook restores Python's own handler.
HOOK = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
class _CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["CTRL_C_AT"]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, _CtrlC())
"""


@pytest.mark.parametrize(
    "module",
    [
        "swarm_runtime.cli.main",
        "argparse",
        "swarm_runtime.flow.registry",
        "swarm_runtime.orchestrator.runner",
    ],
)
def test_ctrl_c_during_imports_is_one_line_and_exit_130(tmp_path: Path, module: str) -> None:
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hook"), "CTRL_C_AT": module}
    proc = subprocess.run(
        [sys.executable, "-m", "swarm_runtime", "run", "stepwise-demo", "--runs-dir", "runs"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "swarm: interrupted\n"
    assert not (tmp_path / "runs").exists() or all(
        json.loads((run / "events.jsonl").read_text().splitlines()[-1])["kind"] == "run_completed"
        for run in (tmp_path / "runs").iterdir()
    )


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
