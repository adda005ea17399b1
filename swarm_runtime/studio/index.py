"""The run list's index: one row per run in an SQLite file beside the runs.

Reading every ``meta.json`` to show the first page of a list of thousands of runs is slow,
so the studio keeps their summaries in ``<runs_dir>/.studio/index.sqlite3`` and brings it
up to date before each query, cheaply:

* the run dirs are listed (names only); a new one is read, a vanished one dropped;
* a run that ``succeeded`` is final and is not looked at again;
* a run this process executes (started from the page) is read again only when it said
  something (:class:`~swarm_runtime.studio.heard.HeardRuns` listens to it);
* any other run is re-read when its directory's mtime changed (``meta.json`` is replaced
  on every status change, which touches the directory) or is less than two seconds old
  (a second change in the same clock tick would not move it), and a run that says it is
  pending, running or paused is re-read every time, since a dead process changes nothing
  on disk (it then shows as ``crashed``).

The file is a cache: a missing, damaged or older-layout one is rebuilt from the run dirs,
and when it cannot be written (a read-only runs dir) the index lives in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swarm_runtime.ids import RUN_ID_RE
from swarm_runtime.studio.files import LIVE_STATUSES, NotFound, RunFiles, run_row
from swarm_runtime.studio.heard import HeardRuns

INDEX_NAME = ".studio/index.sqlite3"
"""Where the index lives, relative to the runs dir."""

LAYOUT_VERSION = 1
"""``PRAGMA user_version`` of the index; a file with another is rebuilt."""

_RACY_NS = 2_000_000_000
"""How old a directory's mtime must be before it is trusted to show every change."""

_COLUMNS: tuple[str, ...] = (
    "run_id",
    "status",
    "flows",
    "backend",
    "mode",
    "steps",
    "loops",
    "tokens",
    "cost_usd",
    "created_at",
    "completed_at",
    "error",
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
  {", ".join(_COLUMNS)}, dir_mtime_ns INTEGER, PRIMARY KEY (run_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_flows (run_id TEXT, flow TEXT, PRIMARY KEY (flow, run_id))
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_newest ON runs (created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at DESC);
PRAGMA user_version = {LAYOUT_VERSION};
"""
_UPSERT = (
    f"INSERT INTO runs VALUES ({', '.join('?' * (len(_COLUMNS) + 1))}) ON CONFLICT (run_id) "
    f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in (*_COLUMNS[1:], 'dir_mtime_ns'))} "
    # succeeded is final: a status read before another studio wrote it must not undo it
    "WHERE runs.status <> 'succeeded' OR excluded.status = 'succeeded'"
)


class RunIndex:
    """Run summaries of one runs dir, kept in step with the run dirs, paged newest first."""

    def __init__(self, runs_dir: Path) -> None:
        self.files = RunFiles(runs_dir)
        self.runs_dir = self.files.runs_dir
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._known: dict[str, tuple[str, int, int]] = {}  # run id -> status, mtime, row hash
        self._unsettled: set[str] = set()  # runs not (yet) succeeded: looked at every time
        self._version = 0  # PRAGMA data_version when this process last knew the file
        self.location = "none"
        """The index file's path, ``memory``, or ``none`` before the runs dir exists."""
        self.heard = HeardRuns(self.runs_dir)
        """The listener of the runs this process executes (registered by the studio)."""

    # -- keeping up ------------------------------------------------------------------------

    def refresh(self) -> int:
        """Bring the index up to date with the run dirs; the number of rows rewritten."""
        with self._lock:
            db = self._open()
            if db is None:
                return 0
            news, quiet = self.heard.take()
            try:
                self._follow_others(db)
                stale, rows = self._changes(news, quiet)
                with db:
                    self._drop(db, stale)
                    self._store(db, rows)
            except sqlite3.Error:
                # Another process holds the file too long: keep what it holds, try next time.
                self.heard.give_back(news)
                self._load(db)
                return 0
            self._remember(stale, rows)
            return len(rows) + len(stale)

    def _changes(self, news: set[str], quiet: set[str]) -> tuple[list[str], list[dict[str, Any]]]:
        """Rows to drop (run dirs gone) and rows to write (new or changed runs).

        ``news``: runs of this process that said something; ``quiet``: those that did not.
        """
        entries = _entries(self.runs_dir)
        stale = list(self._known.keys() - entries)
        new = [n for n in entries - self._known.keys() if _is_run_dir(self.runs_dir, n)]
        looked = {*self._unsettled, *(news & self._known.keys())} - quiet
        changed: list[tuple[str, int]] = []
        for name in (*new, *(n for n in looked if n in entries)):
            known = self._known.get(name)
            mtime = _mtime(os.path.join(self.runs_dir, name))
            if name in news or known is None or known[1] != mtime or known[0] in LIVE_STATUSES:
                changed.append((name, mtime))
        rows = [row for row in self._rows(changed) if row is not None]
        read = {row["run_id"] for row in rows}
        stale += [name for name, _ in changed if name not in read]
        return stale, [row for row in rows if self._known.get(row["run_id"]) != _key(row)]

    def _rows(self, changed: Iterable[tuple[str, int]]) -> Iterable[dict[str, Any] | None]:
        now = time.time_ns()
        for name, mtime in changed:
            try:
                row = run_row(self.files, name)
            except NotFound:
                yield None
                continue
            # A change in the same clock tick as this read would leave the mtime as it is:
            # a run changed moments ago is read again next time.
            row["dir_mtime_ns"] = mtime if now - mtime > _RACY_NS else -1
            yield row

    def _store(self, db: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        values = [
            (*(json.dumps(r[c]) if c == "flows" else r[c] for c in _COLUMNS), r["dir_mtime_ns"])
            for r in rows
        ]
        db.executemany(_UPSERT, values)
        db.executemany("DELETE FROM run_flows WHERE run_id = ?", [(r["run_id"],) for r in rows])
        db.executemany(
            "INSERT OR IGNORE INTO run_flows VALUES (?, ?)",
            [(r["run_id"], flow) for r in rows for flow in r["flows"]],
        )

    def _drop(self, db: sqlite3.Connection, names: list[str]) -> None:
        if names:
            db.executemany("DELETE FROM runs WHERE run_id = ?", [(n,) for n in names])
            db.executemany("DELETE FROM run_flows WHERE run_id = ?", [(n,) for n in names])

    def _remember(self, stale: list[str], rows: list[dict[str, Any]]) -> None:
        """What was committed, kept in memory (only once the commit went through)."""
        for name in stale:
            self._known.pop(name, None)
            self._unsettled.discard(name)
        for row in rows:
            self._known[row["run_id"]] = _key(row)
            if row["status"] == "succeeded":
                self._unsettled.discard(row["run_id"])
            else:
                self._unsettled.add(row["run_id"])

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection | None:
        if self._db is not None:
            return self._db
        if not self.runs_dir.is_dir():
            return None
        folder = self.runs_dir / INDEX_NAME.split("/")[0]
        try:
            folder.mkdir(exist_ok=True)
            if not _real_dir(folder):  # planted as a symlink: never written through
                raise sqlite3.OperationalError(f"{folder} is not a directory of its own")
            if _planted(self.runs_dir / INDEX_NAME):  # nor a file of it that is a link
                raise sqlite3.OperationalError(f"{folder} holds a link where the index goes")
            db = _connect(str(self.runs_dir / INDEX_NAME))
            self.location = str(self.runs_dir / INDEX_NAME)
        except (OSError, sqlite3.Error):
            db = _connect(":memory:")  # a read-only runs dir: the index is rebuilt per process
            self.location = "memory"
        self._db = db
        self._load(db)
        return db

    def _load(self, db: sqlite3.Connection) -> None:
        """Take what the index file holds as known (at opening, or after a failed write)."""
        with contextlib.suppress(sqlite3.Error):
            db.rollback()
        self._version = db.execute("PRAGMA data_version").fetchone()[0]
        self._known = {
            run_id: (status, mtime, 0)
            for run_id, status, mtime in db.execute("SELECT run_id, status, dir_mtime_ns FROM runs")
        }
        self._unsettled = {name for name, known in self._known.items() if known[0] != "succeeded"}

    def _follow_others(self, db: sqlite3.Connection) -> None:
        """Another studio on the same runs dir wrote the file: start from what it holds."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._load(db)

    def close(self) -> None:
        """Close the index file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- reading ---------------------------------------------------------------------------

    def page(
        self,
        *,
        page: int = 1,
        per_page: int = 50,
        status: str | None = None,
        flow: str | None = None,
    ) -> dict[str, Any]:
        """One page of runs, newest first, filtered by status and flow; with the total."""
        self.refresh()
        page, per_page = min(max(1, page), 1 << 40), min(max(1, per_page), 500)
        where, params = _filters(status, flow)
        with self._lock:
            if self._db is None:
                return {"runs": [], "total": 0, "page": page, "per_page": per_page}
            total = self._db.execute(f"SELECT COUNT(*) FROM runs {where}", params).fetchone()[0]
            cursor = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs {where} "
                "ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?",
                (*params, per_page, (page - 1) * per_page),
            )
            runs = [_decoded(dict(zip(_COLUMNS, values, strict=True))) for values in cursor]
        return {"runs": runs, "total": total, "page": page, "per_page": per_page}

    def facets(self) -> dict[str, list[str]]:
        """The statuses and flows there are, for the list's filters."""
        self.refresh()
        with self._lock:
            if self._db is None:
                return {"statuses": [], "flows": []}
            statuses = [r[0] for r in self._db.execute("SELECT DISTINCT status FROM runs")]
            flows = [r[0] for r in self._db.execute("SELECT DISTINCT flow FROM run_flows")]
        return {"statuses": sorted(statuses), "flows": sorted(flows)}


def _key(row: dict[str, Any]) -> tuple[str, int, int]:
    """What the index remembers of a row: a re-read that gives the same is not written."""
    return row["status"], row["dir_mtime_ns"], hash(tuple(map(str, row.values())))


def _connect(target: str) -> sqlite3.Connection:
    db = sqlite3.connect(target, check_same_thread=False, timeout=10, isolation_level=None)
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, LAYOUT_VERSION):
            raise _Foreign(f"index layout {version}")
        db.executescript(_SCHEMA)
        db.execute("SELECT COUNT(*) FROM runs").fetchone()
    except sqlite3.OperationalError:
        db.close()
        raise  # locked, read-only, cannot open: not damage, nothing is deleted
    except (sqlite3.DatabaseError, _Foreign):
        db.close()
        if target == ":memory:":
            raise
        os.unlink(target)  # a cache: a damaged or foreign file is rebuilt from the runs
        db = sqlite3.connect(target, check_same_thread=False, timeout=10, isolation_level=None)
        db.executescript(_SCHEMA)
    if target != ":memory:":
        db.execute("PRAGMA journal_mode = WAL")  # readers never hold a writer up
    db.isolation_level = "DEFERRED"
    return db


class _Foreign(Exception):
    """The index file is of another layout."""


def _planted(index: Path) -> bool:
    """Whether the index file, or a journal of it, is there as anything but a plain file.

    SQLite follows a symlink: it would add its tables to (and switch to WAL) a file
    outside the runs dir.
    """
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            mode = os.lstat(f"{index}{suffix}").st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if not stat.S_ISREG(mode):
            return True
    return False


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _filters(status: str | None, flow: str | None) -> tuple[str, tuple[str, ...]]:
    clauses: list[str] = []
    params: list[str] = []
    if status:
        clauses.append("status = ?")
        params.append(status)
    if flow:
        clauses.append("run_id IN (SELECT run_id FROM run_flows WHERE flow = ?)")
        params.append(flow)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), tuple(params)


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    row["flows"] = json.loads(row["flows"])
    return row


def _entries(runs_dir: Path) -> set[str]:
    """The names in the runs dir (names only: a run dir is checked once, when it is new)."""
    try:
        return set(os.listdir(runs_dir))
    except OSError:
        return set()


def _is_run_dir(runs_dir: Path, name: str) -> bool:
    """A run id naming a real directory (a symlink is never a run)."""
    if not RUN_ID_RE.fullmatch(name):
        return False
    try:
        return stat.S_ISDIR(os.lstat(runs_dir / name).st_mode)
    except OSError:
        return False


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return -1


def scan_runs(runs_dir: Path) -> list[dict[str, Any]]:
    """Every run's row read from its run dir, newest first: the index's reference."""
    files = RunFiles(runs_dir)
    rows = []
    for name in _entries(files.runs_dir):
        if not _is_run_dir(files.runs_dir, name):
            continue
        try:
            rows.append(run_row(files, name))
        except NotFound:
            continue
    rows.sort(key=lambda r: (r["created_at"] or "", r["run_id"]), reverse=True)
    return rows
