"""``swarm run`` with plugins installed: a listener and an engine from an entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swarm_runtime.storage.store import read_event_log
from tests.conftest import SHIPPED_FLOWS, plugin_distribution
from tests.runtime.helpers import step_yaml, write_flow

TAP = """
import json
import os

from swarm_runtime.engines.stub import StubEngine


def swarm_event(event, run_dir, followed):
    with open(os.environ["TAP_FILE"], "a", encoding="utf-8") as stream:
        stream.write(json.dumps([event["seq"], event["kind"], run_dir.name, followed]) + "\\n")


def swarm_register_engines(registry):
    registry.register("tap-step", lambda options: StubEngine(
        engine_id="tap-step", engine_short="tap", scenario=options.scenario))
"""

OLD = """
from swarm_runtime.engines.stub import StubEngine


def register(registry):
    registry.register("old-step", lambda options: StubEngine(
        engine_id="old-step", engine_short="old", scenario=options.scenario))
"""


def _swarm(tmp_path: Path, plugins: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    env["PYTHONPATH"] = os.pathsep.join([str(plugins), *sys.path])
    env["TAP_FILE"] = str(tmp_path / "tap.jsonl")
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "run", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_installed_listener_hears_every_event_beside_the_progress_lines(
    tmp_path: Path,
) -> None:
    plugins = plugin_distribution(
        tmp_path / "site", "swarm_tap", TAP, "[swarm_runtime]\ntap = swarm_tap\n"
    )
    write_flow(tmp_path / "flows", "tapped", [step_yaml("one", "engine: tap-step")])
    done = _swarm(tmp_path, plugins, "tapped", "--flows-dir", "flows", "--progress", "always")
    assert done.returncode == 0, done.stderr
    assert "[ ok ] tapped/one" in done.stdout  # the progress lines, side by side with it
    (run_dir,) = (tmp_path / "swarm" / "runs").iterdir()
    events = read_event_log(run_dir / "events.jsonl").events
    heard = [json.loads(line) for line in (tmp_path / "tap.jsonl").read_text().splitlines()]
    assert heard == [[e["seq"], e["kind"], run_dir.name, False] for e in events]
    receipt = json.loads((run_dir / "tapped" / "receipts" / "one-worker.json").read_text())
    assert receipt["engine"] == "tap-step"  # its engine too, from the same module
    assert done.stderr.count("warning") == 0


def test_the_old_engines_entry_point_group_still_works_and_says_what_to_write_instead(
    tmp_path: Path,
) -> None:
    plugins = plugin_distribution(
        tmp_path / "site", "swarm_old", OLD, "[swarm_runtime.engines]\nold = swarm_old:register\n"
    )
    write_flow(tmp_path / "flows", "aged", [step_yaml("one", "engine: old-step")])
    done = _swarm(tmp_path, plugins, "aged", "--flows-dir", "flows")
    assert done.returncode == 0, done.stderr
    assert "DeprecationWarning: engine plugin 'old' (swarm_old:register)" in done.stderr
    assert "swarm_register_engines(registry)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_plugin_that_fails_to_load_is_said_once_and_the_run_goes_on(tmp_path: Path) -> None:
    plugins = plugin_distribution(
        tmp_path / "site", "swarm_bad", "raise ImportError('needs a lib')\n",
        "[swarm_runtime]\nbad = swarm_bad\n",
    )  # fmt: skip
    done = _swarm(tmp_path, plugins, "stepwise-demo", "--flows-dir", str(SHIPPED_FLOWS))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "swarm: warning: plugin 'bad' (swarm_bad, entry point group 'swarm_runtime') is left "
        "out: ImportError: needs a lib"
    ]
