"""``swarm runs list|show|validate``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from swarm_runtime.cli.common import EXIT_FAILED, EXIT_OK, RUNS_DIR_HELP, path_arg
from swarm_runtime.errors import SwarmUsageError


def add_parser(commands: Any) -> None:
    """Register ``swarm runs``."""
    parser = commands.add_parser("runs", help="list, show and validate runs")
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="list runs, newest first")
    listing.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    listing.set_defaults(handler=handle_list)
    show = sub.add_parser("show", help="show a run's summary and steps")
    show.add_argument("run", help="run id or run directory")
    show.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    show.set_defaults(handler=handle_show)
    validate = sub.add_parser(
        "validate", help="check a run directory against the contracts; exit 1 on any violation"
    )
    validate.add_argument("run", help="run id or run directory (also one written by another tool)")
    validate.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    validate.set_defaults(handler=handle_validate)
    verify = sub.add_parser(
        "verify", help="re-hash the artifacts receipts point to; exit 1 if any changed"
    )
    verify.add_argument("run", help="run id or run directory")
    verify.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    verify.set_defaults(handler=handle_verify)
    facts = sub.add_parser("facts", help="the facts a run's replies declared (docs/flows.md#facts)")
    facts.add_argument("run", help="run id or run directory")
    facts.add_argument("--runs-dir", type=path_arg, help=RUNS_DIR_HELP)
    facts.add_argument(
        "--all", action="store_true", help="every entry, superseded ones too, in order"
    )
    facts.set_defaults(handler=handle_facts)


def _runs_dir(explicit: Path | None) -> Path:
    from swarm_runtime.config import resolve_settings

    return resolve_settings(env=os.environ, runs_dir=explicit).runs_dir


def resolve_run_dir(ref: str, runs_dir: Path | None) -> Path:
    """A run directory from a path or a run id under the runs dir."""
    candidate = Path(ref)
    if candidate.is_dir():
        return candidate
    base = _runs_dir(runs_dir)
    if "/" not in ref and (base / ref).is_dir():
        return base / ref
    raise SwarmUsageError(f"no run {ref!r}: not a directory, and no such run in {base}")


def handle_list(args: argparse.Namespace) -> int:
    """One row per run with status, flows, steps and tokens."""
    from swarm_runtime.cli.render import format_table
    from swarm_runtime.storage.status import observed_status, read_meta

    base = _runs_dir(args.runs_dir)
    if base.exists() and not base.is_dir():
        raise SwarmUsageError(f"runs dir {base} is not a directory")
    if args.runs_dir is not None and not base.is_dir():
        raise SwarmUsageError(f"--runs-dir {args.runs_dir}: no such directory")
    rows: list[list[object]] = []
    for path in sorted(base.glob("run-*"), reverse=True):
        meta = read_meta(path)
        if meta is None:
            rows.append([path.name, "unreadable", "", "", ""])
            continue
        tokens = meta.get("tokens")
        flows = meta.get("flows")
        status = observed_status(path, meta)
        rows.append(
            [
                path.name,
                status,
                ",".join(map(str, flows)) if isinstance(flows, list) else "?",
                _steps(path, meta, status),
                tokens.get("total", "") if isinstance(tokens, dict) else "?",
            ]
        )
    if not rows:
        print(f"no runs in {base}")
        return EXIT_OK
    print(format_table(["run", "status", "flows", "steps", "tokens"], rows))
    return EXIT_OK


def _steps(run_dir: Path, meta: dict[str, Any], status: str) -> object:
    """Step executions of a run: meta.json's count, or the log's while meta.json lags.

    meta.json is written when the status changes; a run under way or killed has started
    steps since, and its event log has a ``step_start`` for each.
    """
    if status not in ("running", "crashed"):
        return meta.get("total_steps_executed", "")
    from swarm_runtime.storage.store import read_event_log

    try:
        events = read_event_log(run_dir / "events.jsonl").events
    except (OSError, ValueError):
        return meta.get("total_steps_executed", "")
    return sum(1 for event in events if event.get("kind") == "step_start")


def handle_show(args: argparse.Namespace) -> int:
    """The run's summary and one row per step execution, from its event log."""
    from swarm_runtime.cli.render import format_table
    from swarm_runtime.storage.status import observed_status, read_meta
    from swarm_runtime.storage.store import read_event_log

    root = resolve_run_dir(args.run, args.runs_dir)
    meta = read_meta(root)
    if meta is None:
        raise SwarmUsageError(f"{root / 'meta.json'}: missing, unreadable or not a JSON object")
    flows = meta.get("flows")
    flow_list = ", ".join(map(str, flows)) if isinstance(flows, list) else "?"
    status = observed_status(root, meta)
    print(f"run {meta.get('run_id')}: {status}  flows: {flow_list}")
    if status in ("crashed", "paused", "stopped"):
        print(f"resume it with: swarm resume {root.name}")
    if meta.get("error"):
        print(f"error: {meta['error']}")
    log = read_event_log(root / "events.jsonl")
    if log.torn is not None:
        print(log.torn.describe(root / "events.jsonl"), file=sys.stderr)
    rows: list[list[object]] = []
    for event in log.events:
        kind, payload = event.get("kind"), event.get("payload")
        if not isinstance(payload, dict):
            payload = {}
        if kind in ("step_end", "step_error"):
            rows.append(
                [
                    f"{event.get('flow_key')}/{event.get('step_id')}",
                    payload.get("status") or "?",
                    payload.get("duration_ms", "?"),
                    payload.get("error") or "",
                ]
            )
        elif kind == "route_decision" and rows:
            rows[-1][3] = _route(payload)
    print(format_table(["step", "status", "ms", "route / error"], rows))
    return EXIT_OK


def _route(payload: dict[str, Any]) -> str:
    """A route_decision as a user reads it: ``loop -> author (loop_iteration:1)``."""
    decision, to_step, reason = (
        payload.get("decision"),
        payload.get("to_step"),
        payload.get("reason"),
    )
    if to_step is None:  # the flow ends here: there is no step to point at
        return f"{decision} ({reason})" if reason else str(decision)
    return f"{decision} -> {to_step} ({reason})" if reason else f"{decision} -> {to_step}"


def handle_validate(args: argparse.Namespace) -> int:
    """Print every violation as ``file:line: message``; exit 1 if any."""
    from swarm_runtime.contracts.check import validate_run_dir
    from swarm_runtime.storage.status import observed_status

    root = resolve_run_dir(args.run, args.runs_dir)
    violations = validate_run_dir(root)
    status = observed_status(root)
    if status in ("crashed", "paused"):
        # Killed or paused: no run_completed yet, and that is not a broken contract.
        print(f"{root}: {status}, resumable with 'swarm resume {root.name}'")
    for violation in violations:
        print(f"{root}/{violation}")
    if violations:
        print(f"{len(violations)} violation(s) in {root}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{root}: no violations")
    return EXIT_OK


def handle_verify(args: argparse.Namespace) -> int:
    """One line per artifact pointer of every receipt: ok, changed, missing or not local."""
    from swarm_runtime.artifacts import verify_run_artifacts

    root = resolve_run_dir(args.run, args.runs_dir)
    results = verify_run_artifacts(root)
    for result in results:
        print(result)
    bad = [r for r in results if not r.ok]
    if bad:
        print(f"{len(bad)} of {len(results)} artifact(s) do not match in {root}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{root}: {len(results)} artifact(s) verified")
    return EXIT_OK


def handle_facts(args: argparse.Namespace) -> int:
    """The current facts of a run (each id's latest), or ``--all`` its whole journal."""
    from swarm_runtime.cli.render import format_table
    from swarm_runtime.inputs.files import read_run_text
    from swarm_runtime.inputs.json_input import load_json

    root = resolve_run_dir(args.run, args.runs_dir)
    path = root / "facts.jsonl"
    try:
        text = read_run_text(path) if path.exists() else ""
        entries = [load_json(line) for line in text.splitlines() if line.strip()]
        rows = [(e["id"], f"{e['flow']}/{e['step']}#{e['iteration']}", e["text"]) for e in entries]
        shown = rows if args.all else list({str(row[0]): row for row in rows}.values())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SwarmUsageError(f"{path}: not a facts journal ({exc})") from None
    if not shown:
        print(f"{root}: no facts")
        return EXIT_OK
    print(format_table(("id", "declared by", "text"), shown))
    return EXIT_OK
