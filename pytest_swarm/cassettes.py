"""Cassettes per test (docs/record-replay.md#cassettes), the way pytest-recording keeps them.

Each test records to, and replays from, its own directory:
``<cassette dir>/<test module path>/<test name>/<flow>/<step>-<agent>-<iteration>.yaml``
(parametrised ids made file-safe; a second run in the same test goes to
``<test name>@2/`` and so on). ``@pytest.mark.swarm_cassette("name")`` or
``swarm_cassette.use("name")`` names the directory instead. Recording a test again
replaces its directory whole, once the test has passed; a test recorded under
``pytest -n N`` writes only its own directory.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from swarm_runtime.engines.cassette import Cassettes

CALL_PASSED = pytest.StashKey[bool]()
"""Whether a test's call phase passed: only then does its recording replace the old one."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cassette_name(nodeid: str) -> str:
    """``tests/test_triage.py::test_refund[eu]`` -> ``tests/test_triage/test_refund-eu``."""
    path, _, rest = nodeid.partition("::")
    module = PurePosixPath(path.replace("\\", "/"))
    parts = [p for p in module.with_suffix("").parts if p not in ("..", ".", "/")]
    test = _UNSAFE.sub("-", rest.replace("::", ".")).strip("-.") or "test"
    return "/".join([*(_UNSAFE.sub("-", p) for p in parts), test])


def check_cassette_name(name: object, where: str) -> str:
    """A cassette name a test gives: a relative path of plain names."""
    if (
        not isinstance(name, str)
        or not name.strip("/")
        or name.startswith("/")
        or any(part in ("", ".", "..") or _UNSAFE.search(part) for part in name.split("/"))
    ):
        raise ValueError(
            f"{where}: cassette name {name!r} must be a relative path of names made of "
            "letters, digits, '.', '_' and '-', e.g. 'triage/refund'"
        )
    return name


class SwarmCassette:
    """The cassette directory of one test (the ``swarm_cassette`` fixture)."""

    def __init__(
        self,
        root: Path,
        nodeid: str,
        *,
        name: str | None = None,
        rerecord: str = "",
        mode: str = "stub",
    ) -> None:
        self.root = Path(root)
        self.nodeid = nodeid
        self.mode = mode
        """The session's mode: only record and replay use cassettes."""
        self.rerecord = rerecord or f"pytest --swarm-mode=record '{nodeid}'"
        """The command that records this test again (see :mod:`pytest_swarm.commands`)."""
        self.name = name or cassette_name(nodeid)
        self.used: list[Cassettes] = []

    def __repr__(self) -> str:
        """The mode, the directory, and what the test's runs recorded or played so far."""
        head = f"SwarmCassette(mode={self.mode!r}, dir={str(self.directory)!r}"
        if self.mode not in ("record", "replay"):
            return f"{head}, unused in {self.mode} mode)"
        if not self.used:
            return f"{head}, no run yet)"
        recorded = sum(len(c.played - c.replayed) for c in self.used if c.record)
        replays = [c for c in self.used if not c.record]
        played = sum(sum(path.is_file() for path in c.played) for c in replays)
        played += sum(len(c.replayed) for c in self.used)  # new episodes
        missing = sum(c.missing for c in replays)
        diverged = sum(len(c.divergences) for c in replays) - missing
        said = [f"{len(self.used)} run(s)"]
        said += [f"{recorded} call(s) recorded"] if len(replays) < len(self.used) else []
        if replays or played:
            said.append(f"{played} call(s) played")
            said += [f"{missing} with no recording"] if missing else []
            said += [f"{diverged} diverged"] if diverged else []
        return f"{head}, {', '.join(said)})"

    @property
    def directory(self) -> Path:
        """Where the test's first run records or replays."""
        return self.root / self.name

    def use(self, name: str) -> None:
        """Record to and replay from ``<cassette dir>/<name>/`` (before the test's runs)."""
        if self.used:
            raise RuntimeError("swarm_cassette.use() must come before the test's first run")
        self.name = check_cassette_name(name, "swarm_cassette.use()")

    def for_run(self, record_mode: str) -> Cassettes:
        """The cassettes of the test's next run, for ``record_mode`` (see the options).

        ``once`` records a run whose directory holds no cassette yet and replays the
        others; ``new_episodes`` replays the calls whose request a cassette holds and records
        the rest in place of what they no longer match.
        """
        from swarm_runtime.engines.cassette import Cassettes

        number = len(self.used) + 1
        name = self.name if number == 1 else f"{self.name}@{number}"
        directory = self.root / name
        record = record_mode in ("all", "new_episodes") or (
            record_mode == "once" and not (directory.is_dir() and any(directory.rglob("*.yaml")))
        )
        cassettes = Cassettes(
            directory,
            name=name,
            record=record,
            episodes=record_mode == "new_episodes",
            # A miss adds what the step's engine needs to record: its key or base URL.
            rerecord_command=self.rerecord,
        )
        self.used.append(cassettes)
        return cassettes

    def unplayed(self) -> list[str]:
        """After replay: recorded calls, files or runs of this test that nothing asked for."""
        problems: list[str] = []
        for cassettes in self.used:
            problems.extend(cassettes.unplayed)
            problems.extend(cassettes.never_asked_for())
        if self.used and not self.used[0].record:
            base = self.directory
            known = {c.directory for c in self.used}
            extra = sorted(p for p in base.parent.glob(f"{base.name}@*") if p not in known)
            problems.extend(f"{p.name}/: a recorded run this test no longer makes" for p in extra)
        return problems

    def finish(self, *, passed: bool) -> None:
        """Keep what a passing test recorded (in place of its old cassettes), else drop it."""
        for cassettes in self.used:
            if passed:
                cassettes.commit()
            else:
                cassettes.discard()
        if passed and self.used and self.used[0].record:
            # Runs an earlier recording made and this one does not: gone with the rest.
            import shutil

            known = {c.directory for c in self.used}
            for stale in self.directory.parent.glob(f"{self.directory.name}@*"):
                if stale not in known:
                    shutil.rmtree(stale, ignore_errors=True)
