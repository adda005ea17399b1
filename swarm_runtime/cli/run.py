"""``swarm run``: run flows and print a line per step (on a terminal) and a final table."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import EXIT_FAILED, EXIT_OK, FLOWS_DIR_HELP, RUNS_DIR_HELP, path_arg
from swarm_runtime.cli.render import report
from swarm_runtime.cli.submit import add_celery_options, submit_and_follow

if TYPE_CHECKING:
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.spec import StepSpec
    from swarm_runtime.orchestrator.plan import EngineChoice, RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator
    from swarm_runtime.orchestrator.state import RunOutcome


def add_parser(commands: Any) -> None:
    """Register ``swarm run``."""
    parser = commands.add_parser(
        "run",
        help="run flows stepwise (default: every flow of flows.yaml, in stub mode)",
        description="Run flows one step at a time. With no FLOW, runs every flow listed in "
        "flows.yaml of the flows dir (or every flow, sorted, when there is none).",
    )
    parser.add_argument("flows", nargs="*", metavar="FLOW", help="flow keys to run, in order")
    parser.add_argument("--flows-dir", type=path_arg, help=FLOWS_DIR_HELP)
    parser.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    _add_engines(parser)
    _add_steps(parser)
    parser.add_argument(
        "--config", type=path_arg, help="runtime.yaml (default: ./swarm/config/runtime.yaml)"
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
    _add_limits(parser)
    add_celery_options(parser)
    parser.set_defaults(handler=handle)


def _add_engines(parser: argparse.ArgumentParser) -> None:
    """``--mode`` to ``--cassette-dir``: which engines run the steps, and how they call."""
    parser.add_argument(
        "--mode",
        help="the run's mode: stub (default), sdk, cli, replay, record (every engine that has "
        "it; also SWARM_CLAUDE_STEP_ENGINE_MODE, runtime.yaml mode)",
    )
    parser.add_argument(
        "--engine",
        help="the engine of every step that names none: claude-step (default), openai-step, "
        "gemini-step or a registered one (a step's engine: and runtime.yaml's "
        "engine_strategy come first)",
    )
    parser.add_argument(
        "--gemini-mode",
        help="gemini-step's mode: stub (default) or cli (also SWARM_GEMINI_STUB=0)",
    )
    parser.add_argument(
        "--record-via",
        help="what --mode record records claude-step through: sdk (default) or cli "
        "(the Claude Code CLI); a replay runs each step the way it was recorded",
    )
    parser.add_argument(
        "--navigator",
        choices=("llm", "deterministic"),
        help="how a navigator step's move is chosen: llm (default: asked of the navigator, "
        "one call through the step's engine) or deterministic (the first candidate whose "
        "condition holds, no call); also SWARM_NAVIGATOR, runtime.yaml navigator.mode",
    )
    parser.add_argument(
        "--backend",
        default="claude-step-orchestrator",
        help="claude-step-orchestrator (default), gemini-step-orchestrator, or celery (on "
        "'swarm worker' processes through --broker; claude-step runs the steps)",
    )
    parser.add_argument("--scenario", type=path_arg, help="stub scenario file (YAML)")
    parser.add_argument(
        "--faults",
        type=path_arg,
        metavar="FILE",
        help="fault plan (YAML or JSON): per step, one fault (or null) per attempt, such as "
        "{review: [{kind: http_429, retry_after_ms: 0}, null]}; replaces a scenario's faults:",
    )
    parser.add_argument(
        "--cassette-dir",
        type=path_arg,
        metavar="DIR",
        help="record/replay: the cassettes, DIR/<flow>/<step>-<agent>-<iteration>.yaml "
        "(a recording replaces DIR whole once the run succeeds)",
    )


def _add_steps(parser: argparse.ArgumentParser) -> None:
    """``--from``, ``--to`` and ``--param``: which steps run, and what every prompt gets."""
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


def _add_limits(parser: argparse.ArgumentParser) -> None:
    """``--max-steps`` and ``--max-run-mb``: how far a run may go before it ends failed."""
    parser.add_argument(
        "--max-steps",
        type=_positive_int,
        metavar="N",
        help="step executions a run may make before it fails "
        "(default: 10 per step of its flows, at least 100)",
    )
    parser.add_argument(
        "--max-run-mb",
        type=_positive_int,
        metavar="N",
        help="how big the run dir may grow, in MiB, before the run ends failed "
        "(default: max_run_mb in runtime.yaml, else 1024)",
    )
    parser.add_argument(
        "--budget",
        metavar="KEY=N,…",
        help="the run budget: tokens=N,cost_usd=X,duration_ms=M (any of them); a step "
        "past it fails the run with budget_exceeded (default: budget in runtime.yaml)",
    )


def _positive_int(text: str) -> int:
    """A whole number >= 1 (argparse turns the ValueError into exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: give a whole number >= 1")
    return value


_BACKENDS = {
    "claude-step-orchestrator": "claude-step",
    "gemini-step-orchestrator": "gemini-step",
    "celery": "claude-step",
}


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
    if args.backend == "celery" or args.detach or args.broker:
        return submit_and_follow(args, _prepare, report, began)
    orchestrator, spec, cassettes = _prepare(args)
    outcome = run_with_signals(orchestrator, lambda: orchestrator.run(spec))
    code = report(outcome, int((time.monotonic() - began) * 1000))
    flows = outcome.summary.get("flows", ())
    if any(step.judges for key in flows for step in _steps(orchestrator, key)):
        from swarm_runtime.cli.render import judgement_lines

        for line in judgement_lines(outcome.path / "events.jsonl"):
            print(line)
    if cassettes is not None:
        code = max(code, _settle_cassettes(cassettes, outcome))
    return code


def _steps(orchestrator: Orchestrator, flow_key: str) -> tuple[StepSpec, ...]:
    """The steps of a flow the run ran (none when it cannot be read any more)."""
    from swarm_runtime.errors import SwarmError

    try:
        return orchestrator.flows.get(flow_key).steps
    except SwarmError:
        return ()


def _cassettes(args: argparse.Namespace, mode: str) -> Cassettes:
    """The cassettes of a record or replay run, named by ``--cassette-dir``."""
    from swarm_runtime.engines.cassette import Cassettes, run_rerecord_command
    from swarm_runtime.errors import SwarmUsageError

    if args.cassette_dir is None:
        raise SwarmUsageError(
            f"--mode {mode} needs --cassette-dir DIR: where the cassettes of this run are "
            "(DIR/<flow>/<step>-<agent>-<iteration>.yaml)"
        )
    # What shapes the requests, so the printed command records the very calls replayed.
    words = list(args.flows)
    for flag, value in (
        ("--flows-dir", args.flows_dir),
        ("--config", args.config),
        ("--backend", None if args.backend == "claude-step-orchestrator" else args.backend),
        ("--engine", args.engine),
        ("--navigator", args.navigator),
        ("--record-via", args.record_via),
        ("--from", args.start_step),
        ("--to", args.end_step),
        *(("--param", param) for param in args.param),
    ):
        words += [flag, str(value)] if value is not None else []
    return Cassettes(
        args.cassette_dir,
        name="",
        record=mode == "record",
        rerecord_command=run_rerecord_command(args.cassette_dir, words),
    )


def _settle_cassettes(cassettes: Cassettes, outcome: RunOutcome) -> int:
    """Keep a successful recording; after a replay, fail on recordings nothing asked for."""
    if cassettes.record:
        if outcome.status == "succeeded":
            cassettes.commit()
            print(f"swarm: recorded the run's calls in {cassettes.directory}", file=sys.stderr)
            return EXIT_OK
        cassettes.discard()
        print(
            f"swarm: the run did not succeed: nothing recorded, {cassettes.directory} is as it was",
            file=sys.stderr,
        )
        return EXIT_FAILED
    problems = [*cassettes.unplayed, *cassettes.never_asked_for()]
    if problems and not cassettes.divergences and outcome.status == "succeeded":
        print(
            "swarm: error: recorded calls were never played (the run no longer makes "
            f"them); re-record with: {cassettes.rerecord_command}\n  " + "\n  ".join(problems),
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _prepare(args: argparse.Namespace) -> tuple[Orchestrator, RunSpec, Cassettes | None]:
    """The orchestrator and the run the arguments, environment and runtime.yaml ask for."""
    from swarm_runtime.cli.render import listeners
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.errors import SwarmUsageError
    from swarm_runtime.flow.budget_input import budget_from_text
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir
    from swarm_runtime.orchestrator.assembly import build_orchestrator
    from swarm_runtime.orchestrator.plan import RunDeps, RunLimits, RunSpec, no_wait
    from swarm_runtime.timeutil import interruptible_sleep

    settings = resolve_settings(
        env=os.environ,
        mode=args.mode,
        runs_dir=args.runs_dir,
        flows_dir=args.flows_dir,
        durable=args.durable,
        config_path=args.config,
        engine_given={
            "gemini": {"mode": args.gemini_mode},
            "claude": {"record_via": args.record_via},
        },
        navigator=args.navigator,
    )
    for notice in settings.notices:
        print(f"swarm: note: {notice}", file=sys.stderr)
    if args.backend not in _BACKENDS:
        raise SwarmUsageError(f"--backend {args.backend!r}: allowed: {', '.join(_BACKENDS)}")
    registry = FlowRegistry(default_flows_dir(settings.flows_dir))
    flow_keys = tuple(args.flows) or tuple(registry.order())
    scenario = Scenario.from_file(args.scenario) if args.scenario else None
    cassettes = _cassettes(args, settings.mode) if settings.mode in ("record", "replay") else None
    engine = _engine(args, settings.mode, cassettes, scenario)
    orchestrator = build_orchestrator(
        settings,
        registry,
        env=os.environ,
        deps=RunDeps(
            plugins=listeners(args.progress),
            sleep=no_wait if engine.replays else interruptible_sleep,
        ),
        engine=engine,
        limits=RunLimits(
            max_steps=args.max_steps,
            max_run_mb=args.max_run_mb,
            budget=budget_from_text(args.budget) if args.budget is not None else None,
        ),
        origin={"config": str(args.config.resolve()) if args.config else None},
    )
    spec = RunSpec(
        flows=flow_keys,
        params=_params(args.param),
        backend=args.backend,
        initiator="cli",
        start_step=args.start_step,
        end_step=args.end_step,
    )
    return orchestrator, spec, cassettes


def _engine(
    args: argparse.Namespace, mode: str, cassettes: Cassettes | None, scenario: Scenario | None
) -> EngineChoice:
    """The engine of the mode, with the scenario and the ``--faults`` plan."""
    from swarm_runtime.orchestrator.plan import EngineChoice

    engine = EngineChoice(
        engine_id=args.engine or _BACKENDS[args.backend],
        mode=mode,
        cassettes=cassettes,
        scenario=scenario,
    )
    if args.faults:
        from swarm_runtime.engines.faults import FaultPlan
        from swarm_runtime.record import replace

        engine = replace(engine, faults=FaultPlan.from_file(args.faults))
    return engine


def run_with_signals(orchestrator: Orchestrator, start: Callable[[], RunOutcome]) -> RunOutcome:
    """Run ``start``, with Ctrl-C, SIGTERM and SIGHUP turned into stop and abort requests."""
    hangup = getattr(signal, "SIGHUP", None)
    ending = [signal.SIGTERM, *([hangup] if hangup is not None else [])]
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, *ending)}

    def on_sigint(_signum: int, _frame: object) -> None:
        # First Ctrl-C: stop at the next step boundary. Second: abort the step under way.
        if orchestrator.interrupt():
            raise KeyboardInterrupt
        print(
            "swarm: stopping after the current step (Ctrl-C again to abort it)",
            file=sys.stderr,
            flush=True,
        )

    def on_sigterm(signum: int, _frame: object) -> None:
        # Asked to end (timeout, CI cancel, the terminal closed): abort the step under way
        # and close the run, so it ends with run_completed like any other.
        reason = f"terminated ({signal.Signals(signum).name})"
        orchestrator.interrupt(reason)
        if orchestrator.interrupt(reason):
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    for sig in ending:
        signal.signal(sig, on_sigterm)
    try:
        return start()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
