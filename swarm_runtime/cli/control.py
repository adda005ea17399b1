"""``swarm pause|stop|resume RUN``: run control from another process (SPEC §8.2, §11).

``pause`` and ``stop`` write a request into the run directory; the process running the run
acts on it at its next step boundary. ``resume`` continues a paused, stopped, blocked or
crashed run from its checkpoint, with everything it needs from ``spec.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import EXIT_OK, path_arg
from swarm_runtime.errors import RunControlError, SwarmUsageError

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.runner import Orchestrator

__all__ = ["add_parser", "handle_request", "handle_resume"]


def add_parser(commands: Any) -> None:
    """Register ``swarm pause``, ``swarm stop`` and ``swarm resume``."""
    for name, text in (
        ("pause", "pause a running run at its next step boundary (swarm resume goes on)"),
        ("stop", "stop a running run at its next step boundary (it ends 'stopped')"),
    ):
        parser = commands.add_parser(name, help=text, description=text)
        parser.add_argument("run", metavar="RUN", help="run id or run directory")
        parser.add_argument("--runs-dir", type=path_arg)
        parser.add_argument("--reason", default="", help="why (kept in the run's events)")
        parser.set_defaults(handler=handle_request, request=name)
    resume = commands.add_parser(
        "resume",
        help="continue a paused, stopped, blocked or crashed run from its checkpoint",
        description="Continue a run where it stands. Flows dir, scenario, params, mode and "
        "engine come from the run's spec.json; a flag given here overrides it, and says so.",
    )
    resume.add_argument("run", metavar="RUN", help="run id or run directory")
    resume.add_argument("--runs-dir", type=path_arg)
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
    from swarm_runtime.orchestrator.control import ask_running_process

    run_dir = resolve_run_dir(args.run, args.runs_dir)
    reason = args.reason or f"{args.request} requested from the command line"
    holder = ask_running_process(run_dir, args.request, reason)
    print(f"asked run {run_dir.name} ({holder}) to {args.request} at its next step boundary")
    return EXIT_OK


def handle_resume(args: argparse.Namespace) -> int:
    """Resume RUN and report as ``swarm run`` does."""
    from swarm_runtime.cli.run import report, run_with_signals
    from swarm_runtime.cli.runs import resolve_run_dir

    began = time.monotonic()
    run_dir = resolve_run_dir(args.run, args.runs_dir)
    orchestrator = _orchestrator_for(run_dir, args)
    outcome = run_with_signals(
        orchestrator, lambda: orchestrator.resume(run_dir, external_input=args.input)
    )
    return report(outcome, int((time.monotonic() - began) * 1000))


def _orchestrator_for(run_dir: Path, args: argparse.Namespace) -> Orchestrator:
    """The orchestrator ``spec.json`` describes, with the flags' overrides."""
    from swarm_runtime.cli.render import ProgressPrinter
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.assembly import build_orchestrator
    from swarm_runtime.orchestrator.resume import read_run_spec

    _, doc = read_run_spec(run_dir)
    origin: dict[str, Any] = doc.get("origin") or {}
    if origin.get("cassettes"):
        raise RunControlError(
            f"run {run_dir.name} recorded or replayed cassettes; such a run is not resumed "
            "(a resumed recording would be incomplete) - run it again"
        )
    mode = _override("--mode", args.mode, str(doc.get("mode") or "stub"))
    if mode in ("record", "replay"):
        raise SwarmUsageError(f"--mode {mode}: a run is resumed in stub, sdk or cli mode")
    flows_dir = _override("--flows-dir", args.flows_dir, origin.get("flows_dir"))
    if flows_dir is None or not Path(flows_dir).is_dir():
        raise SwarmUsageError(
            f"the flows dir of run {run_dir.name} ({flows_dir}) is not there; pass --flows-dir DIR"
        )
    scenario = None
    if args.scenario is not None:
        print(f"swarm: --scenario {args.scenario} replaces the run's scenario", file=sys.stderr)
        scenario = Scenario.from_file(args.scenario)
    elif origin.get("scenario") is not None:
        source = str(origin.get("scenario_file") or f"{run_dir / 'spec.json'}: origin.scenario")
        scenario = Scenario.from_mapping(origin["scenario"], source=source)
    elif origin.get("scenario_file") and Path(str(origin["scenario_file"])).is_file():
        scenario = Scenario.from_file(str(origin["scenario_file"]))
    config = args.config or (Path(origin["config"]) if origin.get("config") else None)
    settings = resolve_settings(
        env=os.environ,
        mode=mode,
        runs_dir=run_dir.parent,
        flows_dir=Path(flows_dir),
        config_path=config,
    )
    show = args.progress == "always" or (args.progress == "auto" and sys.stdout.isatty())
    return build_orchestrator(
        settings,
        FlowRegistry(Path(flows_dir)),
        env=os.environ,
        runs_dir=run_dir.parent,
        engine_id=str(doc.get("engine") or "claude-step"),
        scenario=scenario,
        observer=ProgressPrinter(sys.stdout) if show else None,
        max_steps=origin.get("max_steps"),
        max_run_mb=origin.get("max_run_mb"),
    )


def _override(flag: str, given: Any, recorded: Any) -> Any:
    """The flag's value when given (saying so if it differs from the run's), else the run's."""
    if given is None:
        return recorded
    if recorded is not None and str(given) != str(recorded):
        print(f"swarm: {flag} {given} overrides the run's {recorded}", file=sys.stderr)
    return given
