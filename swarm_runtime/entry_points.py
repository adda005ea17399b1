"""Entry points of the installed distributions, read from their ``entry_points.txt``.

What :func:`importlib.metadata.entry_points` gives, without importing
:mod:`importlib.metadata` (with ``email``, ``zipfile`` and ``csv``) and without building
a distribution object per installed package: every ``swarm`` and every pytest session
asks for the plugin group, and that import and walk were a fifth of a stub run's time.
The directories on ``sys.path`` are listed, the ``*.dist-info`` and ``*.egg-info`` in
them read in the same order and with the same rule (the first distribution of a name
wins). Where ``sys.path`` holds anything but directories (a zip file, an egg), or a
finder of its own stands in ``sys.meta_path``, :mod:`importlib.metadata` answers.
"""

from __future__ import annotations

import os
import re
import sys
from importlib import import_module
from typing import Any

from swarm_runtime.record import Record

_NAME = re.compile(r"[-_.]+")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPoint(Record):
    """One entry point: its name, its ``module:attr`` value, and its group."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        """The object the value names (its module imported)."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} has a malformed value {self.value!r}")
        found: Any = import_module(match.group("module"))
        for part in (match.group("attr") or "").split(".") if match.group("attr") else ():
            found = getattr(found, part)
        return found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, as :func:`importlib.metadata.entry_points` orders them."""
    found = _read_path()
    if found is None:
        from importlib import metadata

        return [
            EntryPoint(name=e.name, value=e.value, group=e.group)
            for e in metadata.entry_points(group=group)
        ]
    return [entry for entry in found if entry.group == group]


_read: tuple[tuple[str, ...], tuple[tuple[str, int], ...], list[EntryPoint]] | None = None
"""The last reading: ``sys.path`` then, the directories read with their mtimes, what it found."""


def _read_path() -> list[EntryPoint] | None:
    """Every entry point of the distributions on ``sys.path`` (None: not all are in dirs).

    Read again only when ``sys.path``, or a directory read (a distribution installed,
    removed or changed: its ``*.dist-info`` is new), changed since the last reading.
    """
    global _read
    if not _plain_finders():
        return None
    if (
        _read is not None
        and _read[0] == tuple(sys.path)
        and all(_mtime(path) == mtime for path, mtime in _read[1])
    ):
        return _read[2]
    seen: set[str] = set()
    found: list[EntryPoint] = []
    read: list[tuple[str, int]] = []
    infos: list[tuple[str, int]] = []
    for entry in sys.path:
        path = entry or "."
        read.append((path, _mtime(path)))
        try:
            with os.scandir(path) as listing:
                names = [e.name for e in listing if e.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return None
        except OSError:
            continue  # a path entry that is not there (importlib.metadata skips it too)
        for name in names:
            key = _NAME.sub("_", name.rpartition(".")[0].partition("-")[0]).lower()
            if key in seen:
                continue
            seen.add(key)
            info = os.path.join(path, name)
            infos.append((info, _mtime(info)))
            found.extend(_read_file(os.path.join(info, "entry_points.txt")))
    _read = (tuple(sys.path), tuple(read + infos), found)
    return found


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _plain_finders() -> bool:
    """Whether distributions are found only by the standard path finder."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is None:
            continue
        if finder is not PathFinder and getattr(finder, "__self__", finder) is not PathFinder:
            return False
    return True


def _read_file(path: str) -> list[EntryPoint]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    found: list[EntryPoint] = []
    group = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, equals, value = line.partition("=")
        if group is not None and equals:
            found.append(EntryPoint(name=name.strip(), value=value.strip(), group=group))
    return found
