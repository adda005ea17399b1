"""Throughput of short runs on Celery workers against the same runs in one local process.

Issue 30's figure: 40 short stub runs (the ``build`` flow, 15 steps and its loops, about
30 ms a run) made

1. **local**: one after another in this process, by one orchestrator
   (``Orchestrator.run``), as ``swarm run`` makes a run;
2. **1 worker** / **2 workers**: sent by ``Submitter.submit`` (in this process) through a
   real Redis (``redis-server`` on a unix socket in a temp dir) to real ``swarm worker``
   processes (``--concurrency 1`` each), timed from the first submit until every run's
   ``meta.json`` says it succeeded. The workers are started, and warmed up with a few runs,
   before the clock starts; every worker round has a fresh runs dir (and fresh workers).

Rounds alternate (local, 1 worker, 2 workers; the order turns every round) and the medians
are printed: runs/s of each and the ratios 2 workers / 1 worker (target >= 1.6 on a 2-core
machine: the second worker process must add most of a core), 1 worker / local and
2 workers / local (printed, not judged: what the queue costs a run, what two processes win).

A measurement, not a gate: exits 0 whether the target is met or missed, 1 only when a run
fails (or redis-server / a worker cannot be started).

    python bench/celery_throughput.py [--rounds N] [--runs N] [--flow KEY] [--quick] [-v]

See docs/run-control.md#runs-across-machines.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.run import Orchestrator

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FLOWS_DIR = REPO_ROOT / "flows"
TARGET = 1.6  # 2 workers' runs/s >= 1.6x one worker's
POLL_S = 0.01  # how often the oldest unfinished run's meta.json is read
STALL_S = 120.0  # no run finished for this long: the workers are stuck, the bench fails
LEASE_S = 30
RAN = re.compile(r"swarm worker: run (\S+): ran\b")


class BenchFailure(Exception):
    """A run did not succeed, or Redis or a worker did not start: the numbers mean nothing."""


# -- processes -------------------------------------------------------------------------------


def swarm_script() -> Path:
    script = Path(sys.executable).parent / "swarm"
    if not (script.is_file() and os.access(script, os.X_OK)):
        raise BenchFailure(f"no swarm console script next to {sys.executable}: pip install -e .")
    return script


def child_env(pycache: Path) -> dict[str, str]:
    """The workers' environment: no SWARM_ settings; bytecode cached (as when installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the process group, SIGKILL it if it is not gone within 30 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc; 0.0 elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cpu:
    """CPU seconds spent during one timed region: by the workers, this process, Redis."""

    workers: float
    here: float
    redis: float


@contextmanager
def redis_server(home: Path) -> Iterator[tuple[str, int]]:
    """A fresh redis-server on a unix socket in ``home``; its broker URL and pid."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise BenchFailure("redis-server is not installed (apt-get install -y redis-server)")
    sock = home / "redis.sock"
    argv = [binary, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700"]
    argv += ["--save", "", "--appendonly", "no", "--dir", str(home)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # blocks until Redis says it is ready
            if "ready to accept connections" in line.lower():
                break
        else:
            raise BenchFailure(f"redis-server ended ({proc.wait()}) before it was ready")
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # its log, unread
        yield f"redis+socket://{sock}", proc.pid
    finally:
        _stop(proc)


@dataclass
class Workers:
    """``swarm worker`` processes on one broker and runs dir; what each said, by pid."""

    broker: str
    runs_dir: Path
    env: dict[str, str]
    cwd: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    said: dict[int, list[str]] = field(default_factory=dict)
    drains: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        argv = [str(swarm_script()), "worker", "--broker", self.broker]
        argv += ["--runs-dir", str(self.runs_dir), "--concurrency", "1", "--lease", str(LEASE_S)]
        proc = subprocess.Popen(
            argv,
            env=self.env,
            cwd=self.cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C reaches this process only; it stops them
        )
        self.procs.append(proc)
        assert proc.stderr is not None
        for line in proc.stderr:  # blocks until the worker says it is ready
            if line.startswith("swarm worker: ready"):
                break
        else:
            raise BenchFailure(f"swarm worker ended ({proc.wait()}) before it was ready")
        said = self.said.setdefault(proc.pid, [])
        drain = threading.Thread(target=said.extend, args=(proc.stderr,), daemon=True)
        drain.start()
        self.drains.append(drain)

    def ran(self, run_ids: set[str]) -> list[int]:
        """How many of ``run_ids`` each worker said it ran (once they are stopped)."""
        counts = []
        for proc in self.procs:
            said = (RAN.match(line) for line in self.said[proc.pid])
            counts.append(sum(1 for m in said if m is not None and m[1] in run_ids))
        return counts

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise BenchFailure(f"a swarm worker ended ({proc.returncode}) during the round")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            _stop(proc)
        for drain in self.drains:
            drain.join(timeout=10)


# -- rounds ----------------------------------------------------------------------------------


@dataclass
class Bench:
    flows_dir: Path
    flow: str
    runs: int
    work: Path
    broker: str
    redis_pid: int
    env: dict[str, str]
    steps: int = 0
    counter: int = 0

    def orchestrator(self, runs_dir: Path) -> Orchestrator:
        """The orchestrator a worker builds for such a run (stub mode, no runtime.yaml)."""
        from swarm_runtime.config import resolve_settings
        from swarm_runtime.flow.registry import FlowRegistry
        from swarm_runtime.orchestrator.assembly import build_orchestrator

        settings = resolve_settings(
            env={}, mode="stub", runs_dir=runs_dir, flows_dir=self.flows_dir, cwd=self.work
        )
        return build_orchestrator(settings, FlowRegistry(self.flows_dir), env={})

    def fresh_dir(self, kind: str) -> Path:
        self.counter += 1
        path = self.work / f"{kind}-{self.counter}"
        path.mkdir()
        return path

    def local_round(self) -> float:
        """Seconds for ``runs`` runs one after another in this process."""
        from swarm_runtime.orchestrator.plan import RunSpec

        orchestrator = self.orchestrator(self.fresh_dir("local"))
        spec = RunSpec(flows=(self.flow,))
        gc.collect()
        began = time.perf_counter()
        for _ in range(self.runs):
            outcome = orchestrator.run(spec)
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt  # Ctrl-C or SIGTERM, which the run took as a stop
            if outcome.status != "succeeded":
                raise BenchFailure(f"local run {outcome.run_id}: {outcome.status}: {outcome.error}")
            self._check_steps(outcome.run_id, outcome.summary)
        return time.perf_counter() - began

    def cpu(self, workers: Workers) -> Cpu:
        here = os.times()
        return Cpu(
            sum(cpu_seconds(proc.pid) for proc in workers.procs),
            here.user + here.system,
            cpu_seconds(self.redis_pid),
        )

    def worker_round(self, count: int) -> tuple[float, float, list[int], Cpu]:
        """Seconds for ``runs`` runs on ``count`` workers, of which submitting; runs by
        worker; CPU seconds spent meanwhile."""
        from swarm_runtime.distributed.submit import Submitter
        from swarm_runtime.orchestrator.plan import RunSpec

        runs_dir = self.fresh_dir(f"workers{count}")
        workers = Workers(self.broker, runs_dir, self.env, self.work)
        try:
            for _ in range(count):
                workers.start()
            submitter = Submitter(self.broker)
            submitter.check()
            orchestrator = self.orchestrator(runs_dir)
            spec = RunSpec(flows=(self.flow,), backend="celery")
            warm = [submitter.submit(orchestrator, spec) for _ in range(2 * count)]
            self._wait(runs_dir, warm, workers)
            gc.collect()
            cpu = self.cpu(workers)
            began = time.perf_counter()
            ids = [submitter.submit(orchestrator, spec) for _ in range(self.runs)]
            submitted = time.perf_counter() - began
            self._wait(runs_dir, ids, workers)
            elapsed = time.perf_counter() - began
            after = self.cpu(workers)
        finally:
            workers.stop_all()
        spent = Cpu(after.workers - cpu.workers, after.here - cpu.here, after.redis - cpu.redis)
        return elapsed, submitted, workers.ran(set(ids)), spent

    def _wait(self, runs_dir: Path, ids: list[str], workers: Workers) -> None:
        """Until every run has ended (succeeded, else BenchFailure).

        Runs end about in the order they were sent, so only the oldest unfinished run's
        meta.json is read each time: a few hundred small reads a round, not a scan of all.
        """
        from swarm_runtime.storage.queued import read_refused
        from swarm_runtime.storage.status import read_meta

        last = time.monotonic()
        for run_id in ids:
            run_dir = runs_dir / run_id
            while True:
                meta = read_meta(run_dir) or {}
                status = meta.get("status")
                if status in ("succeeded", "failed", "stopped") and meta.get("completed_at"):
                    break
                refused = read_refused(run_dir)
                if refused is not None:
                    raise BenchFailure(f"run {run_id} refused: {refused}")
                if time.monotonic() - last > STALL_S:
                    workers.check_alive()
                    raise BenchFailure(f"no run ended for {STALL_S:g} s (at {run_id}: {status})")
                time.sleep(POLL_S)
            if status != "succeeded":
                raise BenchFailure(f"run {run_id} on a worker: {status}: {meta.get('error')}")
            self._check_steps(run_id, meta)
            last = time.monotonic()

    def _check_steps(self, run_id: str, summary: dict[str, Any]) -> None:
        steps = int(summary.get("total_steps_executed") or 0)
        if self.steps == 0:
            self.steps = steps
        elif steps != self.steps:
            raise BenchFailure(f"run {run_id} executed {steps} steps, expected {self.steps}")


# -- report ----------------------------------------------------------------------------------


@dataclass
class Figures:
    seconds: dict[str, list[float]] = field(default_factory=dict)
    submit_s: dict[str, list[float]] = field(default_factory=dict)
    shares: dict[str, list[list[int]]] = field(default_factory=dict)
    cpu: dict[str, list[Cpu]] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)

    def rate(self, which: str, runs: int) -> float:
        return runs / statistics.median(self.seconds[which])

    def round_ratios(self, top: str, bottom: str) -> list[float]:
        """Per round: runs/s of ``top`` / runs/s of ``bottom`` (the same runs, so b_s / t_s)."""
        return [b / t for t, b in zip(self.seconds[top], self.seconds[bottom], strict=True)]


KINDS = ("local", "1 worker", "2 workers")


def report(figures: Figures, runs: int, steps: int, verbose: bool) -> None:
    rates = {kind: figures.rate(kind, runs) for kind in KINDS}
    print()
    for kind in KINDS:
        line = f"{kind:<10} {rates[kind]:7.1f} runs/s  ({runs} runs in "
        line += f"{statistics.median(figures.seconds[kind]):.2f} s median"
        if kind in figures.submit_s:
            line += f"; submitting took {statistics.median(figures.submit_s[kind]):.2f} s"
        print(line + ")")
    ratios = [
        ("2 workers / 1 worker", "2 workers", "1 worker", TARGET),
        ("1 worker / local", "1 worker", "local", None),
        ("2 workers / local", "2 workers", "local", None),
    ]
    scaling = statistics.median(figures.round_ratios("2 workers", "1 worker"))
    for label, top, bottom, target in ratios:
        per_round = figures.round_ratios(top, bottom)
        ratio = statistics.median(per_round)
        judged = (
            f"(target >= {target:.2f})  {'PASS' if ratio >= target else 'MISS'}"
            if target is not None
            else "(printed, not judged)"
        )
        print(f"{label:<22} {ratio:5.2f}  {judged}")
        if verbose:
            print(f"    per round: {' '.join(f'{r:.2f}' for r in per_round)}")
    print(
        f"per run: local {1000 / rates['local']:.1f} ms ({steps} steps), on one worker "
        f"{1000 / rates['1 worker']:.1f} ms (wall time / runs)"
    )
    for kind in ("1 worker", "2 workers"):
        cpu, wall = figures.cpu[kind], figures.seconds[kind]
        cores = statistics.median(c.workers / w for c, w in zip(cpu, wall, strict=True))
        ms = [
            1000 * statistics.median(getattr(c, part) for c in cpu) / runs
            for part in ("workers", "here", "redis")
        ]
        print(
            f"CPU per run, {kind + ':':<10} workers {ms[0]:5.1f} ms, submitter and poller "
            f"{ms[1]:4.1f} ms, redis {ms[2]:4.1f} ms; the workers used {cores:.2f} cores"
        )
        if kind == "2 workers" and scaling < TARGET and cores < TARGET:
            print(
                f"    2 workers got {cores:.2f} cores of {os.cpu_count()} (load average "
                f"{statistics.median(figures.load):.1f}): the machine was busy; a 2-worker "
                "figure under the target measures the other processes, not the queue"
            )
    print(
        f"runs per worker with 2 workers, by round: {figures.shares['2 workers']}; "
        f"load average by round: {' '.join(f'{x:.1f}' for x in figures.load)}"
    )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help="alternating rounds (7; --quick: 1)")
    parser.add_argument("--runs", type=int, default=40, help="runs per measurement (40)")
    parser.add_argument(
        "--flow",
        default="build",
        help="the flow each run runs (build; signal, 10 ms a run, shows Celery's fixed "
        "cost per task)",
    )
    parser.add_argument("--quick", action="store_true", help="1 round: a smoke test")
    parser.add_argument(
        "--flows-dir", type=Path, default=DEFAULT_FLOWS_DIR, help="default: the repo's flows/"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every round's ratio")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 7
    if args.rounds < 1 or args.runs < 1:
        parser.error("--rounds and --runs must be >= 1")
    return args


def run_rounds(bench: Bench, rounds: int) -> Figures:
    figures = Figures()
    bench.local_round()  # warm-up: imports, the flow cache, the steps a run takes
    for n in range(rounds):
        order = KINDS[n % 3 :] + KINDS[: n % 3]
        for kind in order if n % 2 == 0 else tuple(reversed(order)):
            if kind == "local":
                figures.seconds.setdefault(kind, []).append(bench.local_round())
                continue
            seconds, submit_s, shares, cpu = bench.worker_round(int(kind[0]))
            figures.seconds.setdefault(kind, []).append(seconds)
            figures.submit_s.setdefault(kind, []).append(submit_s)
            figures.shares.setdefault(kind, []).append(shares)
            figures.cpu.setdefault(kind, []).append(cpu)
        figures.load.append(os.getloadavg()[0])
        done = ", ".join(f"{k} {bench.runs / figures.seconds[k][-1]:.1f}" for k in KINDS)
        print(f"round {n + 1}/{rounds}: runs/s {done}; load {figures.load[-1]:.1f}", flush=True)
    return figures


INTERRUPTED = threading.Event()


def _interrupt(_signum: int, _frame: object) -> None:
    INTERRUPTED.set()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.dont_write_bytecode = True  # this process writes nothing into the repository
    try:
        import swarm_runtime.distributed.submit  # noqa: F401
    except ImportError as exc:
        print(f"cannot import swarm_runtime ({exc}); run with the project's venv python")
        return 1
    work = Path(tempfile.mkdtemp(prefix="celery-bench-"))
    for signum in (signal.SIGINT, signal.SIGTERM):  # the workers and Redis are stopped
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _interrupt)
    try:
        (work / "redis").mkdir()
        with redis_server(work / "redis") as (broker, redis_pid):
            env = child_env(work / "pycache")
            flows_dir = args.flows_dir.resolve()
            bench = Bench(flows_dir, args.flow, args.runs, work, broker, redis_pid, env)
            print(
                f"python {platform.python_version()} ({sys.executable}), {os.cpu_count()} CPUs, "
                f"load {os.getloadavg()[0]:.1f}; {args.runs} runs of flow {args.flow!r} each, "
                f"{args.rounds} alternating rounds; broker {broker}"
            )
            figures = run_rounds(bench, args.rounds)
            report(figures, args.runs, bench.steps, args.verbose)
    except BenchFailure as exc:
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: workers and redis-server stopped", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
