"""``swarm studio`` as a user starts it: a process that serves the runs until Ctrl-C."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from swarm_runtime.install import install_command
from tests.conftest import SHIPPED_FLOWS
from tests.studio.conftest import SWARM, swarm, swarm_env

pytest.importorskip("starlette", reason="the studio extra: pip install -e '.[studio]'")


def test_swarm_studio_serves_the_runs_of_the_project_until_ctrl_c(tmp_path: Path) -> None:
    shutil.copytree(SHIPPED_FLOWS, tmp_path / "flows")
    assert swarm("run", "stepwise-demo", cwd=tmp_path).returncode == 0
    (run_id,) = [p.name for p in (tmp_path / "swarm" / "runs").iterdir()]
    studio = subprocess.Popen(
        [*SWARM, "studio", "--port", "0"],
        cwd=tmp_path,
        env=swarm_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert studio.stdout is not None
        first = studio.stdout.readline()
        assert first.startswith("Flow Studio: http://127.0.0.1:"), first
        url = first.split(": ", 1)[1].strip()
        with urllib.request.urlopen(url + "api/runs", timeout=30) as answer:
            listing = json.load(answer)
        assert [r["run_id"] for r in listing["runs"]] == [run_id]
        with urllib.request.urlopen(f"{url}?run={run_id}", timeout=30) as answer:
            assert b"/static/studio.js" in answer.read()
        studio.send_signal(signal.SIGINT)
        _, err = studio.communicate(timeout=60)
    finally:
        if studio.poll() is None:
            studio.kill()
            studio.wait()
    assert studio.returncode == 0, err
    assert "Traceback" not in err
    assert (tmp_path / "swarm" / "runs" / ".studio" / "index.sqlite3").is_file()


def test_a_busy_port_and_a_public_host_are_explained(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        taken = swarm(
            "studio", "--port", str(port), "--flows-dir", str(SHIPPED_FLOWS), cwd=tmp_path
        )
        assert taken.returncode == 2
        assert f"cannot listen on 127.0.0.1:{port}" in taken.stderr
        assert "pass another --port" in taken.stderr and "Traceback" not in taken.stderr
        public = swarm(
            "studio",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--flows-dir",
            str(SHIPPED_FLOWS),
            cwd=tmp_path,
        )
    assert "warning: serving on 0.0.0.0, not loopback" in public.stderr
    assert public.returncode == 2  # the port was still taken: nothing listened


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    for args, text in (
        (("--port", "70000"), "--port 70000: a port is 0 to 65535"),
        (("--runs-dir", "a-file"), "is not a directory"),
        (("--golden-dir", "nowhere"), "--golden-dir nowhere: no such directory"),
        (("--host", "no-such-host.invalid"), "--host no-such-host.invalid: cannot resolve it"),
        (
            ("--host", "no-such-host.invalid", "--allow-host", "*"),
            "--allow-host '*': not a host name or IP address",
        ),
    ):
        done = swarm("studio", "--flows-dir", str(SHIPPED_FLOWS), *args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert text in done.stderr and "Traceback" not in done.stderr


def test_without_the_studio_extra_it_says_what_to_install(tmp_path: Path) -> None:
    hide = (
        "import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None; "
        "from swarm_runtime.cli.main import main; sys.exit(main(['studio', '--port', '0']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide], cwd=tmp_path, env=swarm_env(), capture_output=True, text=True
    )
    assert done.returncode == 2
    assert install_command("studio") in done.stderr
    assert "Traceback" not in done.stderr
