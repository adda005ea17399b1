"""The run index: the same rows as a scan of the run dirs, kept up to date cheaply."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.studio.index import INDEX_NAME, RunIndex, scan_runs
from tests.studio.conftest import Project


def _ids(index: RunIndex, **filters: str) -> list[str]:
    return [r["run_id"] for r in index.page(per_page=500, **filters)["runs"]]


def _set_meta(run_dir: Path, **changes: object) -> None:
    meta = json.loads((run_dir / "meta.json").read_text())
    meta.update(changes)
    temp = run_dir / "meta.json.tmp"
    temp.write_text(json.dumps(meta))
    os.replace(temp, run_dir / "meta.json")  # as the runtime writes it: the dir changes


def test_the_index_agrees_with_a_scan_and_follows_new_changed_and_removed_runs(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    first = project.run("stepwise-demo")
    _set_meta(project.runs_dir / first, status="stopped")
    index = RunIndex(project.runs_dir)
    assert index.page()["runs"] == scan_runs(project.runs_dir)
    assert _ids(index, status="stopped") == [first]
    second = project.run("signal")
    assert _ids(index) == [second, first]
    _set_meta(project.runs_dir / first, status="running")  # resumed by another process
    assert _ids(index, status="crashed") == [first]  # says running, nobody holds its lock
    _set_meta(project.runs_dir / first, status="succeeded")
    assert _ids(index, status="succeeded") == [second, first]
    shutil.rmtree(project.runs_dir / second)
    assert _ids(index) == [first]
    assert index.page()["runs"] == scan_runs(project.runs_dir)
    assert (project.runs_dir / INDEX_NAME).is_file() and index.location.endswith("sqlite3")
    index.close()


def test_a_finished_run_is_not_read_again(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.run("stepwise-demo")
    index = RunIndex(project.runs_dir)
    assert index.refresh() == 1
    assert index.refresh() == 0
    project.run("stepwise-demo")
    assert index.refresh() == 1  # only the new one
    index.close()


def test_a_second_process_reads_the_index_file_and_only_checks_changes(tmp_path: Path) -> None:
    project = Project(tmp_path)
    for _ in range(3):
        project.run("stepwise-demo")
    RunIndex(project.runs_dir).refresh()
    again = RunIndex(project.runs_dir)
    assert again.refresh() == 0
    assert len(_ids(again)) == 3
    again.close()


def test_a_damaged_or_foreign_index_file_is_rebuilt(tmp_path: Path) -> None:
    project = Project(tmp_path)
    run_id = project.run("stepwise-demo")
    path = project.runs_dir / INDEX_NAME
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    assert _ids(RunIndex(project.runs_dir)) == [run_id]
    database = sqlite3.connect(path)
    database.execute("PRAGMA user_version = 99")
    database.close()
    index = RunIndex(project.runs_dir)
    assert _ids(index) == [run_id]
    index.close()


def test_a_read_only_runs_dir_is_indexed_in_memory(tmp_path: Path) -> None:
    project = Project(tmp_path)
    run_id = project.run("stepwise-demo")
    os.chmod(project.runs_dir, 0o555)
    try:
        index = RunIndex(project.runs_dir)
        if os.access(project.runs_dir, os.W_OK):  # root ignores the mode bits
            (project.runs_dir / ".studio").mkdir()
            os.chmod(project.runs_dir / ".studio", 0o555)
        assert _ids(index) == [run_id]
        if os.geteuid() != 0:
            assert index.location == "memory"
        index.close()
    finally:
        os.chmod(project.runs_dir, 0o755)


def test_no_runs_dir_yet_is_an_empty_list(tmp_path: Path) -> None:
    index = RunIndex(tmp_path / "nothing")
    assert index.page() == {"runs": [], "total": 0, "page": 1, "per_page": 50}
    assert not (tmp_path / "nothing").exists()


def test_a_run_dir_without_meta_is_pending_and_odd_entries_are_skipped(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "run-20250101-000000-aaaaaa").mkdir(parents=True)
    (runs / "run-20250101-000000-bbbbbb").write_text("a file, not a run")
    (runs / "not-a-run").mkdir()
    (runs / "run-20250101-000001-cccccc").mkdir()
    (runs / "run-20250101-000001-cccccc" / "meta.json").write_bytes(b"\xff\xfe{")
    rows = RunIndex(runs).page()["runs"]
    assert [(r["run_id"], r["status"]) for r in rows] == [
        ("run-20250101-000001-cccccc", "pending"),
        ("run-20250101-000000-aaaaaa", "pending"),
    ]
    assert rows[1]["created_at"] == "2025-01-01T00:00:00Z"


def test_two_studios_on_one_runs_dir_share_the_index_file(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.run("stepwise-demo")
    first, second = RunIndex(project.runs_dir), RunIndex(project.runs_dir)
    assert first.refresh() == 1
    assert second.refresh() == 0  # the first one's rows, read from the file
    project.run("stepwise-demo")
    assert second.refresh() == 1
    assert first.refresh() == 0  # it sees the second one wrote, and does not read it again
    assert len(_ids(first)) == 2
    first.close()
    second.close()


def test_a_status_read_before_another_studio_wrote_succeeded_does_not_undo_it(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    project.run("stepwise-demo")
    index = RunIndex(project.runs_dir)
    (row,) = index.page()["runs"]
    assert row["status"] == "succeeded"
    database = index._open()
    assert database is not None
    with database:  # a slower studio commits what it read while the run was paused
        index._store(database, [{**row, "status": "paused", "dir_mtime_ns": -1}])
    index.close()
    stored = sqlite3.connect(project.runs_dir / INDEX_NAME)
    assert stored.execute("SELECT status FROM runs").fetchall() == [("succeeded",)]
    stored.close()


def test_a_failed_write_leaves_the_run_to_the_next_refresh(
    tmp_path: Path, monkeypatch: Any
) -> None:
    project = Project(tmp_path)
    index = RunIndex(project.runs_dir)
    project.run("stepwise-demo")

    def locked(*args: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(index, "_store", locked)
    assert index.page()["runs"] == []  # answered from what the file holds, no error
    monkeypatch.undo()
    assert len(index.page()["runs"]) == 1
    index.close()


def test_a_symlinked_index_folder_is_not_written_through(tmp_path: Path) -> None:
    project = Project(tmp_path / "p")
    run_id = project.run("stepwise-demo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project.runs_dir / ".studio").symlink_to(elsewhere)
    index = RunIndex(project.runs_dir)
    assert _ids(index) == [run_id]
    assert index.location == "memory" and list(elsewhere.iterdir()) == []
    index.close()


@pytest.mark.parametrize("name", ["index.sqlite3", "index.sqlite3-wal"])
def test_a_symlinked_index_file_is_not_written_through(tmp_path: Path, name: str) -> None:
    import sqlite3

    project = Project(tmp_path / "p")
    run_id = project.run("stepwise-demo")
    target = tmp_path / "someone-elses.sqlite3"
    other = sqlite3.connect(target)
    other.execute("CREATE TABLE notes (text TEXT)")
    other.commit()
    other.close()
    before = target.read_bytes()
    (project.runs_dir / ".studio").mkdir()
    (project.runs_dir / ".studio" / name).symlink_to(target)
    index = RunIndex(project.runs_dir)
    assert _ids(index) == [run_id]
    assert index.location == "memory"
    index.close()
    assert target.read_bytes() == before  # no tables added, not switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "someone-elses.sqlite3"]


def test_a_run_of_this_process_is_read_again_only_when_it_says_something(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator
    from swarm_runtime.plugins import process_plugins
    from swarm_runtime.studio import index as index_module
    from tests.conftest import SHIPPED_FLOWS

    runs = tmp_path / "runs"
    runs.mkdir()
    index = RunIndex(runs)
    reads: list[str] = []
    real_row = index_module.run_row

    def counted(files: Any, name: str, *rest: Any) -> Any:
        reads.append(name)
        return real_row(files, name, *rest)

    monkeypatch.setattr(index_module, "run_row", counted)
    seen: dict[str, Any] = {}

    class Page:  # a page asking for the list twice while the run is in its second step
        def swarm_event(self, event: dict[str, Any]) -> None:
            if event["kind"] == "step_start" and "rows" not in seen:
                reads.clear()
                seen["rows"] = (index.page()["runs"], index.page()["runs"])
                seen["reads"] = list(reads)

    plugins = process_plugins().with_listeners(index.heard, Page())
    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS), runs_dir=runs, deps=RunDeps(plugins=plugins)
    ).run(RunSpec(flows=("stepwise-demo",)))
    first, second = seen["rows"]
    assert [(r["run_id"], r["status"]) for r in first] == [(outcome.run_id, "running")]
    assert second == first
    assert seen["reads"] == [outcome.run_id]  # read once: the second look found no news
    reads.clear()
    assert _ids(index, status="succeeded") == [outcome.run_id]  # its end was news
    assert reads == [outcome.run_id]
    assert index.page()["runs"] == scan_runs(runs)
    index.close()
