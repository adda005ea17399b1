"""The clear errors of runs on workers, and ``swarm run --backend celery`` as a user sees it.

Every command runs as a real process, as a user types it (docs/run-control.md#runs-across-machines):
a broker that cannot be reached, a runs dir a worker cannot use, options that do not go together, a
worker of another package version, and the table and run id a submitter prints.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm_runtime.cli.main import main
from swarm_runtime.distributed import submit as submit_module
from swarm_runtime.distributed.follow import follow
from swarm_runtime.storage.queued import read_refused
from swarm_runtime.versions import PACKAGE_VERSION
from tests.conftest import REPO
from tests.distributed.conftest import Workers, swarm, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

NO_BROKER = "redis+socket:///nonexistent/redis.sock"


def _swarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(swarm(*args), env=env or swarm_env(), capture_output=True, text=True)


def _run_args(runs: Path, *more: str) -> list[str]:
    flows = str(REPO / "flows")
    return ["run", "plan", "--flows-dir", flows, "--runs-dir", str(runs), *more]


def _one_clear_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The process exited 2 with one line on stderr holding each needle; that line."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_a_worker_says_which_broker_it_cannot_reach(tmp_path: Path) -> None:
    done = _swarm("worker", "--broker", NO_BROKER, "--runs-dir", str(tmp_path))
    _one_clear_line(done, NO_BROKER)


def test_a_submitter_says_which_broker_it_cannot_reach_and_makes_no_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = _swarm(*_run_args(runs, "--backend", "celery", "--broker", NO_BROKER))
    _one_clear_line(done, NO_BROKER)
    assert not runs.exists() or list(runs.iterdir()) == []


def test_the_broker_url_comes_from_the_environment_too(tmp_path: Path) -> None:
    env = {**swarm_env(), "SWARM_BROKER_URL": NO_BROKER}
    _one_clear_line(_swarm("worker", "--runs-dir", str(tmp_path), env=env), NO_BROKER)
    done = _swarm(*_run_args(tmp_path / "runs", "--backend", "celery"), env=env)
    _one_clear_line(done, NO_BROKER)


def test_no_broker_at_all_is_said(tmp_path: Path) -> None:
    _one_clear_line(_swarm("worker", "--runs-dir", str(tmp_path)), "--broker", "SWARM_BROKER_URL")


def test_a_worker_needs_an_existing_runs_dir(redis_url: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-runs"
    done = _swarm("worker", "--broker", redis_url, "--runs-dir", str(missing))
    _one_clear_line(done, str(missing), "shared storage")
    a_file = tmp_path / "runs-file"
    a_file.write_text("", encoding="utf-8")
    done = _swarm("worker", "--broker", redis_url, "--runs-dir", str(a_file))
    _one_clear_line(done, str(a_file))


@contextlib.contextmanager
def _unwritable(directory: Path) -> Iterator[None]:
    """``directory`` as one this process cannot create files in (root too: immutable)."""
    if os.geteuid() != 0:
        directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    # Root writes through any mode bits; not into a directory marked immutable (ext4, xfs).
    subprocess.run(["chattr", "+i", str(directory)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def test_a_worker_says_it_cannot_write_the_runs_dir(redis_url: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    with _unwritable(runs):
        done = _swarm("worker", "--broker", redis_url, "--runs-dir", str(runs))
    _one_clear_line(done, str(runs), "cannot write")


def test_broker_options_need_the_celery_backend(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = _swarm(*_run_args(runs, "--broker", NO_BROKER))
    _one_clear_line(done, "--backend celery")
    done = _swarm(*_run_args(runs, "--detach"))
    _one_clear_line(done, "--backend celery")
    assert not runs.exists() or list(runs.iterdir()) == []


def test_record_and_replay_runs_stay_here(redis_url: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    celery = ["--backend", "celery", "--broker", redis_url]
    for mode in ("replay", "record"):
        cassettes = ["--cassette-dir", str(tmp_path / "cassettes")]
        done = _swarm(*_run_args(runs, "--mode", mode, *cassettes, *celery))
        _one_clear_line(done, "--backend celery", "record or replay")
    assert not runs.exists() or list(runs.iterdir()) == []


def _masked(report: str) -> list[list[str]]:
    """The run's report, word by word, with what differs between two runs masked.

    The run id, its path and the time column (whose width follows its values) differ.
    """
    text = re.sub(r"run-\d{8}-\d{6}-[0-9a-z]+", "<RUN>", report)
    text = re.sub(r"\(/[^)]*\)", "(<PATH>)", text)
    lines = [line.split() for line in text.splitlines()]
    return [[*words[:-1], re.sub(r"^\d+$", "<MS>", words[-1])] for words in lines if words]


def test_a_run_on_a_worker_prints_the_table_of_a_local_run(
    workers: Workers, tmp_path: Path
) -> None:
    local = _swarm(*_run_args(tmp_path / "local", "--progress", "never"))
    assert local.returncode == 0, local.stderr
    workers.start()
    on_worker = _swarm(
        *_run_args(workers.runs_dir, "--progress", "never", "--backend", "celery"),
        env={**swarm_env(), "SWARM_BROKER_URL": workers.broker},
    )
    assert on_worker.returncode == 0, on_worker.stderr
    assert "plan " in on_worker.stdout and "succeeded" in on_worker.stdout
    assert _masked(on_worker.stdout) == _masked(local.stdout)


def test_detach_prints_only_the_run_id(workers: Workers) -> None:
    workers.start()
    done = _swarm(
        *_run_args(workers.runs_dir, "--backend", "celery", "--broker", workers.broker),
        "--detach",
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    assert done.stdout == f"{run_id}\n"
    assert follow(workers.runs_dir / run_id).status == "succeeded"


def test_a_worker_of_another_version_refuses_the_run_and_the_submitter_says_why(
    workers: Workers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env_worker = {**swarm_env(), "SWARM_BROKER_URL": workers.broker}
    worker = workers.start(env=env_worker, broker_flag=False)
    # This submitter is of another release than the worker: the task carries its version.
    monkeypatch.setattr(submit_module, "PACKAGE_VERSION", "0.0.0-other")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(_run_args(workers.runs_dir, "--backend", "celery", "--broker", workers.broker))
    err = capsys.readouterr().err
    assert code == 2, err
    (run_dir,) = workers.runs_dir.iterdir()
    message = read_refused(run_dir)
    assert message is not None
    assert "0.0.0-other" in message and PACKAGE_VERSION in message
    assert message in err and "Traceback" not in err
    assert (run_dir / "events.jsonl").read_bytes() == b""  # left as it was: never begun
    listed = subprocess.run(
        swarm("runs", "list", "--runs-dir", str(workers.runs_dir)),
        env=swarm_env(),
        capture_output=True,
        text=True,
    )
    assert f"{run_dir.name}  refused" in listed.stdout
    assert worker.poll() is None  # the worker goes on serving


def test_a_worker_that_cannot_see_a_run_says_so_in_one_line_and_goes_on(
    workers: Workers,
) -> None:
    """A task for a run not in the worker's runs dir (no shared storage): no traceback."""
    from swarm_runtime.distributed.app import TASK_NAME, make_app

    proc = workers.spawn(
        ["worker", "--broker", workers.broker, "--runs-dir", str(workers.runs_dir)]
    )
    assert proc.stderr is not None
    run_id = "run-20270115-080000-abcdef"
    said: list[str] = []
    for line in proc.stderr:  # blocks until the worker speaks; no sleeping
        said.append(line)
        if line.startswith("swarm worker: ready"):
            app = make_app(workers.broker, lease_s=2)
            app.send_task(TASK_NAME, args=[run_id, "ticket", PACKAGE_VERSION], queue="swarm")
        elif run_id in line:
            break
    workers.adopt(proc)
    assert said[-1].startswith(f"swarm worker: run {run_id}: "), said
    assert str(workers.runs_dir) in said[-1] and "shared storage" in said[-1]
    # It goes on serving: a run handed to it next is run.
    done = _swarm(*_run_args(workers.runs_dir, "--backend", "celery", "--broker", workers.broker))
    assert done.returncode == 0, done.stderr
    workers.stop_all()
    assert "Traceback" not in "".join(said + workers.said[proc.pid])


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [("--concurrency", "0", "1..256"), ("--lease", "soon", "seconds, 1..3600")],
)
def test_a_worker_flag_out_of_bounds_says_what_is_allowed(
    tmp_path: Path, flag: str, value: str, allowed: str
) -> None:
    done = _swarm("worker", "--runs-dir", str(tmp_path), flag, value)
    assert done.returncode == 2
    assert f"{flag}: {value!r} is not allowed" in done.stderr and allowed in done.stderr
    assert "Traceback" not in done.stderr
