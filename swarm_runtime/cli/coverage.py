"""``swarm coverage report FILE``: a ``swarm-coverage.json`` as a table, or as Markdown."""

from __future__ import annotations

import argparse
from typing import Any

from swarm_runtime.cli.common import EXIT_OK, path_arg
from swarm_runtime.errors import SwarmUsageError


def add_parser(commands: Any) -> None:
    """Register ``swarm coverage``."""
    parser = commands.add_parser("coverage", help="route coverage reports of pytest sessions")
    sub = parser.add_subparsers(dest="coverage_command", metavar="ACTION")
    sub.required = True
    report = sub.add_parser(
        "report",
        help="print the table of a swarm-coverage.json (written by pytest --swarm-coverage) "
        "and the edges never taken",
    )
    report.add_argument("file", type=path_arg, help="a swarm-coverage.json")
    report.add_argument(
        "--markdown", action="store_true", help="print Markdown, for a pull request comment"
    )
    report.set_defaults(handler=handle_report)


def handle_report(args: argparse.Namespace) -> int:
    """Read the report, check it, print it."""
    from swarm_runtime.coverage.report import (
        judged,
        markdown,
        problem,
        shown,
        table,
        uncalled,
        untaken,
    )
    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.json_input import load_json
    from swarm_runtime.inputs.limits import InputRefused

    try:  # like every input: a regular file, within a size, strict JSON within a depth
        doc = load_json(read_text_limited(args.file))
    except FileNotFoundError:
        raise SwarmUsageError(f"{args.file}: no such file") from None
    except OSError as exc:
        raise SwarmUsageError(f"{args.file}: cannot be read ({exc.strerror or exc})") from None
    except InputRefused as exc:
        raise SwarmUsageError(exc.located(args.file)) from None
    except ValueError as exc:
        raise SwarmUsageError(f"{args.file}: not JSON ({exc})") from None
    found = problem(doc)
    if found:
        raise SwarmUsageError(f"{args.file}: not a swarm coverage report: {found}")
    if args.markdown:
        print(markdown(doc), end="")
        return EXIT_OK
    print("\n".join(table(doc)))
    print(f"route coverage {shown(doc['percent'])} over {doc['runs']} run(s)")
    gaps = untaken(doc)
    if gaps:
        print("edges never taken:")
        print("\n".join(f"  {line}" for line in gaps))
    tools = uncalled(doc)
    if tools:
        print("tools never called (not counted in the coverage):")
        print("\n".join(f"  {line}" for line in tools))
    judges = judged(doc)
    if judges:
        print("judges (not counted in the coverage):")
        print("\n".join(f"  {line}" for line in judges))
    return EXIT_OK
