"""``swarm cassettes status``: the recorded calls the current flows would no longer send.

Nothing runs and nothing is called: each cassette's request is compared with what the
flows and settings of now would send for its step (docs/record-replay.md#stale-cassettes), and the
stale ones are listed by test with the command that records that test again. Exit 0 when nothing is
stale, 1 when something is, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.cli.common import EXIT_FAILED, EXIT_OK, FLOWS_DIR_HELP, path_arg

if TYPE_CHECKING:
    from swarm_runtime.engines.request_parts import Expected
    from swarm_runtime.orchestrator.staleness import StaleCall

DEFAULT_CASSETTE_DIR = Path("golden/cassettes")
"""The pytest plugin's default (``--swarm-cassette-dir``)."""
DEFAULT_GOLDEN_DIR = Path("golden")
"""The pytest plugin's default (``--swarm-golden-dir``)."""


def add_parser(commands: Any) -> None:
    """Register ``swarm cassettes``."""
    parser = commands.add_parser("cassettes", help="check recorded calls against the flows")
    sub = parser.add_subparsers(dest="cassettes_command", metavar="ACTION")
    sub.required = True
    status = sub.add_parser(
        "status",
        help="list the recorded calls the current flows would no longer send, by test, "
        "with the command that re-records each test; exit 1 when one is stale",
    )
    status.add_argument(
        "--cassette-dir",
        type=path_arg,
        help="cassettes directory (default: $SWARM_CASSETTE_DIR, else golden/cassettes)",
    )
    status.add_argument("--flows-dir", type=path_arg, help=FLOWS_DIR_HELP)
    status.add_argument(
        "--golden-dir",
        type=path_arg,
        help="golden runs, to tell which tests compare one (default: $SWARM_GOLDEN_DIR, "
        "else golden)",
    )
    status.add_argument(
        "--config", type=path_arg, help="runtime.yaml (default: ./swarm/config/runtime.yaml)"
    )
    status.set_defaults(handler=handle_status)


def _expected(args: argparse.Namespace) -> dict[str, Expected]:
    """By engine: the model and parameters of the calls the current settings make."""
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.options import options_for
    from swarm_runtime.plugins import engine_registry

    settings = resolve_settings(env=os.environ, config_path=args.config)
    return engine_registry().expectations(lambda name: options_for(settings, os.environ, name))


def handle_status(args: argparse.Namespace) -> int:
    """Compare every cassette with the current flows; print the stale calls by test."""
    from swarm_runtime.errors import SwarmUsageError
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir
    from swarm_runtime.orchestrator.staleness import cassette_files, stale_calls

    root = args.cassette_dir or Path(os.environ.get("SWARM_CASSETTE_DIR") or DEFAULT_CASSETTE_DIR)
    if not root.is_dir():
        raise SwarmUsageError(
            f"cassette dir {root}: not a directory (give --cassette-dir DIR, where the "
            "recordings are: DIR/<test>/<flow>/<step>-<agent>-<iteration>.yaml)"
        )
    flows_dir = default_flows_dir(args.flows_dir)
    flows = FlowRegistry(flows_dir)
    stale = stale_calls(root, flows, _expected(args))
    total = sum(1 for _ in cassette_files(root))
    if not stale:
        print(
            f"nothing stale: the {total} recorded call(s) in {root} match the flows in {flows_dir}"
        )
        return EXIT_OK
    groups: dict[str, list[StaleCall]] = {}
    for call in stale:
        groups.setdefault(call.test, []).append(call)
    print(
        f"{len(stale)} of {total} recorded call(s) in {root} no longer match the flows in "
        f"{flows_dir} ({len(groups)} test(s)):"
    )
    golden = args.golden_dir or Path(os.environ.get("SWARM_GOLDEN_DIR") or DEFAULT_GOLDEN_DIR)
    compared = golden_tests(golden)
    for test, calls in groups.items():
        print(f"\n{test or '(swarm run cassettes)'}")
        for call in calls:
            what = ", ".join(call.parts) or "gone"
            name = call.cassette.removeprefix(f"{test}/")
            print(f"  {name}: {what} ({'; '.join(call.details)})")
        command = rerecord_command(
            test, calls, root, args.flows_dir, golden=golden, compared=compared
        )
        print(f"  re-record: {command}")
    return EXIT_FAILED


def golden_tests(golden_dir: Path) -> set[str]:
    """The tests (cassette dirs) whose recorded runs a golden holds: they compare one.

    A golden of recorded calls (``<scenario>.replay/``) names each call's cassette in its
    receipts, ``<test>/<flow>/<file>``; an unreadable receipt names none.
    """
    from swarm_runtime.inputs.files import read_bytes_limited
    from swarm_runtime.inputs.json_input import load_json
    from swarm_runtime.inputs.limits import MAX_INPUT_BYTES
    from swarm_runtime.orchestrator.staleness import base_test

    found: set[str] = set()
    for path in sorted(golden_dir.glob("*.replay/*/receipts/*.json")):
        try:
            receipt = load_json(read_bytes_limited(path, MAX_INPUT_BYTES))
        except (OSError, ValueError):
            continue
        cassette = receipt.get("cassette") if isinstance(receipt, dict) else None
        if isinstance(cassette, str) and cassette.count("/") >= 2:
            found.add(base_test(cassette.rsplit("/", 2)[0]))
    return found


def rerecord_command(
    test: str,
    calls: list[StaleCall],
    root: Path,
    flows: Path | None,
    *,
    golden: Path = DEFAULT_GOLDEN_DIR,
    compared: set[str] | frozenset[str] = frozenset(),
) -> str:
    """The command that records ``test`` again (a ``swarm run`` one for a run's dir).

    A test that compares a golden gets ``--snapshot-update``: its new recording makes a
    new golden, which the same command writes.
    """
    from swarm_runtime.engines.cassette import run_rerecord_command
    from swarm_runtime.orchestrator.staleness import base_test

    if not test:
        words = sorted({call.flow_key for call in calls})
        words += ["--flows-dir", str(flows)] if flows is not None else []
        return run_rerecord_command(root, words)
    module, _, name = base_test(test).rpartition("/")
    words = ["pytest", "--swarm-mode=record"]
    if root != DEFAULT_CASSETTE_DIR:
        words.append(f"--swarm-cassette-dir={root}")
    if flows is not None and flows != Path("flows"):
        words.append(f"--swarm-flows-dir={flows}")
    if base_test(test) in compared:
        if golden != DEFAULT_GOLDEN_DIR:
            words.append(f"--swarm-golden-dir={golden}")
        words.append("--snapshot-update")
    hint = ""
    if Path(f"{module}.py").is_file():
        # A parameter id is kept file-safe in the dir's name, not as pytest spells it: the
        # command names the test function, which records each of its parameters again.
        function, _, param = name.partition("-")
        words.append(f"{module}.py::{function.replace('.', '::')}")
        hint = " (every parameter of the test)" if param else ""
    else:
        hint = f" (run the test that records into cassette '{base_test(test)}')"
    return " ".join(shlex.quote(word) for word in words) + hint + _needs(calls)


def _needs(calls: list[StaleCall]) -> str:
    """What recording the calls again needs, by the engines that recorded them."""
    from swarm_runtime.engines.options import EngineOptions
    from swarm_runtime.plugins import engine_registry

    registry = engine_registry()
    said: list[str] = []
    for engine_id in sorted({call.engine for call in calls}):
        section = registry.section_of(engine_id) or ""
        options = EngineOptions(mode="record", section_name=section)
        problem = registry.missing(engine_id, options) if engine_id in registry.ids() else None
        if problem is not None:
            said.append(problem.removeprefix("makes live API calls and needs "))
    return f" (with {'; '.join(said)})" if said else ""
