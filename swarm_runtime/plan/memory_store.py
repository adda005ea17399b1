"""The embedded store of execution plans: memories and sessions in one SQLite file (docs/plans.md).

Memories are found by full-text search (SQLite FTS5, Porter stemming, best match first).
Every write is one transaction, so a failure leaves no partial row: a memory is its row
and its search entry, or neither; a session is its row and the cycle it records, or
neither. A write asked to give up (its step timed out) rolls back instead of committing.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from swarm_runtime.errors import StorageError

STORE_VERSION = 1
"""The layout of the tables (SQLite's ``user_version``)."""
APPLICATION_ID = 0x53574D53
"""SQLite's ``application_id`` of a plan store ("SWMS"): how a store knows it is one."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_ref TEXT NOT NULL,
    summary TEXT NOT NULL,
    keywords TEXT NOT NULL,
    run_id TEXT,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts
    USING fts5(summary, keywords, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS sessions (
    session_ref TEXT PRIMARY KEY,
    meta TEXT NOT NULL,
    cycles INTEGER NOT NULL,
    last_run_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_cycles (
    session_ref TEXT NOT NULL,
    run_id TEXT,
    at TEXT NOT NULL
);
"""

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_WORD = re.compile(r"[^\W_]+")


def search_terms(text: str, limit: int = 32) -> list[str]:
    """The words of ``text`` a search looks for: lower case, no stop words, no repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) >= 2 and word not in _STOPWORDS:
            seen.setdefault(word, None)
        if len(seen) >= limit:
            break
    return list(seen)


def keywords_of(text: str, count: int) -> list[str]:
    """The ``count`` most frequent words of ``text`` (3 letters or more, no stop words)."""
    from collections import Counter

    words = Counter(
        word for word in _WORD.findall(text.lower()) if len(word) >= 3 and word not in _STOPWORDS
    )
    return [word for word, _ in words.most_common(count)]


class MemoryStore:
    """Memories and sessions in the SQLite file at ``path`` (created on first use)."""

    def __init__(self, path: Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the plan store {self.path}: {exc}") from None
        try:
            self._prepare()
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        try:
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            self._refuse_foreign(version)
            if version > STORE_VERSION:
                raise StorageError(
                    f"the plan store {self.path} has layout {version}, newer than this "
                    f"version reads ({STORE_VERSION}); upgrade swarm-stepwise or use another "
                    "store with --store"
                )
            if version < STORE_VERSION:
                with self._transaction():  # all tables, or none
                    for statement in _SCHEMA.split(";\n"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {STORE_VERSION}")
                    self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc):
                raise StorageError(
                    "this Python's SQLite has no FTS5 full-text search, which memories need"
                ) from None
            raise StorageError(f"cannot prepare the plan store {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StorageError(
                f"{self.path} is not a plan store ({exc}); name another with --store"
            ) from None

    def _refuse_foreign(self, version: int) -> None:
        """A database of another program is never changed: not a table added, not a pragma.

        Ours carry :data:`APPLICATION_ID` (stores made before it was set are known by their
        tables); an empty database is one to make ours.
        """
        application = int(self._db.execute("PRAGMA application_id").fetchone()[0])
        if application == APPLICATION_ID:
            return
        tables = {
            name
            for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            )
        }
        ours_before = version == STORE_VERSION and {"memories", "sessions"} <= tables
        if application == 0 and (ours_before or (version == 0 and not tables)):
            return
        listed = ", ".join(sorted(tables)[:5]) or "none"
        raise StorageError(
            f"{self.path} is not a plan store: it is another program's SQLite database "
            f"(application id {application}, tables: {listed}); it was left as it is - name "
            "another file with --store"
        )

    @contextmanager
    def _transaction(self, cancelled: threading.Event | None = None) -> Iterator[None]:
        """BEGIN … COMMIT, or ROLLBACK on any error (or when ``cancelled`` is set)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                if cancelled is not None and cancelled.is_set():
                    raise StorageError("the write was given up (its step ran out of time)")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def add_memory(
        self,
        *,
        summary: str,
        keywords: list[str],
        session_ref: str,
        run_id: str | None,
        created_at: str,
        cancelled: threading.Event | None = None,
    ) -> str:
        """Store one memory and its search entry together; its new id."""
        memory_id = "mem-" + os.urandom(8).hex()
        words = " ".join(keywords)
        try:
            with self._transaction(cancelled):
                cursor = self._db.execute(
                    "INSERT INTO memories (id, session_ref, summary, keywords, run_id, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (memory_id, session_ref, summary, json.dumps(keywords), run_id, created_at),
                )
                self._db.execute(
                    "INSERT INTO memories_fts (rowid, summary, keywords) VALUES (?, ?, ?)",
                    (cursor.lastrowid, summary, words),
                )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot store a memory in {self.path}: {exc}") from None
        return memory_id

    def search(self, text: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` memories matching words of ``text``, best first."""
        terms = search_terms(text)
        if not terms or limit < 1:
            return []
        query = " OR ".join(f'"{term}"' for term in terms)
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT m.id, m.summary, m.created_at FROM memories_fts"
                    " JOIN memories AS m ON m.rowid = memories_fts.rowid"
                    " WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts), m.rowid DESC"
                    " LIMIT ?",
                    (query, limit),
                ).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot search the memories in {self.path}: {exc}") from None
        return [{"id": row[0], "summary": row[1], "timestamp": row[2]} for row in rows]

    def save_session(
        self,
        *,
        session_ref: str,
        meta: dict[str, Any],
        run_id: str | None,
        at: str,
        cancelled: threading.Event | None = None,
    ) -> str:
        """Record a cycle of a session (and its meta); ``created`` or ``updated``."""
        try:
            with self._transaction(cancelled):
                known = self._db.execute(
                    "SELECT cycles FROM sessions WHERE session_ref = ?", (session_ref,)
                ).fetchone()
                self._db.execute(
                    "INSERT INTO sessions"
                    " (session_ref, meta, cycles, last_run_id, created_at, updated_at)"
                    " VALUES (?, ?, 1, ?, ?, ?)"
                    " ON CONFLICT(session_ref) DO UPDATE SET meta = excluded.meta,"
                    " cycles = cycles + 1, last_run_id = excluded.last_run_id,"
                    " updated_at = excluded.updated_at",
                    (session_ref, json.dumps(meta, sort_keys=True), run_id, at, at),
                )
                self._db.execute(
                    "INSERT INTO session_cycles (session_ref, run_id, at) VALUES (?, ?, ?)",
                    (session_ref, run_id, at),
                )
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot store session {session_ref!r} in {self.path}: {exc}"
            ) from None
        return "updated" if known else "created"

    def session(self, session_ref: str) -> dict[str, Any] | None:
        """A session's row (meta decoded), or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT meta, cycles, last_run_id, created_at, updated_at FROM sessions"
                " WHERE session_ref = ?",
                (session_ref,),
            ).fetchone()
        if row is None:
            return None
        return {
            "session_ref": session_ref,
            "meta": json.loads(row[0]),
            "cycles": row[1],
            "last_run_id": row[2],
            "created_at": row[3],
            "updated_at": row[4],
        }

    def close(self) -> None:
        """Close the database."""
        self._db.close()
