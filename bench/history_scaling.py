"""Does a step cost the same in a long run as in a short one? (SPEC §6.2, §13)

Once the history budget is full, every step's prompt holds the same amount of history
however long the run has been, so a step should cost the same at step 4 000 as at step
200. This script runs the stub orchestrator in one process over a two-step microloop that
goes round until its ``max_iterations`` (a scenario keeps the critic unsatisfied), for a
200-step run and a 4 000-step run, alternating, and prints the time per step of each and
their ratio (target <= 1.5).

Each reply is about 6 000 characters, so the default budget (200 000 chars in all, 10 000
per older step) is full after some 35 steps: both runs spend almost all their steps at a
full budget, and the ratio shows what a longer run adds per step. (The suite checks the
cause structurally: at a full budget, rendering reads the same few items however many
there are.)

It prints; it does not fail. Runs go to tmpfs (``/dev/shm``) when there is one.

    python bench/history_scaling.py [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from swarm_runtime.engines.scenario import Scenario  # noqa: E402
from swarm_runtime.flow.registry import FlowRegistry  # noqa: E402
from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec  # noqa: E402

SHORT, LONG = 200, 4_000
TARGET = 1.5
REPLY = ("A long review of the draft. " * 215)[:6_000]

FLOW = """\
key: loop
title: "A loop that goes round"
description: "An author and a critic the critic never lets go."
steps:
  - id: author
    agents: [writer]
    role: "Write the draft."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: critic
    agents: [critic]
    role: "Review the draft."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    routing:
      kind: microloop
      loop_target: author
      loop_condition_field: status
      loop_success_values: [VERIFIED]
      max_iterations: MAX
"""


def _flows(root: Path, steps: int) -> FlowRegistry:
    flows = root / f"flows-{steps}"
    flows.mkdir()
    (flows / "loop.yaml").write_text(FLOW.replace("MAX", str(steps // 2)), encoding="utf-8")
    return FlowRegistry(flows)


def _scenario() -> Scenario:
    busy = {
        "text": REPLY + "\n\n```handoff\nstatus: NEEDS_WORK\ncan_further_iteration_help: yes\n```"
    }
    return Scenario.from_mapping({"author": {"text": REPLY}, "critic": busy})


def run_once(registry: FlowRegistry, runs: Path, steps: int) -> float:
    """Seconds per step of one run of ``steps`` steps."""
    orchestrator = Orchestrator(registry, runs_dir=runs, scenario=_scenario(), max_steps=steps + 1)
    gc.collect()
    began = time.perf_counter()
    outcome = orchestrator.run(RunSpec(flows=("loop",)))
    elapsed = time.perf_counter() - began
    executed = outcome.summary["total_steps_executed"]
    if outcome.status != "succeeded" or executed != steps:
        raise SystemExit(f"run {outcome.run_id}: {outcome.status} after {executed} steps")
    return elapsed / steps


def _ratio_line(label: str, short: list[float], long: list[float]) -> str:
    ratios = [b / a for a, b in zip(short, long, strict=True)]
    ratio = statistics.median(ratios)
    verdict = "PASS" if ratio <= TARGET else "MISS"
    return (
        f"{label:<34} {SHORT}-step run {statistics.median(short) * 1e6:8.1f} us/step  "
        f"{LONG}-step run {statistics.median(long) * 1e6:8.1f} us/step  "
        f"ratio {ratio:.2f} (target <= {TARGET})  {verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (3)")
    args = parser.parse_args(argv)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="history-bench-", dir=base))
    try:
        registries = {steps: _flows(root, steps) for steps in (SHORT, LONG)}
        per_step: dict[int, list[float]] = {SHORT: [], LONG: []}
        run_once(registries[SHORT], root / "warmup", SHORT)
        for n in range(args.rounds):
            order = (SHORT, LONG) if n % 2 == 0 else (LONG, SHORT)
            for steps in order:
                per_step[steps].append(run_once(registries[steps], root / f"runs-{n}", steps))
            shutil.rmtree(root / f"runs-{n}")
        print(f"python {sys.version.split()[0]}, runs in {root} ({args.rounds} rounds)")
        print(_ratio_line("stub run, time per step", per_step[SHORT], per_step[LONG]))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
