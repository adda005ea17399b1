"""The plan store: full-text search, whole transactions, and files it must not take."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from swarm_runtime.errors import StorageError
from swarm_runtime.plan import MemoryStore
from swarm_runtime.plan.memory_store import APPLICATION_ID

AT = "2026-01-01T00:00:00Z"


def _remember(store: MemoryStore, summary: str) -> str:
    return store.add_memory(
        summary=summary, keywords=[], session_ref="s", run_id=None, created_at=AT
    )


def test_search_finds_related_memories_best_first_within_the_limit(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.sqlite3")
    rotation = _remember(store, "Rotating postgres credentials: use the vault CLI")
    _remember(store, "Postgres backups run nightly")
    _remember(store, "The banana bread recipe needs three bananas")
    found = store.search("how do I rotate the postgres credentials?", 5)
    assert found[0]["id"] == rotation  # stemmed: rotate ~ rotating
    assert len(found) == 2 and all("ostgres" in item["summary"] for item in found)
    assert len(store.search("postgres", 1)) == 1
    assert store.search("the of and", 5) == []  # nothing but stop words: nothing to look for
    assert store.search('"unbalanced quote OR', 5) == []  # search syntax is never passed on


def test_a_write_given_up_commits_nothing(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.sqlite3")
    gave_up = threading.Event()
    gave_up.set()
    with pytest.raises(StorageError, match="given up"):
        store.add_memory(
            summary="late",
            keywords=[],
            session_ref="s",
            run_id=None,
            created_at=AT,
            cancelled=gave_up,
        )
    with pytest.raises(StorageError, match="given up"):
        store.save_session(session_ref="s", meta={}, run_id=None, at=AT, cancelled=gave_up)
    store.close()
    with sqlite3.connect(tmp_path / "store.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_sessions_count_their_cycles(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.sqlite3")
    assert store.save_session(session_ref="s", meta={"a": 1}, run_id="r1", at=AT) == "created"
    assert store.save_session(session_ref="s", meta={"a": 2}, run_id="r2", at=AT) == "updated"
    session = store.session("s")
    assert session is not None
    assert (session["cycles"], session["meta"], session["last_run_id"]) == (2, {"a": 2}, "r2")


def test_a_file_that_is_no_store_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StorageError, match=r"notes\.sqlite3 is not a plan store"):
        MemoryStore(path)
    assert path.read_text().startswith("these are my notes")


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # ours, from a later version
    with pytest.raises(StorageError, match="layout 99, newer than this version reads"):
        MemoryStore(path)


def test_another_programs_database_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (name TEXT)")
        db.execute("INSERT INTO customers VALUES ('Ada')")
    before = path.read_bytes()
    with pytest.raises(StorageError, match=r"another program's SQLite database .*customers"):
        MemoryStore(path)
    assert path.read_bytes() == before  # no table added, no pragma set
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    MemoryStore(empty).close()  # an empty database becomes a store
    with sqlite3.connect(empty) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    MemoryStore(empty).close()  # and is known for one after
