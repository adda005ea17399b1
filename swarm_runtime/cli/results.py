"""``swarm results``: the trend of each judge over the last pytest sessions.

See docs/judges.md#the-results-file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from swarm_runtime.cli.common import EXIT_OK, path_arg
from swarm_runtime.errors import SwarmUsageError


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def add_parser(commands: Any) -> None:
    """Register ``swarm results``."""
    parser = commands.add_parser(
        "results",
        help="each judge's pass rate over the last pytest sessions (swarm-results.jsonl)",
    )
    parser.add_argument(
        "--file",
        type=path_arg,
        default=Path("swarm-results.jsonl"),
        help="the results file (default: ./swarm-results.jsonl)",
    )
    parser.add_argument(
        "--last", type=_positive, default=5, help="how many sessions, newest last (default 5)"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print Markdown, for a pull request comment"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Read the file, print the trend."""
    from swarm_runtime.results import markdown, read, sessions, table, trend

    found = sessions(read(args.file))
    if not found:
        raise SwarmUsageError(f"{args.file}: no results yet")
    shown, rows = trend(found, args.last)
    if args.markdown:
        print(markdown(shown, rows), end="")
    else:
        print("\n".join(table(shown, rows)))
        if not rows:
            print("no judge ran in these sessions")
    return EXIT_OK
