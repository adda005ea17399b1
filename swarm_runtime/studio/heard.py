"""The runs the studio's own process executes, heard of as they go: a listener of theirs.

A run started or resumed from the page runs in this process and tells its listeners of
each event and of its end. The run index reads such a run again only when it has said
something (an event, or its end), not at every refresh as it must read a live run of
another process, which may have died without a word. Runs of other processes are still
found and followed by looking at the run dirs.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.state import RunOutcome


class HeardRuns:
    """Which runs of one runs dir this process executes, and which said something new."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self._lock = threading.Lock()
        self._here: set[str] = set()
        """Runs executed in this process whose end was not heard yet."""
        self._news: set[str] = set()
        """Runs that said something since the index last took the news."""

    def swarm_event(self, run_dir: Path, followed: bool) -> None:
        """An event of a run: read it again at the next refresh."""
        if not followed and self._ours(run_dir):
            with self._lock:
                self._here.add(run_dir.name)
                self._news.add(run_dir.name)

    def swarm_run_end(self, outcome: RunOutcome) -> None:
        """A run's attempt ended: read it again, then look at it as at any other."""
        if self._ours(outcome.path):
            with self._lock:
                self._here.discard(outcome.path.name)
                self._news.add(outcome.path.name)

    def take(self) -> tuple[set[str], set[str]]:
        """The runs with news (taken now), and this process's runs with none."""
        with self._lock:
            news, self._news = self._news, set()
            return news, self._here - news

    def give_back(self, news: set[str]) -> None:
        """News the index took but could not store: taken again next time."""
        with self._lock:
            self._news |= news

    def _ours(self, run_dir: Path) -> bool:
        return Path(os.path.abspath(run_dir)).parent == self.runs_dir
