"""A fault plan in cli mode, as a user runs it: which kinds a live CLI run takes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import SHIPPED_FLOWS


def test_an_http_fault_in_a_live_cli_run_is_a_usage_error_naming_where_it_is_served(
    tmp_path: Path,
) -> None:
    shutil.copytree(SHIPPED_FLOWS, tmp_path / "flows")
    (tmp_path / "plan.yaml").write_text("read_request: [{kind: http_429, retry_after_ms: 0}]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env.update(SWARM_CACHE_DIR=os.environ["SWARM_CACHE_DIR"], SWARM_CLAUDE_CLI="no-such-claude")
    args = ["run", "stepwise-demo", "--mode", "cli", "--faults", "plan.yaml", "--runs-dir", "runs"]
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "plan.yaml: read_request[0]: http_429 is not injected in cli mode here" in done.stderr
    assert "--mode record --record-via cli" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
