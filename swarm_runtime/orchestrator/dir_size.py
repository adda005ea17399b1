"""How big a run dir is, counted as it is written, and the limit no write may take it past.

The recorder asks :meth:`DirSize.make_room` before every write: a write that would take the
run dir past its limit (``--max-run-mb``) is refused before any byte of it is written, so a
run never overshoots by a step. The refusal ends the run; the few lines that close it (the
open step's ``step_error``, ``run_completed``, ``meta.json``) are written past the limit, which
is then no longer enforced: they are bounded (an event line by
:data:`~swarm_runtime.orchestrator.bounded.MAX_EVENT_LINE`), so the run dir ends at most a
few KiB past it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from swarm_runtime.errors import StorageError


def byte_size(text: str) -> int:
    """How many bytes ``text`` takes as UTF-8 (no copy for ASCII, the usual case)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class DirSize:
    """The bytes a run dir holds: files that grow, plus documents rewritten in place."""

    def __init__(self, rewritten: tuple[str, ...]) -> None:
        self.rewritten = rewritten
        """Documents rewritten in place (meta, checkpoint): counted at their last size."""
        self.grown = 0
        """Bytes written to files that stay (events, journals, step files, artifacts)."""
        self.documents: dict[str, int] = {}
        self.limit: int | None = None
        """The most bytes the run dir may hold (None: no limit, or no longer enforced)."""

    @property
    def total(self) -> int:
        """The bytes written so far."""
        return self.grown + sum(self.documents.values())

    def make_room(self, where: str, size: int) -> None:
        """Refuse (StorageError) a write of ``size`` bytes to ``where`` past the limit."""
        if self.limit is None:
            return
        after = self.total + size - self.documents.get(where, 0)
        if after <= self.limit:
            return
        limit, self.limit = self.limit, None  # what closes the run is written past it
        raise StorageError(
            f"writing {Path(where).name} ({size} bytes) would take the run dir to "
            f"{after} bytes, past its limit of {limit >> 20} MiB ({limit} bytes); the run "
            "ends before it - raise the limit with --max-run-mb (or max_run_mb in "
            "runtime.yaml), or look for a loop whose prompts keep growing"
        )

    def wrote(self, where: str, size: int) -> None:
        """Count a write of ``size`` bytes to ``where``."""
        if where in self.rewritten:
            self.documents[where] = size
        else:
            self.grown += size

    def count_existing(self, root: Path) -> None:
        """Start from what a run dir being resumed holds already."""
        total = 0
        for directory, _, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(directory, name)).st_size
        self.grown = total
