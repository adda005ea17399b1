"""Replay steps per second of the SDLC, and its ratio to stub steps per second (SPEC §13).

Both run in this process, alternately, through the same orchestrator: the stub engine, and
the sdk engine with its HTTP served by vcrpy from golden/cassettes/sdlc (no network).

    python bench/replay_throughput.py [--rounds N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    from swarm_runtime.engines.cassette import Cassettes, CassetteSdkEngine
    from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
    from swarm_runtime.engines.sdk import build_sdk_engine
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    flows = FlowRegistry(REPO / "flows")
    order = tuple(flows.order())
    cassettes = (
        REPO / "golden" / "cassettes" / "tests" / "golden" / "test_goldens" / "test_sdlc_golden"
    )
    if not cassettes.is_dir():
        sys.exit(f"no cassettes in {cassettes}: run tests/record_cassettes.py")

    def replay_registry() -> EngineRegistry:
        registry = EngineRegistry()
        replayed = Cassettes(
            cassettes, name="sdlc", record=False, rerecord_command="tests/record_cassettes.py"
        )

        def factory(options: EngineOptions) -> CassetteSdkEngine:
            engine = build_sdk_engine(
                {"api_key": "replay", "base_url": "http://127.0.0.1:9"},
                engine_id="claude-step",
                engine_short="claude",
                engine_class=CassetteSdkEngine,
                cassettes=replayed,
            )
            assert isinstance(engine, CassetteSdkEngine)
            return engine

        registry.register("claude-step", factory)
        return registry

    def once(mode: str, runs: Path) -> float:
        engines = replay_registry() if mode == "replay" else default_registry()
        orchestrator = Orchestrator(
            flows,
            runs_dir=runs,
            engines=engines,
            mode="sdk" if mode == "replay" else "stub",
            sleep=lambda _s: None,
        )
        began = time.perf_counter()
        outcome = orchestrator.run(RunSpec(flows=order, initiator="pytest"))
        elapsed = time.perf_counter() - began
        if outcome.status != "succeeded":
            sys.exit(f"{mode} run failed: {outcome.error}")
        return float(outcome.summary["total_steps_executed"]) / elapsed

    runs = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    try:
        once("stub", runs)
        once("replay", runs)  # warm up: imports, first cassette reads
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
    print(f"SDLC ({len(order)} flows), {args.rounds} alternating rounds, in one process")
    for mode, values in rates.items():
        print(f"  {mode:6s} median {statistics.median(values):8.1f} steps/s")
    print(f"  replay / stub, median of rounds: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
