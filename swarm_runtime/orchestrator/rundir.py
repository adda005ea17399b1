"""A new run directory: the runs dir made ready, a free run id claimed under its lock.

The run's files are the recorder's to write; here only the directory is made, and taken
away again when it never became a run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from swarm_runtime.errors import ConfigError, StorageError
from swarm_runtime.ids import new_run_id
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.storage.lock import RunLock
from swarm_runtime.timeutil import Clock, format_ts


def claim_run_dir(
    runs_dir: Path,
    *,
    clock: Clock,
    rand: Callable[[int], str] | None,
    first_file: Callable[[RunLayout], None],
) -> tuple[RunLayout, RunLock]:
    """A fresh run directory under ``runs_dir`` (a new id), locked, with ``first_file`` written.

    ``first_file`` writes what makes the directory a run (its ``spec.json``); when the lock
    or that write fails, the directory is removed again and the error raised.
    """
    _make_runs_dir(runs_dir)
    for _ in range(100):
        layout = RunLayout(runs_dir, new_run_id(clock(), rand))
        try:
            os.mkdir(layout.root)
        except FileExistsError:
            continue  # another process took this id in the same second
        except OSError as exc:
            raise ConfigError(
                f"cannot create a run dir in {runs_dir}: {exc.strerror or exc}"
            ) from None
        lock = RunLock(layout.root)
        try:
            lock.acquire(format_ts(clock()))
            first_file(layout)
        except BaseException:
            lock.release()  # a run dir without its spec is no run: leave nothing
            remove_run_dir(layout.root)
            raise
        return layout, lock
    raise StorageError(f"could not find a free run id in {runs_dir} after 100 tries")


def _make_runs_dir(runs_dir: Path) -> None:
    """Make ``runs_dir`` (and its parents), or say why it cannot be and what to do."""
    if runs_dir.exists() and not runs_dir.is_dir():
        raise ConfigError(f"runs dir {runs_dir} exists and is not a directory")
    if runs_dir.is_symlink() and not runs_dir.exists():
        raise ConfigError(
            f"runs dir {runs_dir} is a symlink to {os.readlink(runs_dir)}, which does not "
            "exist; create its target or choose another with --runs-dir or SWARM_RUNS_DIR"
        )
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create runs dir {runs_dir}: {exc.strerror or exc}; choose another "
            "with --runs-dir or SWARM_RUNS_DIR"
        ) from None


def remove_run_dir(path: Path) -> None:
    """Remove a run dir that is no run (``shutil`` is imported only then: it is slow to)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
