"""What a replay test session costs against a stub one, as whole pytest processes.

A temp project with the shipped flows and a suite of 50 tests (default), each running one
small flow with ``flow_runner`` (``signal``). Its cassettes are recorded once, first,
against the loopback Anthropic server of ``tests/fakes`` (a fake key; nothing leaves
127.0.0.1), one recording per test as a real suite has.

1. **import anthropic**: a replay session with ``-n 2`` (and a serial one) runs with a tiny
   plugin of the project's (``-p``) that writes, at ``pytest_unconfigure``, whether
   ``anthropic`` is in ``sys.modules`` in each process: xdist's controller and each worker.
   Target: not in the controller (it replays nothing); in a worker at most once (a worker
   is one process: once is all it can be).
2. **fixed cost**: ``pytest --swarm-mode=replay`` against ``pytest --swarm-mode=stub`` on the
   same suite, serial and with ``-n 2``, whole processes alternately (order flipped every
   round), bytecode cached. Printed: the median wall time of each and the median of the
   per-round ratios replay / stub. Target: <= 1.5 each.

It exits 0 whether the targets are met or missed, 1 only when a session fails.

    python bench/replay_session.py [--tests N] [--rounds N] [--flow KEY] [--quick]

See docs/performance.md.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.5
FAKE_KEY = "sk-ant-local-bench-not-a-key"

SUITE = """
import pytest


@pytest.mark.parametrize("n", range({tests}))
def test_flow(flow_runner, n):
    record = flow_runner("{flow}")
    assert record.status == "succeeded"
"""

# Loaded with `-p anthropic_probe` in the controller and in each xdist worker.
PROBE = """
import json
import os
import sys


def pytest_unconfigure(config):
    workerinput = getattr(config, "workerinput", None)
    line = {
        "process": workerinput["workerid"] if workerinput else "controller",
        "pid": os.getpid(),
        "anthropic": "anthropic" in sys.modules,
    }
    with open(os.environ["BENCH_PROBE_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\\n")
"""

INI = """[pytest]
addopts = -q -p no:cacheprovider -p no:randomly
pythonpath = .
"""


class BenchFailure(Exception):
    """A session failed: the numbers would mean nothing."""


def make_project(root: Path, tests: int, flow: str) -> Path:
    project = root / "project"
    project.mkdir()
    shutil.copytree(REPO / "flows", project / "flows")
    (project / "pytest.ini").write_text(INI, encoding="utf-8")
    (project / "anthropic_probe.py").write_text(PROBE, encoding="utf-8")
    (project / "tests").mkdir()
    suite = SUITE.format(tests=tests, flow=flow)
    (project / "tests" / "test_flows.py").write_text(suite, encoding="utf-8")
    return project


def base_env(root: Path) -> dict[str, str]:
    drop = ("SWARM_", "PYTEST_", "ANTHROPIC_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: bytecode cached
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    env["SWARM_CACHE_DIR"] = str(root / "cache")
    return env


def pytest_session(
    project: Path, mode: str, workers: int, env: dict[str, str], *extra: str
) -> float:
    """Wall seconds of one ``pytest`` process; BenchFailure when it does not pass."""
    argv = [sys.executable, "-m", "pytest", f"--swarm-mode={mode}", *extra]
    argv += ["--basetemp", str(project.parent / "tmp")]
    if workers:
        argv += ["-n", str(workers)]
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise BenchFailure(
            f"pytest --swarm-mode={mode} {'-n ' + str(workers) if workers else ''} exited "
            f"{done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    shutil.rmtree(project.parent / "tmp", ignore_errors=True)
    return elapsed


def record(project: Path, env: dict[str, str], tests: int) -> None:
    """Record every test's cassettes against the loopback Anthropic server."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.anthropic_server import AnthropicServer

    server = AnthropicServer().start()
    try:
        recording = {**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": FAKE_KEY}
        pytest_session(project, "record", 0, recording)
    finally:
        server.stop()
    cassettes = project / "golden" / "cassettes"
    recorded = [p for p in cassettes.rglob("*") if p.is_file()]
    if not recorded:
        raise BenchFailure(f"recording wrote no cassette under {cassettes}")
    leaked = [str(p) for p in recorded if FAKE_KEY.encode() in p.read_bytes()]
    if leaked:
        raise BenchFailure(f"the fake key is in {leaked[:3]}")
    print(f"recorded {len(recorded)} cassette files for {tests} tests (loopback server)")


def probe(project: Path, env: dict[str, str], workers: int) -> list[dict[str, object]]:
    """Which processes of a replay session imported anthropic."""
    out = project.parent / f"probe-{workers}.jsonl"
    out.unlink(missing_ok=True)
    pytest_session(
        project, "replay", workers, {**env, "BENCH_PROBE_FILE": str(out)}, "-p", "anthropic_probe"
    )
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return sorted(lines, key=lambda line: (line["process"] != "controller", line["process"]))


def report_probe(lines: list[dict[str, object]], workers: int) -> None:
    label = f"-n {workers}" if workers else "serial"

    def name(process: object) -> str:
        return "the one process" if not workers and process == "controller" else str(process)

    shown = ", ".join(f"{name(p['process'])} {'yes' if p['anthropic'] else 'no'}" for p in lines)
    print(f"import anthropic in a replay session ({label}): {shown}")
    if workers:
        controller = [p for p in lines if p["process"] == "controller"]
        ok = bool(controller) and not any(p["anthropic"] for p in controller)
        count = len(lines) - len(controller)
        print(
            f"  target: none in the controller, at most once per worker ({count} workers, "
            f"one process each)  {'PASS' if ok else 'MISS'}"
        )


def fixed_cost(project: Path, env: dict[str, str], workers: int, rounds: int) -> None:
    modes = ["replay", "stub"]
    for mode in modes:  # warm-up: bytecode, page cache, the flow cache
        pytest_session(project, mode, workers, env)
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    ratios: list[float] = []
    for n in range(rounds):
        order = modes if n % 2 == 0 else modes[::-1]
        got = {mode: pytest_session(project, mode, workers, env) for mode in order}
        for mode, seconds in got.items():
            times[mode].append(seconds)
        ratios.append(got["replay"] / got["stub"])
    ratio = statistics.median(ratios)
    label = f"-n {workers}" if workers else "serial"
    parts = "  ".join(f"{mode} {statistics.median(times[mode]):6.2f} s" for mode in modes)
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(
        f"{label:<7} {parts}  replay / stub {ratio:.2f} [{min(ratios):.2f} .. {max(ratios):.2f}]"
        f" (target <= {TARGET})  {verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=50, help="tests in the suite (50)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (5)")
    parser.add_argument("--flow", default="signal", help="the flow each test runs (signal)")
    parser.add_argument("--quick", action="store_true", help="2 rounds: a smoke test")
    parser.add_argument("--no-xdist", action="store_true", help="serial only")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 5)
    if args.rounds < 1 or args.tests < 1:
        parser.error("rounds and tests must be >= 1")
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="replay-session-bench-", dir=base))
    modes = [0] if args.no_xdist else [0, 2]
    try:
        env = base_env(root)
        project = make_project(root, args.tests, args.flow)
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.tests} tests each "
            f"running `{args.flow}`, {args.rounds} alternating rounds, in {root}"
        )
        record(project, env, args.tests)
        for workers in modes:
            report_probe(probe(project, env, workers), workers)
        for workers in modes:
            fixed_cost(project, env, workers, args.rounds)
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        if load is not None:
            print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    except BenchFailure as exc:
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
