"""Goldens and cassette dirs no test used, as syrupy reports unused snapshots.

After a session that ran the whole suite, the golden runs of the mode's family (the stub's
``golden/<scenario>/``, or ``golden/<scenario>.replay/`` in record and replay) and, in
record and replay, the cassette dirs of tests (``<cassette dir>/…/<test>/<flow>/*.yaml``)
that no test of the session used are listed; they fail the session unless
``--swarm-warn-unused``. ``--snapshot-update`` removes such goldens, and
``--swarm-prune-cassettes`` such cassette dirs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_swarm.golden_names import REPLAY_SUFFIX


def unused_goldens(golden_root: Path, used: set[str], mode: str) -> list[str]:
    """Golden runs of ``mode``'s family no test compared (names, sorted).

    A golden run is a directory with a ``spec.json``; the other family's are left alone,
    and so is everything else in the golden dir (cassettes, READMEs).
    """
    if mode in ("sdk", "cli") or not golden_root.is_dir():
        return []
    replay_family = mode in ("replay", "record")
    return [
        path.name
        for path in sorted(golden_root.iterdir())
        if (path / "spec.json").is_file()
        and path.name not in used
        and path.name.endswith(REPLAY_SUFFIX) == replay_family
    ]


def unused_cassette_dirs(cassette_root: Path, used: set[str]) -> list[str]:
    """Test cassette dirs (relative, posix) under ``cassette_root`` no test recorded or played."""
    if not cassette_root.is_dir():
        return []
    found = {
        path.parent.parent.relative_to(cassette_root).as_posix()
        for path in cassette_root.rglob("*.yaml")
        if path.parent.parent != cassette_root and not path.name.startswith(".")
    }
    return sorted(
        name for name in found - used if not any(p.startswith(".") for p in name.split("/"))
    )


def remove(root: Path, names: list[str]) -> list[str]:
    """Delete ``root/name`` for each name (inside ``root`` only); the names removed."""
    removed = []
    base = root.resolve()
    for name in names:
        target = (root / name).resolve()
        if base in target.parents:
            shutil.rmtree(target, ignore_errors=True)
            removed.append(name)
    return removed
