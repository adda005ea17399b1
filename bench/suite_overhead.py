"""What a test pays for running a flow through the pytest plugin (docs/performance.md).

A test suite is judged by how fast it runs, and a suite of flow tests is mostly
``flow_runner`` calls. This script generates a user project with the SDLC flows and two
suites of 200 tests each, and runs them with pytest as whole processes, alternately:

- **flow_runner**: each test is ``record = flow_runner(); assert record.status ==
  "succeeded"`` (the plugin: a temporary runs dir per test, flows parsed once per session,
  engines reused, the run read back as a ``RunRecord``);
- **orchestrator**: each test makes the same run in-process with ``Orchestrator(...).run``
  into its own ``tmp_path``, with the flows parsed once per module (the plugin turned off
  with ``-p no:swarm``): the cost of the run itself.

It prints the median wall time of each suite, serial and with ``-n 2``, and the median of
the per-round ratios flow_runner / orchestrator (target <= 1.2). Both suites pay the same
pytest start-up and collection, so the ratio is of whole suites; a per-test figure, the
suite's time over 200, is printed beside it. Runs go to tmpfs (``/dev/shm``) when there is
one, where the file writes cost least and the plugin's own cost shows most.

    python bench/suite_overhead.py [--rounds N] [--tests N] [--no-xdist]
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

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.2

FLOW_RUNNER_TEST = """
import pytest


@pytest.mark.parametrize("n", range({tests}))
def test_sdlc(flow_runner, n):
    record = flow_runner()
    assert record.status == "succeeded"
"""

ORCHESTRATOR_TEST = """
from pathlib import Path

import pytest

from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.run import Orchestrator

FLOWS = FlowRegistry(Path(__file__).parent.parent / "flows")
SPEC = RunSpec(flows=tuple(FLOWS.order()), initiator="pytest")


@pytest.mark.parametrize("n", range({tests}))
def test_sdlc(tmp_path, n):
    outcome = Orchestrator(FLOWS, runs_dir=tmp_path / "runs").run(SPEC)
    assert outcome.status == "succeeded"
"""

INI = """[pytest]
addopts = -q -p no:cacheprovider -p no:randomly
"""


def make_project(root: Path, tests: int) -> dict[str, Path]:
    """The flows, an ini file and one dir per suite."""
    shutil.copytree(REPO_ROOT / "flows", root / "flows")
    (root / "pytest.ini").write_text(INI, encoding="utf-8")
    suites = {}
    for name, source in (("flow_runner", FLOW_RUNNER_TEST), ("orchestrator", ORCHESTRATOR_TEST)):
        directory = root / name
        directory.mkdir()
        (directory / f"test_{name}.py").write_text(source.format(tests=tests), encoding="utf-8")
        suites[name] = directory
    return suites


def run_suite(root: Path, suite: Path, name: str, workers: int, env: dict[str, str]) -> float:
    """Wall seconds of one pytest process over ``suite``; exits when a test fails."""
    argv = [sys.executable, "-m", "pytest", str(suite), "--basetemp", str(root / "tmp")]
    if name == "orchestrator":
        argv += ["-p", "no:swarm"]
    if workers:
        argv += ["-n", str(workers)]
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{name} suite failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    shutil.rmtree(root / "tmp", ignore_errors=True)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (3)")
    parser.add_argument("--tests", type=int, default=200, help="tests per suite (200)")
    parser.add_argument("--no-xdist", action="store_true", help="serial only")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.tests < 1:
        parser.error("rounds and tests must be >= 1")
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="suite-bench-", dir=base))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CACHE_DIR"] = str(root / "cache")
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: bytecode cached
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    try:
        suites = make_project(root, args.tests)
        modes = [0] if args.no_xdist else [0, 2]
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.tests} tests of the "
            f"SDLC per suite, {args.rounds} alternating rounds, in {root}"
        )
        for workers in modes:
            for name, suite in suites.items():  # warm-up: bytecode, page cache, flow cache
                run_suite(root, suite, name, workers, env)
            times: dict[str, list[float]] = {name: [] for name in suites}
            ratios = []
            for n in range(args.rounds):
                order = list(suites) if n % 2 == 0 else list(reversed(suites))
                got = {name: run_suite(root, suites[name], name, workers, env) for name in order}
                for name, seconds in got.items():
                    times[name].append(seconds)
                ratios.append(got["flow_runner"] / got["orchestrator"])
            ratio = statistics.median(ratios)
            label = f"-n {workers}" if workers else "serial"
            parts = "  ".join(
                f"{name} {statistics.median(values):6.2f} s "
                f"({statistics.median(values) / args.tests * 1e3:5.1f} ms/test)"
                for name, values in times.items()
            )
            verdict = "PASS" if ratio <= TARGET else "MISS"
            print(
                f"{label:<7} {parts}  ratio {ratio:.2f} "
                f"[{min(ratios):.2f} .. {max(ratios):.2f}] (target <= {TARGET})  {verdict}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
