"""Goldens and cassette dirs no test used, as syrupy reports unused snapshots.

After a session that ran the whole suite (:func:`whole_suite`), the golden runs of the
mode's family (the stub's ``golden/<scenario>/``, or ``golden/<scenario>.replay/`` in
record and replay) and, in record and replay, the cassette dirs of tests
(``<cassette dir>/…/<test>/<flow>/*.yaml``) that no test of the session used are listed;
they fail the session unless ``--swarm-warn-unused``. ``--snapshot-update`` removes such
goldens, and ``--swarm-prune-cassettes`` such cassette dirs, once every test passed.

A golden is named by the test that compares it, not found from the test's location as a
syrupy snapshot is: so nothing is judged after a session that left out a test which could
have used one of them (docs/goldens.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_swarm.commands import CONTRACT_FILE
from pytest_swarm.golden_names import REPLAY_SUFFIX

if TYPE_CHECKING:
    import pytest

    from pytest_swarm.summary import SwarmTotals

FAMILIES = {"stub": {"stub"}, "replay": {"replay", "record"}, "record": {"replay", "record"}}
"""The modes whose goldens and cassettes a session of each mode judges."""


def shares_family(modes: tuple[str, ...], mode: str) -> bool:
    """Whether a test that runs in ``modes`` could use what a session in ``mode`` judges."""
    return bool(FAMILIES.get(mode, set()) & set(modes))


def whole_suite(session: pytest.Session, totals: SwarmTotals, *, contract: bool) -> bool:
    """Whether this session ran every test that could use a golden or cassette dir.

    Not after ``--collect-only`` or ``--swarm-contract`` (the packaged suite is not the
    user's), nor when paths, node ids, ``-k``, ``-m``, ``--deselect``, ``--ignore``,
    ``--lf`` or ``--ff`` narrowed it, a plugin deselected a test, ``-x`` or
    ``--maxfail`` stopped it, a test was skipped for a reason of its own, or a test
    skipped for its swarm modes runs in a mode of this session's family (``record`` and
    ``replay`` share goldens and cassettes).
    """
    import pytest

    config = session.config
    option = config.option
    if contract or option.collectonly or totals.passed_over or totals.unexplained_skips:
        return False
    stopped = (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    if session.shouldfail or session.shouldstop or session.exitstatus in stopped:
        return False
    narrowing = ("keyword", "markexpr", "deselect", "ignore", "ignore_glob", "lf", "failedfirst")
    if any(getattr(option, name, None) for name in narrowing):
        return False
    source = config.args_source
    if source == pytest.Config.ArgsSource.TESTPATHS:
        return True
    return source == pytest.Config.ArgsSource.INVOCATION_DIR and (
        config.invocation_params.dir == config.rootpath
    )


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


CONTRACT_CASSETTES = CONTRACT_FILE.removesuffix(".py")
"""Where the packaged contract suite's tests record (``--swarm-contract``): a session of the
user's own tests never runs them, so it judges none of their dirs unused."""


def unused_cassette_dirs(cassette_root: Path, used: set[str]) -> list[str]:
    """Test cassette dirs (relative, posix) under ``cassette_root`` no test recorded or played.

    The packaged contract suite's dirs are never among them: only a ``--swarm-contract``
    session runs those tests, and it judges nothing.
    """
    if not cassette_root.is_dir():
        return []
    found = {
        path.parent.parent.relative_to(cassette_root).as_posix()
        for path in cassette_root.rglob("*.yaml")
        if path.parent.parent != cassette_root and not path.name.startswith(".")
    }
    return sorted(
        name
        for name in found - used
        if not any(p.startswith(".") for p in name.split("/"))
        and name.split("/")[0] != CONTRACT_CASSETTES
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
