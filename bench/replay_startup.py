"""Start-up cost of a replay session against a stub one (docs/performance.md): ``pytest``
on a project with the shipped flows and one test that runs no flow, ``--swarm-mode=replay``
against ``--swarm-mode=stub``.

What differs is what replay checks at start: that vcrpy is installed and what each engine
of the flows needs. Found, not imported: the process that replays nothing (this session,
xdist's controller) pays for no provider SDK and no vcrpy. Both commands run alternately
(order flipped each round) in fresh processes, bytecode cached; the script prints the
median time of each and the median of the per-round ratios. Target: <= 1.10.

    python bench/replay_startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.10


def _env(cache: str) -> dict[str, str]:
    drop = ("SWARM_", "PYTEST_", "ANTHROPIC_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _time(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    began = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as project, tempfile.TemporaryDirectory() as cache:
        shutil.copytree(REPO / "flows", Path(project) / "flows")
        Path(project, "test_nothing.py").write_text("def test_x():\n    pass\n")
        env = _env(cache)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        commands = {mode: [*base, f"--swarm-mode={mode}"] for mode in ("replay", "stub")}
        for cmd in commands.values():  # warm the bytecode cache
            _time(cmd, project, env)
        timings: dict[str, list[float]] = {mode: [] for mode in commands}
        ratios: list[float] = []
        for number in range(args.rounds):
            order = list(commands.items())[:: 1 - 2 * (number % 2)]
            got = {mode: _time(cmd, project, env) for mode, cmd in order}
            for mode, value in got.items():
                timings[mode].append(value)
            ratios.append(got["replay"] / got["stub"])
    median = statistics.median(ratios)
    print(f"pytest of one test that runs no flow, {args.rounds} alternating rounds")
    for mode, values in timings.items():
        print(f"  {mode:7s} median {statistics.median(values) * 1000:7.1f} ms")
    verdict = "PASS" if median <= TARGET else "MISS"
    print(
        f"  ratio (replay / stub), median of rounds: {median:.3f} "
        f"(target <= {TARGET:.2f})  {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
