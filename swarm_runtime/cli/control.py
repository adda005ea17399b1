"""``swarm pause|stop|resume RUN``: run control from another process.

``pause`` and ``stop`` write a request into the run directory; the process running the run
acts on it at its next step boundary. ``resume`` continues a paused, stopped, blocked or
crashed run from its checkpoint, with everything it needs from ``spec.json``.

See docs/run-control.md#pause-stop-and-resume and docs/reference/cli.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import EXIT_FAILFAST, EXIT_OK, RUNS_DIR_HELP, path_arg

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.run import Orchestrator


def add_parser(commands: Any) -> None:
    """Register ``swarm pause``, ``swarm stop`` and ``swarm resume``."""
    for name, text in (
        ("pause", "pause a running run at its next step boundary (swarm resume goes on)"),
        ("stop", "stop a running run at its next step boundary (it ends 'stopped')"),
    ):
        parser = commands.add_parser(name, help=text, description=text)
        parser.add_argument("run", metavar="RUN", help="run id or run directory")
        parser.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
        parser.add_argument("--reason", default="", help="why (kept in the run's events)")
        parser.set_defaults(handler=handle_request, request=name)
    resume = commands.add_parser(
        "resume",
        help="continue a paused, stopped, blocked or crashed run from its checkpoint",
        description="Continue a run where it stands. Flows dir, scenario, params, mode and "
        "engine come from the run's spec.json; a flag given here overrides it, and says so.",
    )
    resume.add_argument("run", metavar="RUN", help="run id or run directory")
    resume.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    resume.add_argument("--input", help="what a blocked step waits for (it is re-invoked)")
    resume.add_argument("--flows-dir", type=path_arg, help="override the run's flows dir")
    resume.add_argument("--mode", help="override the run's engine mode (stub, sdk, cli)")
    resume.add_argument("--scenario", type=path_arg, help="override the run's stub scenario")
    resume.add_argument("--config", type=path_arg, help="runtime.yaml to use")
    resume.add_argument(
        "--progress", choices=("auto", "always", "never"), default="auto", help="per-step lines"
    )
    resume.set_defaults(handler=handle_resume)


def handle_request(args: argparse.Namespace) -> int:
    """Ask the process running RUN to pause or stop; refuse when nothing runs it."""
    from swarm_runtime.cli.runs import resolve_run_dir
    from swarm_runtime.orchestrator.checkpoint import ask_running_process

    run_dir = resolve_run_dir(args.run, args.runs_dir)
    reason = args.reason or f"{args.request} requested from the command line"
    holder = ask_running_process(run_dir, args.request, reason)
    print(f"asked run {run_dir.name} ({holder}) to {args.request} at its next step boundary")
    return EXIT_OK


def handle_resume(args: argparse.Namespace) -> int:
    """Resume RUN and report as ``swarm run`` does."""
    from swarm_runtime.cli.render import report
    from swarm_runtime.cli.run import run_with_signals
    from swarm_runtime.cli.runs import resolve_run_dir
    from swarm_runtime.plan.resume import failfast_of

    began = time.monotonic()
    run_dir = resolve_run_dir(args.run, args.runs_dir)
    orchestrator = _orchestrator_for(run_dir, args)
    outcome = run_with_signals(
        orchestrator, lambda: orchestrator.resume(run_dir, external_input=args.input)
    )
    code = report(outcome, int((time.monotonic() - began) * 1000))
    stopped = failfast_of(run_dir, outcome)
    if stopped is not None:  # a plan cycle's FailFast stops the runtime, as in swarm plan run
        print(f"swarm: error: {stopped}; the runtime stopped", file=sys.stderr)
        return EXIT_FAILFAST
    return code


def _orchestrator_for(run_dir: Path, args: argparse.Namespace) -> Orchestrator:
    """The orchestrator ``spec.json`` describes, with the flags' overrides (the one resume)."""
    from swarm_runtime.cli.render import listeners
    from swarm_runtime.orchestrator.assembly import ResumeChoices
    from swarm_runtime.plan.resume import orchestrator_to_resume

    return orchestrator_to_resume(
        run_dir,
        env=os.environ,
        choices=ResumeChoices(
            mode=args.mode, flows_dir=args.flows_dir, scenario=args.scenario, config=args.config
        ),
        plugins=listeners(args.progress),
        notice=lambda message: print(f"swarm: {message}", file=sys.stderr),
    )
