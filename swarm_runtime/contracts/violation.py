"""One finding of ``swarm runs validate``: where (file, line) and what."""

from __future__ import annotations

from swarm_runtime.record import Record


class Violation(Record, order=True):
    """One contract violation: where, and what (ordered by file, line, message)."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"
