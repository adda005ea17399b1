"""Is a step as cheap in a long run, or a big flow, as in a short one?

Once the history budget is full, every step's prompt holds the same amount of history
however long the run has been, and nothing a run keeps in memory, or writes per step,
should grow with the run's length or the flow's size. Two shapes, each a ``swarm run`` in
a fresh process, the lengths in rotating order:

* ``--shape loop`` (flat in run length): a two-step microloop that goes round until its
  ``max_iterations`` (a scenario keeps the critic unsatisfied);
* ``--shape linear`` (flat in flow size): a flow of N distinct steps, one after another
  (a ``runtime.yaml`` with a small history budget fills the budget early, as the long
  replies do in the loop).

It prints the median time per step and the median peak RSS of each length, with the
ratios of the longer runs to the first. Targets: 4 000 steps cost <= 1.3x per step and in
peak RSS what 400 steps do, in both shapes.

Each child process imports the command first, then times ``swarm run`` from the call of
its ``main()`` to its return, and reads its own peak RSS (``VmHWM``) when it is done. The
time per step is marginal: every round also runs the loop once round (2 steps), and an
N-step run's time per step is ``(t(N) - t(2)) / (N - 2)``, so what every run pays once
(loading the flow, creating the run dir, the final summary) is not spread over its steps
(spread, it would flatter the long runs).

Each reply is about 6 000 characters, so the default history budget is full after some 35
steps: the runs spend almost all their steps at a full budget.

It prints; it does not fail (exit 1 only when a run does). Runs go to tmpfs
(``/dev/shm``) when there is one.

    python bench/scale.py [--shape loop|linear] [--rounds N] [--lengths 400,4000]

See docs/flows.md#history and docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LENGTHS = (400, 4_000)
TARGET = 1.3
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

# The measured process: imports the command, then times one `swarm run` and reads its own
# high-water mark. Printed as one JSON line after the command's own output.
CHILD = r"""
import json, os, sys, time
from swarm_runtime.cli.main import main
from swarm_runtime.cli import run as _run  # the command's module, imported before timing
args = json.loads(sys.argv[1])
began = time.perf_counter()
code = main(args)
elapsed = time.perf_counter() - began
hwm = -1
with open("/proc/self/status") as handle:
    for line in handle:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
print("\n" + json.dumps({"code": code, "seconds": elapsed, "hwm_kib": hwm}))
"""


LINEAR_STEP = """\
  - id: s{n}
    agents: [worker]
    role: "Do part {n}."
    teaching_notes: {{inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}}
"""
SMALL_BUDGET = "history: {total_chars: 4000, recent_chars: 2000, older_chars: 400}\n"


def _flows(root: Path, steps: int, shape: str) -> Path:
    flows = root / f"flows-{steps}"
    flows.mkdir()
    if shape == "loop":
        (flows / "loop.yaml").write_text(FLOW.replace("MAX", str(steps // 2)), encoding="utf-8")
    else:
        body = "".join(LINEAR_STEP.format(n=n) for n in range(steps))
        head = 'key: line\ntitle: "A line"\ndescription: "Distinct steps."\nsteps:\n'
        (flows / "line.yaml").write_text(head + body, encoding="utf-8")
    return flows


def _scenario(root: Path) -> Path:
    handoff = "\n\n```handoff\nstatus: NEEDS_WORK\ncan_further_iteration_help: yes\n```"
    path = root / "scenario.json"  # JSON is YAML: `--scenario` reads it
    path.write_text(
        json.dumps({"author": {"text": REPLY}, "critic": {"text": REPLY + handoff}}),
        encoding="utf-8",
    )
    return path


BASE = 2  # the loop once round: what a run costs besides its steps


def run_once(root: Path, steps: int, scenario: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one `swarm run` of ``steps`` steps."""
    runs = root / "runs"
    args = [
        "run",
        "--flows-dir",
        str(root / f"flows-{steps}"),
        "--runs-dir",
        str(runs),
        "--scenario",
        str(scenario),
        "--max-steps",
        str(steps + 1),
        "--progress",
        "never",
    ]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"{steps}-step run: no result\n{done.stdout}\n{done.stderr}") from None
    metas = list(runs.glob("run-*/meta.json"))
    meta = json.loads(metas[0].read_text(encoding="utf-8")) if len(metas) == 1 else {}
    if result["code"] != 0 or meta.get("total_steps_executed") != steps:
        raise SystemExit(f"{steps}-step run failed: {done.stdout}\n{done.stderr}\n{meta}")
    shutil.rmtree(runs)
    return result["seconds"], result["hwm_kib"] / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every length (3)")
    parser.add_argument(
        "--lengths",
        default=",".join(map(str, LENGTHS)),
        help="run lengths in steps, the first is the reference (400,4000)",
    )
    parser.add_argument("--shape", choices=("loop", "linear"), default="loop")
    args = parser.parse_args(argv)
    lengths = [int(n) for n in args.lengths.split(",")]
    if min(lengths) <= BASE or args.rounds < 1:
        parser.error(f"lengths must be > {BASE} steps, rounds >= 1")
    if not Path("/proc/self/status").exists():
        print("needs /proc/self/status (Linux) for the peak RSS")
        return 1
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="scale-bench-", dir=base))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(":")
    try:
        for steps in {BASE, *lengths}:
            _flows(root, steps, args.shape)
        scenario = _scenario(root)
        if args.shape == "linear":
            config = root / "swarm" / "config" / "runtime.yaml"
            config.parent.mkdir(parents=True)
            config.write_text(SMALL_BUDGET, encoding="utf-8")
            scenario.write_text("{}", encoding="utf-8")
        run_once(root, lengths[0], scenario, env)  # warm-up: page cache, bytecode
        per_step: dict[int, list[float]] = {n: [] for n in lengths}
        rss: dict[int, list[float]] = {n: [] for n in lengths}
        for n in range(args.rounds):
            order = lengths[n % len(lengths) :] + lengths[: n % len(lengths)]
            for steps in order:
                base, _ = run_once(root, BASE, scenario, env)
                seconds, mib = run_once(root, steps, scenario, env)
                per_step[steps].append((seconds - base) / (steps - BASE))
                rss[steps].append(mib)
        print(
            f"python {sys.version.split()[0]}, {args.shape}, runs in {root}, {args.rounds} rounds"
        )
        ref = lengths[0]
        for steps in lengths:
            time_ratio = statistics.median(per_step[steps]) / statistics.median(per_step[ref])
            rss_ratio = statistics.median(rss[steps]) / statistics.median(rss[ref])
            line = (
                f"{steps:>6}-step run  {statistics.median(per_step[steps]) * 1e6:7.1f} us/step "
                f"(x{time_ratio:.2f})  peak RSS {statistics.median(rss[steps]):6.1f} MiB "
                f"(x{rss_ratio:.2f})"
            )
            if steps != ref:
                ok = time_ratio <= TARGET and rss_ratio <= TARGET
                line += f"  target <= x{TARGET} of the {ref}-step run: {'PASS' if ok else 'MISS'}"
            print(line)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
