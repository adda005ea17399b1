"""``swarm schema NAME``: print the JSON Schema of a contract."""

from __future__ import annotations

import argparse
import json
from typing import Any

from swarm_runtime.cli.common import EXIT_OK
from swarm_runtime.errors import SwarmUsageError

__all__ = [
    "add_parser",
    "handle",
]

NAMES = (
    "receipt",
    "transcript",
    "event",
    "step_context",
    "step_result",
    "run_spec",
    "run_summary",
    "step_input",
    "step_output",
    "execution_plan",
)


def add_parser(commands: Any) -> None:
    """Register ``swarm schema``."""
    parser = commands.add_parser("schema", help="print the JSON Schema of a contract")
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join(NAMES)}")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the schema, or a usage error listing the names."""
    from swarm_runtime.contracts import json_schema

    if args.name not in NAMES:
        raise SwarmUsageError(f"no schema {args.name!r}; allowed: {', '.join(NAMES)}")
    print(json.dumps(json_schema(args.name), indent=2, sort_keys=True))
    return EXIT_OK
