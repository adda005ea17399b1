"""The limits every input is read within, and the error that says one was met."""

from __future__ import annotations

MAX_INPUT_BYTES = 8 << 20
"""The largest YAML input read (flows, scenarios, runtime.yaml): 8 MiB."""

MAX_RUN_FILE_BYTES = 256 << 20
"""The largest run file read back (an event log, a transcript, a document): 256 MiB."""

MAX_DEPTH = 100
"""The deepest nesting of mappings and sequences accepted in a YAML or JSON input."""

MAX_NODES = 200_000
"""The most nodes a YAML document may hold once its aliases are expanded."""


class InputRefused(ValueError):
    """An input is too big, too deep, or not a regular file; the message says which.

    ``line`` is the 1-based line the refusal is about, when there is one.
    """

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def located(self, source: object) -> str:
        """``source:line: message`` (or ``source: message`` with no line), for an error."""
        where = f"{source}:{self.line}" if self.line is not None else str(source)
        return f"{where}: {self}"


def too_deep(max_depth: int = MAX_DEPTH) -> str:
    """The one wording of a nesting refusal, for YAML and JSON alike."""
    return (
        f"nesting deeper than {max_depth} levels; refusing to read further "
        f"(keep mappings and lists at most {max_depth} deep)"
    )
