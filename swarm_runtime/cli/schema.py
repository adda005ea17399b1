"""``swarm schema NAME``: print the JSON Schema of a contract, or the table of event kinds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from swarm_runtime.cli.common import EXIT_OK
from swarm_runtime.errors import SwarmUsageError

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
EVENTS = "events"
"""Not a JSON Schema: every event kind, its payload fields and whether runs write it yet."""


def add_parser(commands: Any) -> None:
    """Register ``swarm schema``."""
    parser = commands.add_parser(
        "schema", help="print the JSON Schema of a contract, or the event kinds (events)"
    )
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join((*NAMES, EVENTS))}")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the schema, or a usage error listing the names."""
    from swarm_runtime.contracts import json_schema

    if args.name == EVENTS:
        print("\n".join(event_table()))
        return EXIT_OK
    if args.name not in NAMES:
        allowed = ", ".join((*NAMES, EVENTS))
        raise SwarmUsageError(f"no schema {args.name!r}; allowed: {allowed}")
    print(json.dumps(json_schema(args.name), indent=2, sort_keys=True))
    return EXIT_OK


def event_table() -> list[str]:
    """The lines of the event-kind table, from the event models (SPEC §3.3).

    A field marked ``?`` may be absent, ``...`` says other fields may come with them; a
    reserved kind is named by the contract and validated when present, but no run writes
    it yet.
    """
    from swarm_runtime.contracts.events import kind_table

    table = kind_table()
    width = max(map(len, table))
    lines = [f"{'kind':<{width}}  {'written':<8} payload", f"{'-' * width}  {'-' * 8} {'-' * 7}"]
    for kind, row in table.items():
        names = [name if name in row["required"] else f"{name}?" for name in row["fields"]]
        text = ", ".join(names + ["..."] * row["open"])
        written = "yes" if row["written"] else "reserved"
        lines.append(f"{kind:<{width}}  {written:<8} {text}")
    return lines
