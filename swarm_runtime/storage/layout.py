"""Where a run's files live, and the fence that keeps every path inside runs_dir.

See docs/contract/run-dir.md.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from swarm_runtime.errors import StorageError
from swarm_runtime.ids import (
    AGENT_KEY_RE,
    ENGINE_SHORT_RE,
    FLOW_KEY_RE,
    RUN_ID_RE,
    STEP_ID_RE,
)
from swarm_runtime.storage.store import describe_os_error


def _check(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.fullmatch(value):
        raise StorageError(
            f"refusing to build a path from {what} {value!r}: it must match {pattern.pattern}"
        )
    return value


JOURNALS = ("facts", "graph_proposals")
"""Files a run appends to a step at a time and its checkpoint counts the lines of: the
facts replies declared (docs/flows.md#facts) and the edges a navigator proposed
(docs/flows.md#navigator)."""


class RunLayout:
    """Paths of one run directory; every path is validated to stay inside ``runs_dir``."""

    def __init__(self, runs_dir: Path, run_id: str) -> None:
        self.runs_dir = runs_dir.resolve()
        self.run_id = _check(run_id, RUN_ID_RE, "run id")
        self.root = self._real_child(self.runs_dir, run_id)
        self._flow_dirs: dict[str, str] = {}
        self._flow_bases: dict[str, Path] = {}

    def _real_child(self, parent: Path, name: str) -> Path:
        """``parent / name`` where ``parent`` is a real path: one ``lstat`` tells it is real."""
        path = parent / name
        try:
            planted = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            planted = False  # not there yet: what makes it makes a real entry
        return self._fenced(path) if planted else path  # a link: _fenced says where to

    def _fenced(self, path: Path) -> Path:
        # The real path: a symlink planted inside a run must not carry files out of it.
        resolved = Path(os.path.realpath(path))
        if not resolved.is_relative_to(self.runs_dir):
            raise StorageError(f"path {path} escapes the runs dir {self.runs_dir}")
        if resolved != Path(os.path.abspath(path)):
            raise StorageError(
                f"{path} is or goes through a symlink (to {resolved}); files in a run dir "
                "are written only through real directories"
            )
        return resolved

    @property
    def spec(self) -> Path:
        """The RunSpec, written once."""
        return self.root / "spec.json"

    @property
    def meta(self) -> Path:
        """The RunSummary, rewritten on every status change."""
        return self.root / "meta.json"

    @property
    def events(self) -> Path:
        """The append-only event log."""
        return self.root / "events.jsonl"

    @property
    def checkpoint(self) -> Path:
        """Routing state after the last completed step."""
        return self.root / "checkpoint.json"

    @property
    def history(self) -> Path:
        """The outputs of completed steps, one line each, for the prompts after a resume."""
        return self.root / "history.jsonl"

    def journal(self, name: str) -> Path:
        """``<name>.jsonl``: one of :data:`JOURNALS`, appended a step at a time."""
        if name not in JOURNALS:
            raise ValueError(f"no journal {name!r} (journals: {', '.join(JOURNALS)})")
        return self.root / f"{name}.jsonl"

    @property
    def control(self) -> Path:
        """A pause or stop request from another process (``swarm pause|stop``)."""
        return self.root / "control.json"

    def flow_base(self, flow_key: str) -> Path:
        """A flow's ``run_base``: ``<run>/<flow_key>`` (fenced once per flow)."""
        base = self._flow_bases.get(flow_key)
        if base is None:
            base = self._real_child(self.root, _check(flow_key, FLOW_KEY_RE, "flow key"))
            self._flow_bases[flow_key] = base
        return base

    def step_files(
        self, flow_key: str, step_id: str, agent_key: str, engine_short: str
    ) -> tuple[str, str]:
        """The receipt and transcript paths of a step: the only way run files are named.

        ``<flow>/receipts/<step>-<agent>.json`` and
        ``<flow>/llm/<step>-<agent>-<engine_short>.jsonl``, as strings for the hot path.
        Every part is checked against its pattern before anything is made, so with the flow
        dir fenced the joined paths cannot leave it; the flow's ``receipts/`` and ``llm/``
        dirs are created on first use.
        """
        name = (
            f"{_check(step_id, STEP_ID_RE, 'step id')}-"
            f"{_check(agent_key, AGENT_KEY_RE, 'agent key')}"
        )
        engine = _check(engine_short, ENGINE_SHORT_RE, "engine name")
        base = self._flow_dir(flow_key)
        return (
            f"{base}{os.sep}receipts{os.sep}{name}.json",
            f"{base}{os.sep}llm{os.sep}{name}-{engine}.jsonl",
        )

    def navigator_transcript(self, flow_key: str, step_id: str, iteration: int) -> str:
        """``<flow>/llm/<step>-navigator-<iteration>.jsonl``: a navigator call's transcript."""
        name = f"{_check(step_id, STEP_ID_RE, 'step id')}-navigator-{int(iteration)}"
        return f"{self._flow_dir(flow_key)}{os.sep}llm{os.sep}{name}.jsonl"

    def judge_transcript(self, flow_key: str, step_id: str, judge: str, iteration: int) -> str:
        """``<flow>/llm/<step>-judge-<name>-<iteration>.jsonl``: a judge's call's transcript."""
        name = (
            f"{_check(step_id, STEP_ID_RE, 'step id')}-judge-"
            f"{_check(judge, STEP_ID_RE, 'judge name')}-{int(iteration)}"
        )
        return f"{self._flow_dir(flow_key)}{os.sep}llm{os.sep}{name}.jsonl"

    def _flow_dir(self, flow_key: str) -> str:
        """The flow's dir, with its ``receipts/`` and ``llm/`` made on first use."""
        base = self._flow_dirs.get(flow_key)
        if base is None:
            flow_dir = self.flow_base(flow_key)
            for part in ("receipts", "llm"):
                self._make_child_dir(flow_dir / part)
            base = self._flow_dirs[flow_key] = str(flow_dir)
        return base

    def artifacts(self, flow_key: str) -> Path:
        """``<flow>/artifacts/``: files a step produced."""
        return self._fenced(self.flow_base(flow_key) / "artifacts")

    def make_dir(self, path: Path) -> None:
        """Create a directory of the run (and its parents), then check it is a real one."""
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {describe_os_error(exc)}") from None
        self._fenced(path)

    def _make_child_dir(self, path: Path) -> None:
        """:meth:`make_dir` for a dir in a fenced one: one ``lstat`` tells it is real."""
        try:
            os.makedirs(path, exist_ok=True)
            if stat.S_ISLNK(os.lstat(path).st_mode):
                self._fenced(path)  # raises, saying where it leads
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {describe_os_error(exc)}") from None
