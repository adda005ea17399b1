"""Replay steps per second of the SDLC, and its ratio to stub steps per second.

Both run in this process, alternately, through the same orchestrator and the built-in
engine registry, as ``swarm run --mode replay`` and ``pytest --swarm-mode=replay`` build
them: the stub engine, and the sdk engine answered from the SDLC golden test's cassettes
(no network). Target: replay >= 0.4x the stub's steps/s. Measured on the system temp dir
(a disk, usually) and on tmpfs (``/dev/shm``), where the file writes cost least and the
engines' own cost shows most.

The first round of each is a warm-up (imports, and the first read of each cassette: a
process parses a cassette once while it is unchanged); ``--cold`` prints the time of that
first replay too (at the second location the imports are done: it is the parsing).

    python bench/replay_throughput.py [--rounds N] [--cold]

See docs/performance.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


TARGET = 0.4


def main() -> int:
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.registry import default_registry
    from swarm_runtime.engines.replay import forget_recordings
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cold", action="store_true", help="also time the first replay")
    args = parser.parse_args()
    flows = FlowRegistry(REPO / "flows")
    order = tuple(flows.order())
    cassettes = (
        REPO / "golden" / "cassettes" / "tests" / "golden" / "test_goldens" / "test_sdlc_golden"
    )
    if not cassettes.is_dir():
        sys.exit(f"no cassettes in {cassettes}: run tests/record_cassettes.py")
    engines = default_registry()

    def once(mode: str, runs: Path) -> float:
        choice = EngineChoice(mode="stub")
        if mode == "replay":  # what `swarm run --mode replay` and the plugin build
            choice = EngineChoice(
                mode="replay",
                cassettes=Cassettes(
                    cassettes,
                    name="sdlc",
                    record=False,
                    rerecord_command="tests/record_cassettes.py",
                ),
            )
        orchestrator = Orchestrator(
            flows,
            runs_dir=runs,
            deps=RunDeps(engines=engines, sleep=lambda _s: None),
            engine=choice,
        )
        began = time.perf_counter()
        outcome = orchestrator.run(RunSpec(flows=order, initiator="pytest"))
        elapsed = time.perf_counter() - began
        if outcome.status != "succeeded":
            sys.exit(f"{mode} run failed: {outcome.error}")
        return float(outcome.summary["total_steps_executed"]) / elapsed

    print(f"SDLC ({len(order)} flows), {args.rounds} alternating rounds, in one process")
    locations = [("disk", Path(tempfile.gettempdir()))]
    if Path("/dev/shm").is_dir():
        locations.append(("tmpfs", Path("/dev/shm")))
    for label, base in locations:
        runs = Path(tempfile.mkdtemp(prefix="replay-bench-", dir=base))
        try:
            once("stub", runs)
            forget_recordings()
            cold = once("replay", runs)  # warm-up: imports, first cassette reads
            rates: dict[str, list[float]] = {"stub": [], "replay": []}
            ratios = []
            for number in range(args.rounds):
                order_ = ["stub", "replay"] if number % 2 == 0 else ["replay", "stub"]
                got = {mode: once(mode, runs) for mode in order_}
                for mode, rate in got.items():
                    rates[mode].append(rate)
                ratios.append(got["replay"] / got["stub"])
        finally:
            shutil.rmtree(runs, ignore_errors=True)
        ratio = statistics.median(ratios)
        verdict = "PASS" if ratio >= TARGET else "MISS"
        print(
            f"  {label:<5} {base}: stub {statistics.median(rates['stub']):7.1f} steps/s, "
            f"replay {statistics.median(rates['replay']):7.1f} steps/s; replay / stub, median "
            f"of rounds: {ratio:.3f} [{min(ratios):.3f} .. {max(ratios):.3f}] "
            f"(target >= {TARGET})  {verdict}"
        )
        if args.cold:
            print(f"        first replay (imports, every cassette parsed): {cold:7.1f} steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
