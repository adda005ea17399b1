"""The run service (docs/run-control.md#backends-and-the-run-service): runs started in workers, read
and controlled by id."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.record import replace
from swarm_runtime.service import Backend, get_backend, register_backend, reset_backends
from tests.conftest import SHIPPED_FLOWS

SLOW = {"signal/frame_problem": {"delay_ms": 600_000}}  # sleeps until cancelled


@pytest.fixture(autouse=True)
def _fresh_service() -> Any:
    reset_backends()
    yield
    reset_backends()


def _backend(tmp_path: Path, scenario: dict[str, Any] | None = None) -> Backend:
    return get_backend(
        "claude-step-orchestrator",
        runs_dir=tmp_path / "runs",
        flows_dir=SHIPPED_FLOWS,
        env={},
        scenario=Scenario.from_mapping(scenario) if scenario else None,
    )


def test_eight_runs_at_once_succeed_with_distinct_ids_and_unmixed_files(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    ids: list[str] = []
    threads = [
        threading.Thread(
            target=lambda n=n: ids.append(
                backend.start(RunSpec(flows=("signal",), params={"request": f"run {n}"}))
            )
        )
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 8
    for run_id in ids:
        assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
    for run_id in ids:
        run_dir = tmp_path / "runs" / run_id
        assert {e["run_id"] for e in backend.get_events(run_id)} == {run_id}
        request = json.loads((run_dir / "spec.json").read_text("utf-8"))["params"]["request"]
        prompts = list((run_dir / "signal" / "llm").glob("*.jsonl"))
        assert prompts and all(request in p.read_text("utf-8") for p in prompts)
        assert validate_run_dir(run_dir) == []
    listed = {s["run_id"]: s["status"] for s in backend.list_summaries()}
    assert listed == dict.fromkeys(ids, "succeeded")


def test_get_events_since_a_seq(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    run_id = backend.start({"flows": ["signal"]})
    backend.wait(run_id, timeout=120)
    everything = backend.get_events(run_id)
    assert [e["seq"] for e in everything] == list(range(1, len(everything) + 1))
    later = backend.get_events(run_id, since_seq=5)
    assert later == everything[5:]
    assert backend.get_events(run_id, since_seq=len(everything)) == []


def test_wait_times_out_then_cancel_cuts_the_step_short(tmp_path: Path) -> None:
    backend = _backend(tmp_path, SLOW)
    run_id = backend.start(RunSpec(flows=("signal",)))
    assert backend.get_summary(run_id)["status"] in ("pending", "running")
    with pytest.raises(TimeoutError, match=run_id):
        backend.wait(run_id, timeout=0.05)
    backend.cancel(run_id)
    summary = backend.wait(run_id, timeout=120)
    assert summary["status"] == "stopped"
    kinds = [e["kind"] for e in backend.get_events(run_id)]
    assert kinds[-4:] == ["step_error", "run_stopping", "run_stopped", "run_completed"]
    assert validate_run_dir(tmp_path / "runs" / run_id) == []


def _held(tmp_path: Path) -> dict[str, Any]:
    """``signal/frame_problem`` held until the test creates ``tmp_path / "gate"``."""
    return {"signal/frame_problem": {"wait_for": str(tmp_path / "gate")}}


def test_pause_and_resume_through_the_backend(tmp_path: Path) -> None:
    backend = _backend(tmp_path, _held(tmp_path))
    run_id = backend.start(RunSpec(flows=("signal",)))
    backend.pause(run_id, "maintenance")  # taken at the next step boundary
    (tmp_path / "gate").touch()  # the run may go on: the request is made
    assert backend.wait(run_id, timeout=120)["status"] == "paused"
    assert [e["kind"] for e in backend.get_events(run_id)][-2:] == ["run_pausing", "run_paused"]
    with pytest.raises(RunControlError, match="paused, not running"):
        backend.stop(run_id)
    backend.resume(run_id)
    assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
    assert validate_run_dir(tmp_path / "runs" / run_id) == []


def test_a_resume_right_after_a_pause_waits_for_the_worker_to_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.orchestrator.recorder import RunRecorder

    closing, release, joining = threading.Event(), threading.Event(), threading.Event()
    close = RunRecorder.close

    def held_close(recorder: RunRecorder) -> None:
        if not closing.is_set():  # the paused run's worker: meta says paused, lock still held
            closing.set()
            release.wait(60)
        close(recorder)

    monkeypatch.setattr(RunRecorder, "close", held_close)
    backend = _backend(tmp_path, _held(tmp_path))
    run_id = backend.start(RunSpec(flows=("signal",)))
    backend.pause(run_id)
    (tmp_path / "gate").touch()
    assert closing.wait(120)
    worker = backend._workers[run_id]

    class Watched:  # the old worker's thread, telling when a resume waits for it
        def is_alive(self) -> bool:
            return worker.thread.is_alive()

        def join(self, timeout: float | None = None) -> None:
            joining.set()
            worker.thread.join(timeout)

    backend._workers[run_id] = replace(worker, thread=Watched())
    outcome: list[BaseException | None] = []

    def resume() -> None:
        try:
            backend.resume(run_id)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
            joining.set()

    asker = threading.Thread(target=resume)
    asker.start()
    assert joining.wait(60)
    release.set()
    asker.join(60)
    assert outcome == [None]
    assert backend.wait(run_id, timeout=120)["status"] == "succeeded"


def test_a_backend_start_error_is_raised_at_once(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    with pytest.raises(Exception, match="nope"):
        backend.start(RunSpec(flows=("nope",)))
    with pytest.raises(ConfigError, match="unknown key"):
        backend.start({"flows": ["signal"], "flow": "typo"})
    with pytest.raises(RunControlError, match="no run 'run-x'"):
        backend.get_summary("run-x")


def test_backends_by_id_and_registered_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import swarm_runtime.service

    monkeypatch.setattr(swarm_runtime.service, "_FACTORIES", {})
    gemini = get_backend("gemini-step-orchestrator", runs_dir=tmp_path / "g", env={})
    run_id = gemini.start(RunSpec(flows=("signal",)))
    assert gemini.wait(run_id, timeout=120)["engine"] == "gemini-step"
    with pytest.raises(
        ConfigError, match="no backend 'x'; known: celery, claude-step-orchestrator"
    ):
        get_backend("x")
    made: list[dict[str, Any]] = []

    def mine(**options: Any) -> Backend:
        made.append(options)
        return _backend(tmp_path)

    register_backend("my-orchestrator", mine)
    assert isinstance(get_backend("my-orchestrator", runs_dir=tmp_path / "m"), Backend)
    assert made and made[0]["runs_dir"] == tmp_path / "m"


def test_reset_cancels_what_still_runs(tmp_path: Path) -> None:
    backend = _backend(tmp_path, SLOW)
    run_id = backend.start(RunSpec(flows=("signal",)))
    reset_backends()  # what isolated_runs_env does before and after a test
    summary = json.loads((tmp_path / "runs" / run_id / "meta.json").read_text("utf-8"))
    assert summary["status"] == "stopped"
    assert _backend(tmp_path, SLOW) is not backend
