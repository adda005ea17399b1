"""Cost of route coverage (docs/coverage.md, docs/performance.md) against the stub step it measures.

In one process, alternating rounds: a stub run of the SDLC flows in-process (the
orchestrator, as a ``flow_runner`` makes it), then what ``--swarm-coverage`` adds after
such a run: the run's events read once and counted
(:func:`swarm_runtime.coverage.routes.collect_file`). The ratio is the collection's time
per step over a stub step's time (the events read as the plugin reads them when the test has not
read them already: only the lines that may count are parsed). The report the controller
makes once per session (the universe of the flows dir, the edge of each distinct route,
the JSON) is printed on its own: it does not grow with the number of runs. Target: ratio
<= 0.03.

    python bench/coverage_cost.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from pytest_swarm.run_record import RunRecord  # noqa: E402
from swarm_runtime.coverage import report as coverage_report  # noqa: E402
from swarm_runtime.coverage.routes import Taken, Universe, collect_file  # noqa: E402
from swarm_runtime.flow.registry import FlowRegistry  # noqa: E402
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec  # noqa: E402
from swarm_runtime.orchestrator.run import Orchestrator  # noqa: E402

TARGET = 0.03


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    args = parser.parse_args()
    registry = FlowRegistry(REPO_ROOT / "flows")
    flows = tuple(registry.order())
    ratios: list[float] = []
    step_us: list[float] = []
    collect_us: list[float] = []
    taken = Taken()
    with tempfile.TemporaryDirectory() as runs:
        orchestrator = Orchestrator(
            registry,
            runs_dir=Path(runs),
            deps=RunDeps(sleep=lambda _s: None),
            engine=EngineChoice(),
        )
        for number in range(args.rounds + 1):
            began = time.perf_counter()
            outcome = orchestrator.run(RunSpec(flows=flows))
            ran = time.perf_counter() - began
            if outcome.status != "succeeded":
                sys.exit(f"the stub run failed: {outcome.error}")
            record = RunRecord(outcome.path, flows=registry)
            began = time.perf_counter()
            collect_file(record.path / "events.jsonl", taken)
            collected = time.perf_counter() - began
            if number == 0:
                continue  # warm-up
            steps = int(record.summary["total_steps_executed"])
            step_us.append(ran / steps * 1e6)
            collect_us.append(collected / steps * 1e6)
            ratios.append(collected / ran)
        began = time.perf_counter()
        universe = Universe.of(registry)
        report = coverage_report.build(universe, taken)
        reported = time.perf_counter() - began
    ratio = statistics.median(ratios)
    print(f"stub step: median {statistics.median(step_us):.0f} us")
    print(f"coverage collection: median {statistics.median(collect_us):.1f} us per step")
    print(
        f"ratio collection/stub step: {ratio:.4f} (target <= {TARGET}) "
        f"{'PASS' if ratio <= TARGET else 'MISS'}"
    )
    print(
        f"report at the end of the session ({report['runs']} runs, "
        f"{report['steps']['total']} steps, {report['edges']['total']} edges): "
        f"{reported * 1e3:.1f} ms once"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
