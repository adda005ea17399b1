"""Listeners of a run on a Celery worker: the user's conftest.py one and an installed one.

A ``swarm worker`` loads the plugins of the ``swarm_runtime`` entry point group (here a
tiny distribution on its ``PYTHONPATH`` whose listener writes what it hears to a file) and
its runs call them; the process that submitted the run follows its events from the run dir
and tells its own listeners (here a ``conftest.py``'s, in a user's pytest session).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from swarm_runtime.storage.store import read_event_log
from tests.conftest import REPO, plugin_distribution
from tests.distributed.conftest import Workers, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")

EXPORTER = """
import json
import os


def swarm_event(event, run_dir, followed):
    with open(os.environ["EXPORT_FILE"], "a", encoding="utf-8") as stream:
        stream.write(json.dumps([run_dir.name, event["seq"], event["kind"], followed]) + "\\n")
"""

CONFTEST = """
HEARD = []


def swarm_event(event, run_dir, followed):
    HEARD.append([run_dir.name, event["seq"], event["kind"], followed])
"""

TEST = """
import json
from pathlib import Path

from conftest import HEARD
from swarm_runtime.service import get_backend


def test_a_run_on_a_worker(isolated_runs_env):
    backend = get_backend(
        "celery", runs_dir=Path({runs!r}), flows_dir=Path({flows!r}), mode="stub",
        broker={broker!r},
    )
    run_id = backend.start({{"flows": ["signal"]}})
    assert backend.wait(run_id, timeout=300)["status"] == "succeeded"
    lines = (Path({runs!r}) / run_id / "events.jsonl").read_text().splitlines()
    log = [json.loads(line) for line in lines]
    assert HEARD == [[run_id, e["seq"], e["kind"], True] for e in log]
    Path({runs!r}, "run_id").write_text(run_id)
"""


def test_a_conftest_listener_and_an_installed_one_both_hear_every_event_of_a_workers_run(
    workers: Workers, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    site = plugin_distribution(
        tmp_path / "site", "swarm_export", EXPORTER, "[swarm_runtime]\nexport = swarm_export\n"
    )
    env = swarm_env()
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    env["EXPORT_FILE"] = str(tmp_path / "exported.jsonl")
    workers.start(env=env)

    pytester.makeconftest(CONFTEST)
    runs, flows = str(workers.runs_dir), str(REPO / "flows")
    pytester.makepyfile(TEST.format(runs=runs, flows=flows, broker=workers.broker))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    run_id = (workers.runs_dir / "run_id").read_text()
    log = read_event_log(workers.runs_dir / run_id / "events.jsonl").events
    exported = [json.loads(line) for line in (tmp_path / "exported.jsonl").read_text().splitlines()]
    assert exported == [[run_id, e["seq"], e["kind"], False] for e in log]
    assert log[-1]["kind"] == "run_completed"
