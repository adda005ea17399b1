"""``swarm studio``: the local web viewer of runs (the ``studio`` extra)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from swarm_runtime.cli.common import EXIT_OK, path_arg
from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.install import install_command


def add_parser(commands: Any) -> None:
    """Register ``swarm studio``."""
    text = "serve Flow Studio, a web page of the runs in the runs dir, updated live"
    parser = commands.add_parser("studio", help=text, description=text)
    parser.add_argument("--runs-dir", type=path_arg, help="the runs to show (default ./swarm/runs)")
    parser.add_argument("--flows-dir", type=path_arg, help="flows to draw and to start")
    parser.add_argument(
        "--golden-dir", type=path_arg, help="golden runs to compare with (default ./golden)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything else is reachable by others)",
    )
    parser.add_argument("--port", type=int, default=5000, help="port (default 5000; 0: any free)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name or address the studio may be reached by (localhost, 127.0.0.1 "
        "and [::1] always work; so does --host's address)",
    )
    parser.set_defaults(handler=handle_studio)


def handle_studio(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C."""
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.flow.registry import default_flows_dir

    if not 0 <= args.port <= 65535:
        raise SwarmUsageError(f"--port {args.port}: a port is 0 to 65535")
    try:
        from swarm_runtime.studio.server import serve
    except ImportError:
        raise SwarmUsageError(
            f"swarm studio needs the studio extra: {install_command('studio')}"
        ) from None
    from swarm_runtime.studio.app import StudioConfig

    settings = resolve_settings(env=os.environ, runs_dir=args.runs_dir, flows_dir=args.flows_dir)
    if settings.runs_dir.exists() and not settings.runs_dir.is_dir():
        raise SwarmUsageError(f"runs dir {settings.runs_dir} is not a directory")
    flows_dir = default_flows_dir(settings.flows_dir)
    golden = args.golden_dir or (Path("golden") if Path("golden").is_dir() else None)
    if args.golden_dir is not None and not args.golden_dir.is_dir():
        raise SwarmUsageError(f"--golden-dir {args.golden_dir}: no such directory")
    config = StudioConfig(
        runs_dir=settings.runs_dir.absolute(),
        flows_dir=flows_dir.absolute(),
        golden_dir=golden.absolute() if golden else None,
        allowed_hosts=("localhost", *args.allow_host),
    )
    serve(config, host=args.host, port=args.port)
    return EXIT_OK
