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
"""Not a JSON Schema: every event kind, where it may stand in the log, its payload fields."""


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
    """The lines of the event-kind table, from the kinds' declarations.

    ``stands`` says where an event of the kind may come in the log (``in_step``: inside a
    step execution, ``routing``: between a step's end and its route_decision, …); a field
    marked ``?`` may be absent, ``...`` says other fields may come with them.

    See docs/contract/events.md#event-kinds.
    """
    from swarm_runtime.documents.events import kind_table

    table = kind_table()
    width = max(map(len, table))
    place = max(len(row["stands"]) for row in table.values())
    lines = [
        f"{'kind':<{width}}  {'stands':<{place}}  payload",
        f"{'-' * width}  {'-' * place}  {'-' * 7}",
    ]
    for kind, row in table.items():
        names = [name if name in row["required"] else f"{name}?" for name in row["fields"]]
        text = ", ".join(names + ["..."] * row["open"])
        lines.append(f"{kind:<{width}}  {row['stands']:<{place}}  {text}")
    return lines
