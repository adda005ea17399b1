"""Start-up cost of the pytest plugin (docs/performance.md): ``pytest --collect-only`` on an empty
folder with the plugin against the same command with ``-p no:swarm``.

Both commands are run alternately (order flipped each round) in fresh processes, from
an empty temporary folder, with bytecode cached so neither pays for compiling; the script
prints the median time of each and the median of the per-round ratios. Target: <= 1.10.

    python bench/plugin_startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = 1.10


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "PYTEST_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _time(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    began = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if result.returncode not in (0, 5):  # 5: no tests collected, as expected here
        sys.exit(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21, help="rounds (default 21)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as cache:
        env = _env(cache)
        base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        with_plugin = base
        without = [*base, "-p", "no:swarm"]
        probe = subprocess.run(
            [*with_plugin, "--help"], cwd=empty, env=env, capture_output=True, text=True
        )
        if "--swarm-mode" not in probe.stdout:
            sys.exit("the swarm plugin is not installed in this interpreter (pip install -e .)")
        for cmd in (with_plugin, without):  # warm the bytecode cache
            _time(cmd, empty, env)
        timings: dict[str, list[float]] = {"plugin": [], "no plugin": []}
        ratios: list[float] = []
        for number in range(args.rounds):
            order = [("plugin", with_plugin), ("no plugin", without)]
            if number % 2:
                order.reverse()
            got = {name: _time(cmd, empty, env) for name, cmd in order}
            for name, value in got.items():
                timings[name].append(value)
            ratios.append(got["plugin"] / got["no plugin"])
    median = statistics.median(ratios)
    print(f"pytest --collect-only on an empty folder, {args.rounds} alternating rounds")
    for name, values in timings.items():
        print(f"  {name:10s} median {statistics.median(values) * 1000:7.1f} ms")
    verdict = "PASS" if median <= TARGET else "MISS"
    print(
        f"  ratio (plugin / no plugin), median of rounds: {median:.3f} "
        f"(target <= {TARGET:.2f})  {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
