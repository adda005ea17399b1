"""``swarm golden diff OLD NEW``: two runs or golden directories compared, as Markdown."""

from __future__ import annotations

import argparse
from typing import Any

from swarm_runtime.cli.common import EXIT_FAILED, EXIT_OK, path_arg
from swarm_runtime.errors import SwarmUsageError


def add_parser(commands: Any) -> None:
    """Register ``swarm golden``."""
    parser = commands.add_parser("golden", help="compare runs and golden runs")
    sub = parser.add_subparsers(dest="golden_command", metavar="ACTION")
    sub.required = True
    diff = sub.add_parser(
        "diff",
        help="print the differences of two run or golden dirs as Markdown (a table of "
        "changed steps, then a diff per file); exit 1 when they differ",
    )
    diff.add_argument("old", type=path_arg, help="run directory or golden directory")
    diff.add_argument("new", type=path_arg, help="run directory or golden directory")
    diff.add_argument("--context", type=int, default=2, help="diff context lines (default 2)")
    diff.set_defaults(handler=handle_diff)


def handle_diff(args: argparse.Namespace) -> int:
    """Normalise both sides, diff them, print Markdown."""
    from swarm_runtime.golden import diff_runs, golden_files, markdown_report

    for side in (args.old, args.new):
        if not side.is_dir():
            raise SwarmUsageError(f"{side}: not a directory (give a run dir or a golden dir)")
    try:
        changes = diff_runs(
            golden_files(args.old), golden_files(args.new), context=max(0, args.context)
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise SwarmUsageError(f"cannot read a run file: {exc}") from None
    print(markdown_report(changes, old_label=str(args.old), new_label=str(args.new)), end="")
    return EXIT_FAILED if changes else EXIT_OK
