"""``swarm flows list|validate|show``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from swarm_runtime.cli.common import EXIT_OK, EXIT_USAGE, FLOWS_DIR_HELP, path_arg
from swarm_runtime.errors import SwarmUsageError


def add_parser(commands: Any) -> None:
    """Register ``swarm flows``."""
    parser = commands.add_parser("flows", help="list, validate and show flows")
    sub = parser.add_subparsers(dest="flows_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="list the flows of a flows dir")
    listing.add_argument("--flows-dir", type=path_arg, help=FLOWS_DIR_HELP)
    listing.set_defaults(handler=handle_list)
    validate = sub.add_parser(
        "validate", help="check every flow file as swarm run does; exit 2 on any error"
    )
    validate.add_argument("dir", nargs="?", type=path_arg, help="flows dir (default: ./flows)")
    validate.add_argument("--flows-dir", type=path_arg, help="same as DIR")
    validate.set_defaults(handler=handle_validate)
    show = sub.add_parser("show", help="show the steps and routing of a flow")
    show.add_argument("flow", help="the flow key")
    show.add_argument("--flows-dir", type=path_arg, help=FLOWS_DIR_HELP)
    show.set_defaults(handler=handle_show)


def handle_list(args: argparse.Namespace) -> int:
    """One row per flow: key, steps, title; in run order when flows.yaml exists."""
    from swarm_runtime.cli.render import format_table
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir

    registry = FlowRegistry(default_flows_dir(args.flows_dir))
    order = registry.order()
    keys = order + [key for key in registry.keys() if key not in order]  # noqa: SIM118
    rows: list[list[object]] = []
    for key in keys:
        try:
            flow = registry.get(key)
        except SwarmUsageError as exc:
            rows.append([key, "-", "yes" if key in order else "no", f"INVALID: {exc}"])
            continue
        rows.append([key, len(flow.steps), "yes" if key in order else "no", flow.title])
    print(format_table(["flow", "steps", "in_order", "title"], rows))
    return EXIT_OK


def handle_validate(args: argparse.Namespace) -> int:
    """Print one line per error; exit 2 if there is any."""
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir
    from swarm_runtime.orchestrator.plan import engine_errors
    from swarm_runtime.plugins import engine_registry

    registry = FlowRegistry(default_flows_dir(args.dir or args.flows_dir))
    errors = registry.validate_all() + engine_errors(registry, engine_registry())
    errors.sort(key=lambda error: (error.file, error.line or 0))
    for error in errors:
        print(str(error), file=sys.stderr)
    if errors:
        print(f"{len(errors)} error(s) in {registry.flows_dir}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{len(registry.keys())} flow(s) valid in {registry.flows_dir}")
    return EXIT_OK


def handle_show(args: argparse.Namespace) -> int:
    """The flow's steps with agents and routing."""
    from swarm_runtime.cli.render import format_table
    from swarm_runtime.flow.kinds import KINDS
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir

    flow = FlowRegistry(default_flows_dir(args.flows_dir)).get(args.flow)
    print(f"{flow.key}: {flow.title}\n{flow.description}\n")
    rows: list[list[object]] = []
    for number, step in enumerate(flow.steps, start=1):
        route = KINDS[step.routing.kind].describe(step.routing)
        rows.append([number, step.id, ",".join(step.agents), route])
    print(format_table(["#", "step", "agents", "routing"], rows))
    return EXIT_OK
