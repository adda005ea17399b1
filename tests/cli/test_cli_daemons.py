"""A daemon a step's CLI starts does not outlive ``swarm run``: the run reaps it.

The fake Claude Code CLI (``SWARM_CLAUDE_CLI``) starts a daemon as tools do (double fork,
``setsid``, streams on /dev/null) and answers; the daemon is out of reach of the CLI's
process group, yet it is killed when the step ends, by the ``swarm`` process it was
reparented to (a child subreaper, on Linux).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.engines.test_cli_engine import FAKE, _alive
from tests.runtime.helpers import step_yaml, write_flow

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the run reaps a CLI's daemons on Linux"
)


def test_a_daemon_a_steps_cli_started_is_reaped_by_swarm_run(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "solo", [step_yaml("only")])
    claude = tmp_path / "claude"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    claude.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env.update(
        SWARM_CACHE_DIR=os.environ["SWARM_CACHE_DIR"],
        SWARM_CLAUDE_CLI=str(claude),
        HOME=str(tmp_path),
        FAKE_CLI_CASE="daemon",
        FAKE_CLI_PIDS=str(tmp_path / "pids"),
    )
    args = ["run", "solo", "--mode", "cli", "--flows-dir", "flows", "--runs-dir", "runs"]
    swarm = subprocess.Popen(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args, "--progress", "never"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = swarm.communicate()
    cli, daemon = (int(pid) for pid in (tmp_path / "pids").read_text().split())
    alive = _alive(daemon)
    if alive:
        os.kill(daemon, signal.SIGKILL)  # so a failure here leaves nothing behind
    assert swarm.returncode == 0, err
    assert not alive, "the daemon the step's CLI started outlived the run"
    assert not _alive(cli)
    # It was the run's to reap: reparented to the swarm process, not to init.
    assert int((tmp_path / "pids.parent").read_text()) == swarm.pid
