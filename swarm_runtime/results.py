"""``swarm-results.jsonl``: what each pytest session's tests and judges gave.

Every session appends one line per test that ran flows and one per judgement its runs or
its ``swarm_judge`` calls made, each under an exclusive lock of the file, so sessions and
xdist workers appending at once never interleave a line. :func:`trend` reads the file back
and gives, per judge, its pass rate in each of the last sessions; a judge whose pass rate
fell from one session to the next is flagged.

See docs/judges.md#the-results-file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.errors import SwarmUsageError

VERSION = 1
MAX_LINE_BYTES = 1 << 20
"""A longer line is not a results line: it is refused, naming the line."""


def append(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """Append ``lines`` as JSON lines, in one write, under an exclusive lock of the file."""
    text = "".join(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n" for line in lines)
    if not text:
        return
    data = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _lock(fd)
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)  # the lock goes with the descriptor


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: O_APPEND writes are whole
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a results file; SwarmUsageError naming the first that is not one."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the last line
    except FileNotFoundError:
        raise SwarmUsageError(
            f"{path}: no such file (pytest writes it at the rootdir of a session that ran "
            "flows; --swarm-results names another)"
        ) from None
    except OSError as exc:
        raise SwarmUsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE_BYTES:
                raise SwarmUsageError(f"{path}:{number}: a line of over {MAX_LINE_BYTES} bytes")
            if not raw.endswith(b"\n"):
                break  # a line still being written: the session's next read sees it whole
            try:
                line = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise SwarmUsageError(f"{path}:{number}: not a JSON line ({exc})") from None
            if not isinstance(line, dict) or line.get("kind") not in ("test", "judge"):
                raise SwarmUsageError(
                    f"{path}:{number}: not a swarm results line (each is a JSON object whose "
                    "kind is test or judge)"
                )
            yield line


class Session:
    """One session's lines."""

    def __init__(self, key: str, first: dict[str, Any]) -> None:
        self.key = key
        self.at = str(first.get("at") or "")
        self.commit = first.get("commit")
        self.mode = str(first.get("mode") or "")
        self.tests: dict[str, str] = {}
        """Outcome per test."""
        self.judges: dict[str, list[bool]] = {}
        """Verdicts per judge (``flow/step judge``), in order."""

    def label(self) -> str:
        commit = f" {str(self.commit)[:8]}" if self.commit else ""
        return f"{self.at[:16].replace('T', ' ')}{commit} {self.mode}".strip()


def sessions(lines: Iterable[dict[str, Any]]) -> list[Session]:
    """The sessions of ``lines``, oldest first."""
    found: dict[str, Session] = {}
    for line in lines:
        key = str(line.get("session"))
        session = found.get(key)
        if session is None:
            session = found[key] = Session(key, line)
        if line["kind"] == "test":
            session.tests[str(line.get("test"))] = str(line.get("outcome"))
        else:
            judge = f"{line.get('flow')}/{line.get('step')} {line.get('judge')}"
            if line.get("source") == "test":  # a test's own judge: its rubric is the test's
                judge = f"{judge} ({line.get('test')})"
            session.judges.setdefault(judge, []).append(line.get("passed") is True)
    return sorted(found.values(), key=lambda s: s.at)


def rate(verdicts: list[bool] | None) -> float | None:
    """The share of passes, or None for no verdict."""
    return sum(verdicts) / len(verdicts) if verdicts else None


def trend(all_sessions: list[Session], last: int) -> tuple[list[Session], list[list[str]]]:
    """The last sessions, and a row per judge: its name, a cell per session, its flag."""
    shown = all_sessions[-last:]
    judges = sorted({judge for session in shown for judge in session.judges})
    rows: list[list[str]] = []
    for judge in judges:
        rates = [rate(session.judges.get(judge)) for session in shown]
        cells = [
            f"{sum(v)}/{len(v)}" if (v := session.judges.get(judge)) else "-" for session in shown
        ]
        known = [r for r in rates[:-1] if r is not None]
        fell = rates[-1] is not None and bool(known) and rates[-1] < known[-1]
        rows.append([judge, *cells, "FELL" if fell else ""])
    return shown, rows


def table(shown: list[Session], rows: list[list[str]]) -> list[str]:
    """The trend as aligned text."""
    out = [f"session {n}: {s.label()} ({_tests(s)})" for n, s in enumerate(shown, start=1)]
    header = ["judge", *(f"#{n}" for n in range(1, len(shown) + 1)), ""]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        out.append("  ".join(cells).rstrip())
    fell = [row[0] for row in rows if row[-1]]
    if fell:
        out.append(f"pass rate fell in the last session for: {', '.join(fell)}")
    return out


def markdown(shown: list[Session], rows: list[list[str]]) -> str:
    """The trend as a Markdown table, for a pull request comment."""
    head = ["judge", *(_cell(s.label()) for s in shown), ""]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
    ]
    fell = [row[0] for row in rows if row[-1]]
    if fell:
        lines.append("")
        lines.append(f"**Pass rate fell** in the last session for: {', '.join(fell)}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _tests(session: Session) -> str:
    passed = sum(outcome == "passed" for outcome in session.tests.values())
    return f"{passed}/{len(session.tests)} tests passed"
