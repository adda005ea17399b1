"""``swarm run``: run flows and print a line per step (on a terminal) and a final table."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    default_flows_dir,
)

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.runner import Orchestrator, RunOutcome, RunSpec

__all__ = [
    "add_parser",
    "handle",
]


def add_parser(commands: Any) -> None:
    """Register ``swarm run``."""
    parser = commands.add_parser(
        "run",
        help="run flows stepwise (default: every flow of flows.yaml, in stub mode)",
        description="Run flows one step at a time. With no FLOW, runs every flow listed in "
        "flows.yaml of the flows dir (or every flow, sorted, when there is none).",
    )
    parser.add_argument("flows", nargs="*", metavar="FLOW", help="flow keys to run, in order")
    parser.add_argument("--flows-dir", type=Path, help="flows directory (default: ./flows)")
    parser.add_argument(
        "--runs-dir", type=Path, help="where runs are written (default: ./swarm/runs)"
    )
    parser.add_argument("--mode", help="engine mode: stub (default), sdk, cli, replay, record")
    parser.add_argument(
        "--backend",
        default="claude-step-orchestrator",
        help="claude-step-orchestrator (default) or gemini-step-orchestrator",
    )
    parser.add_argument("--scenario", type=Path, help="stub scenario file (YAML)")
    parser.add_argument(
        "--from", dest="start_step", metavar="STEP", help="first step (STEP or FLOW/STEP)"
    )
    parser.add_argument(
        "--to", dest="end_step", metavar="STEP", help="last step (STEP or FLOW/STEP)"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="request parameter passed to every prompt (repeatable)",
    )
    parser.add_argument(
        "--config", type=Path, help="runtime.yaml (default: ./swarm/config/runtime.yaml)"
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        default=None,
        help="fsync every write (also SWARM_DURABLE=1)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="per-step lines: on a terminal (auto), always, or never",
    )
    parser.add_argument(
        "--max-steps",
        type=_positive_int,
        metavar="N",
        help="step executions a run may make before it fails "
        "(default: 10 per step of its flows, at least 100)",
    )
    parser.set_defaults(handler=handle)


def _positive_int(text: str) -> int:
    """``--max-steps``: a whole number >= 1 (argparse turns the ValueError into exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: give a whole number >= 1")
    return value


_BACKENDS = {"claude-step-orchestrator": "claude-step", "gemini-step-orchestrator": "gemini-step"}


def _params(pairs: list[str]) -> dict[str, str]:
    from swarm_runtime.errors import SwarmUsageError

    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SwarmUsageError(f"--param {pair!r}: expected KEY=VALUE")
        params[key] = value
    return params


def handle(args: argparse.Namespace) -> int:
    """Run and report; the exit code says how the run ended."""
    began = time.monotonic()
    orchestrator, spec = _prepare(args)
    outcome = _run_with_signals(orchestrator, spec)
    return _report(outcome, int((time.monotonic() - began) * 1000))


def _prepare(args: argparse.Namespace) -> tuple[Orchestrator, RunSpec]:
    """The orchestrator and the run the arguments, environment and runtime.yaml ask for."""
    from swarm_runtime.cli.render import ProgressPrinter
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.errors import SwarmUsageError
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.assembly import build_orchestrator
    from swarm_runtime.orchestrator.runner import RunSpec

    settings = resolve_settings(
        env=os.environ,
        mode=args.mode,
        runs_dir=args.runs_dir,
        flows_dir=args.flows_dir,
        durable=args.durable,
        config_path=args.config,
    )
    if args.backend not in _BACKENDS:
        raise SwarmUsageError(f"--backend {args.backend!r}: allowed: {', '.join(_BACKENDS)}")
    registry = FlowRegistry(default_flows_dir(settings.flows_dir))
    flow_keys = tuple(args.flows) or tuple(registry.order())
    scenario = Scenario.from_file(args.scenario) if args.scenario else None
    show = args.progress == "always" or (args.progress == "auto" and sys.stdout.isatty())
    orchestrator = build_orchestrator(
        settings,
        registry,
        env=os.environ,
        engine_id=_BACKENDS[args.backend],
        scenario=scenario,
        observer=ProgressPrinter(sys.stdout) if show else None,
        max_steps=args.max_steps,
    )
    spec = RunSpec(
        flows=flow_keys,
        params=_params(args.param),
        backend=args.backend,
        initiator="cli",
        start_step=args.start_step,
        end_step=args.end_step,
    )
    return orchestrator, spec


def _run_with_signals(orchestrator: Orchestrator, spec: RunSpec) -> RunOutcome:
    """Run, with Ctrl-C and SIGTERM turned into stop and abort requests."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_sigint(_signum: int, _frame: object) -> None:
        # First Ctrl-C: stop at the next step boundary. Second: abort the step under way.
        if orchestrator.interrupt():
            raise KeyboardInterrupt
        print(
            "swarm: stopping after the current step (Ctrl-C again to abort it)",
            file=sys.stderr,
            flush=True,
        )

    def on_sigterm(_signum: int, _frame: object) -> None:
        # Asked to end (timeout, CI cancel): abort the step under way, close the run.
        orchestrator.interrupt()
        if orchestrator.interrupt():
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return orchestrator.run(spec)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _report(outcome: RunOutcome, wall_ms: int) -> int:
    """Print how the run ended and its table; the exit code."""
    from swarm_runtime.cli.render import run_table

    if outcome.interrupted:
        code = EXIT_INTERRUPTED
    else:
        code = EXIT_OK if outcome.status == "succeeded" else EXIT_FAILED
    for warning in outcome.warnings:
        print(f"swarm: warning: {warning}", file=sys.stderr)
    if outcome.interrupted:
        executed = outcome.summary.get("total_steps_executed", 0)
        if outcome.aborted:
            print(
                f"swarm: aborted: the step under way was cut short and recorded as failed "
                f"(run {outcome.run_id}, {executed} step execution(s))",
                file=sys.stderr,
            )
        else:
            print(
                f"swarm: stopped at a step boundary after {executed} step execution(s); every "
                f"finished step is recorded in run {outcome.run_id}",
                file=sys.stderr,
            )
    elif outcome.error:
        print(f"error: {outcome.error}", file=sys.stderr)
    try:
        print(run_table(outcome.summary, wall_ms))
        print(f"run {outcome.run_id}: {outcome.status} ({outcome.path})")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of our output went away (`swarm run | head`); the run's outcome,
        # not the pipe, decides the exit code.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return code
