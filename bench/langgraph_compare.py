"""A step of the runtime against a node of LangGraph, the same flow in one process.

The same shape on both sides: a linear flow of 20 steps (default), run from start to end.

- **swarm**: ``Orchestrator(...).run`` of a flow of that many distinct steps, written to a
  temporary flows dir, stub engine, every contract file written as usual (receipt,
  transcript, events, history, checkpoint, meta), runs on tmpfs (``/dev/shm``) when there is
  one. One ``FlowRegistry`` for every run, so the flow is parsed once (in the warm-up).
- **langgraph**: a ``StateGraph`` of as many nodes, ``START -> n0 -> ... -> END``, compiled
  once; each node does what a stub step's model stand-in does: it makes a reply and a
  handoff dict and merges the handoff into the state (no I/O).
  (a) no checkpointer; (b) ``SqliteSaver`` on a temp file and ``durability="sync"``, a new
  thread per run.

Alternating rounds (the order rotates every round), each round ``--runs`` runs of each
side; printed: the median us per step of each and the median of the per-round ratios
swarm / langgraph. Targets: <= 1.0 against (a), <= 0.5 against (b). It exits 0 whether
the targets are met or missed (and when LangGraph is not installed: it says how to install
it), 1 only when a run fails.

    python bench/langgraph_compare.py [--steps N] [--rounds N] [--runs N] [--quick]

See docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET_PLAIN = 1.0  # swarm us/step <= LangGraph's without persistence
TARGET_SQLITE = 0.5  # ... and <= half LangGraph's with a SQLite checkpointer, durability=sync
INSTALL = "pip install 'langgraph>=1.2' langgraph-checkpoint-sqlite"

STEP = """\
  - id: s{n}
    agents: [worker]
    role: "Do part {n}."
    teaching_notes: {{inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}}
"""


class BenchFailure(Exception):
    """A run did not do what it should: the numbers would mean nothing."""


def write_flow(root: Path, steps: int) -> Path:
    flows = root / "flows"
    flows.mkdir()
    head = 'key: line\ntitle: "A line"\ndescription: "Distinct steps."\nsteps:\n'
    body = "".join(STEP.format(n=n) for n in range(steps))
    (flows / "line.yaml").write_text(head + body, encoding="utf-8")
    return flows


def swarm_side(flows_dir: Path, runs_dir: Path, steps: int) -> Callable[[], None]:
    """One stub run of the flow per call, in this process."""
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator

    registry = FlowRegistry(flows_dir)
    spec = RunSpec(flows=("line",))

    def run() -> None:
        outcome = Orchestrator(registry, runs_dir=runs_dir).run(spec)
        if outcome.status != "succeeded":
            raise BenchFailure(f"swarm run {outcome.run_id}: {outcome.status}: {outcome.error}")
        if outcome.summary["total_steps_executed"] != steps:
            raise BenchFailure(f"swarm ran {outcome.summary['total_steps_executed']} steps")

    return run


def _node(n: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A stub step's model stand-in: a reply and a handoff, merged into the state."""

    def node(state: dict[str, Any]) -> dict[str, Any]:
        reply = f"Stub reply for s{n}: part {n} done."
        handoff = {"status": "VERIFIED", "step": f"s{n}", "summary": reply}
        return {"handoff": {**state["handoff"], **handoff}, "steps": state["steps"] + 1}

    return node


def langgraph_side(steps: int, db: Path | None) -> Callable[[], None]:
    """One invocation of a graph of ``steps`` nodes per call (a SQLite checkpointer on ``db``)."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        handoff: dict[str, Any]
        steps: int

    graph = StateGraph(State)
    for n in range(steps):
        graph.add_node(f"s{n}", _node(n))
        graph.add_edge(START if n == 0 else f"s{n - 1}", f"s{n}")
    graph.add_edge(f"s{steps - 1}", END)
    checkpointer = None
    if db is not None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        checkpointer = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    app = graph.compile(checkpointer=checkpointer)
    threads = iter(range(10**9))

    def run() -> None:
        start = {"handoff": {}, "steps": 0}
        if checkpointer is None:
            final = app.invoke(start)
        else:
            config = {"configurable": {"thread_id": f"t{next(threads)}"}}
            final = app.invoke(start, config, durability="sync")
        if final["steps"] != steps:
            raise BenchFailure(f"langgraph ran {final['steps']} nodes, expected {steps}")

    return run


def timed(run: Callable[[], None], runs: int) -> float:
    """Seconds for ``runs`` calls of ``run``."""
    gc.collect()
    began = time.perf_counter()
    for _ in range(runs):
        run()
    return time.perf_counter() - began


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="steps of the flow (20)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (15)")
    parser.add_argument("--runs", type=int, help="runs of each side per round (10)")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 3 runs: a smoke test")
    parser.add_argument("-v", "--verbose", action="store_true", help="every round's ratios")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.runs = args.runs or (3 if args.quick else 10)
    if args.steps < 1 or args.rounds < 1 or args.runs < 1:
        parser.error("steps, rounds and runs must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from importlib.metadata import version

        import langgraph.checkpoint.sqlite
        import langgraph.graph  # noqa: F401

        lg_version = version("langgraph")
    except ImportError as exc:
        print(f"LangGraph is not installed ({exc}); to run this comparison: {INSTALL}")
        return 0
    if tuple(int(part) for part in lg_version.split(".")[:2] if part.isdigit()) < (1, 2):
        print(f"LangGraph {lg_version} is older than 1.2; to run this comparison: {INSTALL}")
        return 0
    sys.dont_write_bytecode = True  # this process writes nothing into the repository
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="langgraph-bench-", dir=base))
    try:
        runs_dir = root / "runs"
        sides = {
            "swarm": swarm_side(write_flow(root, args.steps), runs_dir, args.steps),
            "langgraph": langgraph_side(args.steps, None),
            "langgraph+sqlite": langgraph_side(args.steps, root / "checkpoints.sqlite"),
        }
        for run in sides.values():  # warm-up: imports, the flow parsed, the database made
            run()
        print(
            f"python {sys.version.split()[0]}, langgraph {lg_version}, a linear flow of "
            f"{args.steps} steps, {args.rounds} rotating rounds of {args.runs} runs each, "
            f"in {root}"
        )
        per_step: dict[str, list[float]] = {name: [] for name in sides}
        ratios: dict[str, list[float]] = {"langgraph": [], "langgraph+sqlite": []}
        names = list(sides)
        for n in range(args.rounds):
            order = names[n % len(names) :] + names[: n % len(names)]
            got = {name: timed(sides[name], args.runs) for name in order}
            for name, seconds in got.items():
                per_step[name].append(seconds / (args.runs * args.steps) * 1e6)
            for name in ratios:
                ratios[name].append(got["swarm"] / got[name])
    except BenchFailure as exc:
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("  " + "  ".join(f"{n} {statistics.median(v):6.1f} us/step" for n, v in per_step.items()))
    for name, target in (("langgraph", TARGET_PLAIN), ("langgraph+sqlite", TARGET_SQLITE)):
        ratio = statistics.median(ratios[name])
        verdict = "PASS" if ratio <= target else "MISS"
        what = "no persistence" if name == "langgraph" else "SqliteSaver, durability=sync"
        print(
            f"  swarm / {name} ({what}), median of rounds: {ratio:.2f} "
            f"[{min(ratios[name]):.2f} .. {max(ratios[name]):.2f}] "
            f"(target <= {target:.1f})  {verdict}"
        )
        if args.verbose:
            print("    per round: " + " ".join(f"{r:.2f}" for r in ratios[name]))
    print("  swarm writes every contract file of each step (receipt, transcript, events, ...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
