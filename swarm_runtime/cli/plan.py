"""``swarm plan validate|run``: check an execution plan, or run it once per input (docs/plans.md).

``plan run`` runs one cycle per ``--input``, each into its own run directory, a run of the
kernel assembled as ``swarm run`` assembles one. A cycle that fails (CycleFail) is reported
and the next one runs; exit code 1 if any failed. A FailFast failure stops at once with
exit code 3 (the inputs after it are not run); so does a cycle paused or stopped (exit 130:
``swarm resume RUN`` goes on with it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import (
    EXIT_FAILED,
    EXIT_FAILFAST,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    path_arg,
)

if TYPE_CHECKING:
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.plan.executor import CycleResult, PlanRuntime

DEFAULT_STORE = Path("swarm") / "plan-store.sqlite3"
"""Where memories and sessions are kept, under the working directory (``--store``)."""


def add_parser(commands: Any) -> None:
    """Register ``swarm plan``."""
    parser = commands.add_parser(
        "plan", help="validate or run an execution plan (a flat list of typed steps)"
    )
    actions = parser.add_subparsers(dest="plan_command", metavar="ACTION")
    actions.required = True
    check = actions.add_parser("validate", help="check a plan against the v1 rules")
    check.add_argument("plan", type=path_arg, metavar="PLAN.json", help="the plan file")
    check.set_defaults(handler=handle_validate)
    run = actions.add_parser(
        "run",
        help="run a plan: one cycle per --input",
        description="Run an execution plan once per --input, each cycle into its own run "
        "directory. Exit 0: every cycle succeeded; 1: a cycle failed; 3: FailFast.",
    )
    run.add_argument("plan", type=path_arg, metavar="PLAN.json", help="the plan file")
    run.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="TEXT",
        help="a cycle's input (repeat for more cycles)",
    )
    run.add_argument(
        "--session", metavar="REF", help="the session the cycles belong to (default: a new one)"
    )
    run.add_argument(
        "--store",
        type=path_arg,
        metavar="FILE",
        help=f"the SQLite store of memories and sessions (default: SWARM_PLAN_STORE, "
        f"else ./{DEFAULT_STORE.as_posix()})",
    )
    run.add_argument(
        "--repo",
        type=path_arg,
        metavar="DIR",
        help="the repository payload paths are relative to (default: the current directory)",
    )
    run.add_argument("--runs-dir", type=path_arg, help="where runs go (default: ./swarm/runs)")
    run.add_argument(
        "--mode", help="the model calls' mode: stub (default), sdk, cli, replay, record"
    )
    run.add_argument(
        "--cassette-dir", type=path_arg, metavar="DIR", help="record/replay: the cassettes"
    )
    run.add_argument("--config", type=path_arg, help="runtime.yaml")
    run.add_argument("--durable", action="store_true", default=None, help="fsync every write")
    run.add_argument(
        "--scenario", type=path_arg, help="stub scenario file (YAML) for the model calls"
    )
    run.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="per-step lines: on a terminal (auto), always, or never",
    )
    run.set_defaults(handler=handle_run)


def handle_validate(args: argparse.Namespace) -> int:
    """Print every rule the plan breaks (exit 2), or that it is valid (exit 0)."""
    from swarm_runtime.plan.validate import plan_violations, read_plan_file, summarise

    found = plan_violations(read_plan_file(args.plan))
    if not found:
        print(f"{args.plan}: a valid v1 plan")
        return EXIT_OK
    print(f"{args.plan}: {len(found)} problem(s); no step of it would run:", file=sys.stderr)
    for line in summarise(found):
        print(f"  {line}", file=sys.stderr)
    return EXIT_USAGE


def handle_run(args: argparse.Namespace) -> int:
    """Run the cycles and report each; the exit code says how they ended."""
    from swarm_runtime.errors import FailFast
    from swarm_runtime.plan.validate import read_plan_file

    plan = read_plan_file(args.plan)
    runtime, cassettes, session = _prepare(args)
    code = EXIT_OK
    try:
        runtime.memory()  # a store that is not one is refused before any cycle runs
        for number, text in enumerate(args.input, start=1):
            try:
                result = runtime.run_cycle(plan, input=text, session=session)
            except FailFast as exc:
                left = len(args.input) - number
                print(f"cycle {number}: failed, run {exc.run_id}", file=sys.stdout)
                print(
                    f"swarm: error: {exc}; the runtime stopped"
                    + (f" ({left} input(s) not run)" if left else ""),
                    file=sys.stderr,
                )
                return EXIT_FAILFAST
            _report(number, result)
            if result.status in ("paused", "stopped"):
                return EXIT_INTERRUPTED
            if result.status != "succeeded":
                code = EXIT_FAILED
    finally:
        runtime.close()
    print(f"session {session}; store {runtime.store_path}")
    if cassettes is not None:
        code = max(code, _settle(cassettes, code))
    return code


def _report(number: int, result: CycleResult) -> None:
    if result.status == "succeeded":
        print(f"cycle {number}: succeeded, run {result.run_id} ({len(result.results)} steps)")
        return
    print(f"cycle {number}: {result.status}, run {result.run_id}")
    if result.status == "paused":
        print(
            f"swarm: cycle {number} paused at a step boundary; resume with: swarm resume "
            f"{result.run_id} (the inputs after it were not run)",
            file=sys.stderr,
        )
        return
    print(f"swarm: cycle {number}: {result.error}", file=sys.stderr)


def _prepare(args: argparse.Namespace) -> tuple[PlanRuntime, Cassettes | None, str]:
    from swarm_runtime.cli.render import listeners
    from swarm_runtime.cli.run import run_with_signals
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.errors import SwarmUsageError
    from swarm_runtime.ids import new_run_id
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, no_wait
    from swarm_runtime.plan.executor import PlanPaths, PlanRuntime
    from swarm_runtime.timeutil import interruptible_sleep, system_clock

    settings = resolve_settings(
        env=os.environ,
        mode=args.mode,
        runs_dir=args.runs_dir,
        durable=args.durable,
        config_path=args.config,
    )
    cassettes = None
    mode = settings.mode
    if mode in ("record", "replay"):
        if len(args.input) != 1:
            raise SwarmUsageError(
                f"--mode {mode} records or replays one cycle: give one --input (got "
                f"{len(args.input)}), and a --cassette-dir per cycle"
            )
        cassettes = _cassettes(args, mode)
    engine = EngineChoice(
        mode=mode,
        cassettes=cassettes,
        scenario=Scenario.from_file(args.scenario) if args.scenario else None,
    )
    store = args.store or Path(os.environ.get("SWARM_PLAN_STORE") or DEFAULT_STORE)
    session = args.session or "session-" + new_run_id(system_clock()).removeprefix("run-")
    if not session.strip():
        raise SwarmUsageError("--session: an empty session ref is not allowed")
    runtime = PlanRuntime.from_settings(
        settings,
        PlanPaths(runs_dir=settings.runs_dir, store_path=store, repo_root=args.repo or Path.cwd()),
        env=os.environ,
        deps=RunDeps(
            plugins=listeners(args.progress),
            sleep=no_wait if engine.replays else interruptible_sleep,
        ),
        engine=engine,
        initiator="cli",
        origin={
            "plan_file": str(args.plan.resolve()),
            "config": str(args.config.resolve()) if args.config else None,
        },
    )
    runtime.around = run_with_signals
    return runtime, cassettes, session


def _cassettes(args: argparse.Namespace, mode: str) -> Cassettes:
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.errors import SwarmUsageError

    if args.cassette_dir is None:
        raise SwarmUsageError(f"--mode {mode} needs --cassette-dir DIR: where its cassettes are")
    command = (
        f"swarm plan run {args.plan} --mode record --cassette-dir {args.cassette_dir} "
        f"--input {args.input[0]!r}"
    )
    return Cassettes(args.cassette_dir, name="", record=mode == "record", rerecord_command=command)


def _settle(cassettes: Cassettes, code: int) -> int:
    """Keep a successful recording; after a replay, fail on recordings never asked for."""
    if cassettes.record:
        if code == EXIT_OK:
            cassettes.commit()
            print(f"swarm: recorded the cycle's calls in {cassettes.directory}", file=sys.stderr)
            return EXIT_OK
        cassettes.discard()
        return EXIT_FAILED
    problems = [*cassettes.unplayed, *cassettes.never_asked_for()]
    if problems and code == EXIT_OK:
        print(
            "swarm: error: recorded calls were never played; re-record with: "
            f"{cassettes.rerecord_command}\n  " + "\n  ".join(problems),
            file=sys.stderr,
        )
        return EXIT_FAILED
    return code
