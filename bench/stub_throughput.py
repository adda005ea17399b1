"""Stub throughput of the runtime against a floor that writes the same files (docs/performance.md).

Two measurements, both as ratios against a "floor" that does only the file work a step
needs (docs/contract/run-dir.md): a receipt JSON written atomically (temp file in the same
directory, then ``os.replace``), a transcript JSONL written atomically, and three event lines
appended to an open ``events.jsonl`` (one ``write`` + ``flush`` each); since runs can be resumed
(docs/contract/checkpoint.md), also a history line appended to ``history.jsonl`` and
``checkpoint.json`` written atomically.

1. In one process, alternating rounds: the runtime's stub steps/s
   (``Orchestrator.run`` of the SDLC flows) against the floor loop writing the same number
   of steps with files of the same average sizes, on the working disk and on tmpfs
   (``/dev/shm``). Targets: runtime >= 0.8x the floor on disk, >= 0.65x on tmpfs.
2. As whole processes, alternating rounds: ``swarm run`` of the SDLC against a floor
   process (same interpreter, ``json`` + ``os`` only) writing the same steps. Targets: wall
   time ratio <= 2.0x on tmpfs (on disk the floor itself moves threefold: printed, not
   judged), peak RSS of ``swarm run`` <= 40 MiB. Printed next to it: the CEL share, what
   ``swarm_runtime.flow.conditions`` costs a fresh interpreter the first time it evaluates
   a shipped condition (importing the CEL implementation, building its parser, compiling
   the condition) and then the other shipped conditions, with the packages it loads.
   Also printed, for what no change to the project's own code can go below: a *dependency
   floor*, the floor process that first imports every module outside ``swarm_runtime`` that
   ``swarm run`` imports (read from a ``swarm run`` in a child), against the floor; a
   *standard-library floor*, the floor after importing only the standard-library modules
   that the project's own code imports (with what they import); and what the process target
   leaves, in ms, above the standard-library floor, against what the other imports take.

Prints medians and the median of the per-round ratios. It is a measurement, not a gate:
it exits 0 whether targets are met or missed, and 1 only when a run fails.

    python bench/stub_throughput.py [--rounds N] [--process-rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FLOWS_DIR = REPO_ROOT / "flows"

TARGET_DISK = 0.8  # runtime steps/s >= 0.8x the floor on disk
TARGET_TMPFS = 0.65  # ... and >= 0.65x on tmpfs
TARGET_PROCESS = 2.0  # `swarm run` wall time <= 2.0x the floor process, on tmpfs
TARGET_RSS_MIB = 40.0  # peak RSS of `swarm run`

# The floor, as source text so that the very same code runs in this process (exec'd once)
# and as a child process (`python -c FLOOR_CODE ARGS_JSON`). json + os only, no project
# imports. Per step, in the runtime's order: one event line, the transcript and the receipt
# written atomically, a history line, the checkpoint written atomically, two more event
# lines. Per run: spec.json once, meta.json three times
# (pending, running, final) and three run-level events, like the runtime.
FLOOR_CODE = r'''
import json
import os
import sys


def _atomic(path, data):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _pad(doc, size):
    """Filler so that json.dumps(doc with "pad") is about `size` bytes."""
    return "x" * max(0, size - len(json.dumps(doc)) - 1)


def floor_run(
    run_dir, plan, receipt_bytes, transcript_bytes, transcript_lines, event_bytes,
    history_bytes, checkpoint_bytes,
):
    """Write a run of sum(steps) steps into run_dir (created); return the step count."""
    os.mkdir(run_dir)
    line_bytes = max(1, transcript_bytes // max(1, transcript_lines))
    receipt_pad = _pad({"seq": 0, "flow_key": "", "step": 0, "pad": ""}, receipt_bytes)
    line_pad = _pad({"seq": 0, "role": "x", "line": 0, "content": ""}, line_bytes)
    event_pad = _pad({"seq": 0, "kind": "step_start", "payload": ""}, event_bytes)
    history_pad = _pad({"seq": 0, "output": ""}, history_bytes)
    checkpoint_pad = _pad({"seq": 0, "step": 0, "pad": ""}, checkpoint_bytes)
    history = open(os.path.join(run_dir, "history.jsonl"), "a", encoding="utf-8")
    checkpoint = os.path.join(run_dir, "checkpoint.json")
    spec = json.dumps({"flows": [key for key, _ in plan]}) + "\n"
    _atomic(os.path.join(run_dir, "spec.json"), spec.encode())
    meta = os.path.join(run_dir, "meta.json")
    _atomic(meta, b'{"status": "pending"}\n')
    events = open(os.path.join(run_dir, "events.jsonl"), "a", encoding="utf-8")
    seq = 0

    def emit(kind):
        nonlocal seq
        seq += 1
        events.write(json.dumps({"seq": seq, "kind": kind, "payload": event_pad}) + "\n")
        events.flush()

    done = 0
    try:
        emit("run_created")
        _atomic(meta, b'{"status": "running"}\n')
        emit("run_started")
        for flow_key, steps in plan:
            base = os.path.join(run_dir, flow_key)
            receipts = os.path.join(base, "receipts")
            llm = os.path.join(base, "llm")
            os.makedirs(receipts)
            os.makedirs(llm)
            for step in range(steps):
                done += 1
                name = f"step{step:03d}-agent"
                emit("step_start")
                text = "".join(
                    json.dumps({"seq": done, "role": "x", "line": n, "content": line_pad}) + "\n"
                    for n in range(transcript_lines)
                )
                _atomic(os.path.join(llm, name + "-claude.jsonl"), text.encode())
                receipt = {"seq": done, "flow_key": flow_key, "step": step, "pad": receipt_pad}
                text = json.dumps(receipt) + "\n"
                _atomic(os.path.join(receipts, name + ".json"), text.encode())
                history.write(json.dumps({"seq": done, "output": history_pad}) + "\n")
                history.flush()
                text = json.dumps({"seq": done, "step": step, "pad": checkpoint_pad}) + "\n"
                _atomic(checkpoint, text.encode())
                emit("step_end")
                emit("route_decision")
        emit("run_completed")
    finally:
        events.close()
        history.close()
    _atomic(meta, b'{"status": "succeeded"}\n')
    return done


if __name__ == "__main__":
    sys.exit(0 if floor_run(**json.loads(sys.argv[1])) >= 0 else 1)
'''


# The CEL share of a `swarm run`: in a fresh interpreter (same environment as `swarm run`),
# import the conditions module, then time the first evaluate() of a shipped condition (the
# CEL implementation imported, its parser built or loaded, the condition compiled) and the
# first evaluate() of each other shipped condition. Prints one JSON line: wall and CPU ms of
# each part, and the packages outside the standard library that the evaluation loaded.
CEL_CODE = r"""
import json, sys, time
from swarm_runtime.flow import conditions
first, others = sys.argv[1], json.loads(sys.argv[2])
before = set(sys.modules)
wall, cpu = time.perf_counter(), time.process_time()
held = conditions.evaluate(first, {"handoff": {"reopened": True}})
first_wall, first_cpu = time.perf_counter() - wall, time.process_time() - cpu
wall, cpu = time.perf_counter(), time.process_time()
for source in others:
    conditions.evaluate(source, {"handoff": {"reopened": True}})
rest_wall, rest_cpu = time.perf_counter() - wall, time.process_time() - cpu
stdlib = set(sys.stdlib_module_names)
loaded = {name.partition(".")[0] for name in set(sys.modules) - before}
print(json.dumps({
    "value": held.value, "error": held.error,
    "first_ms": [first_wall * 1e3, first_cpu * 1e3],
    "rest_ms": [rest_wall * 1e3, rest_cpu * 1e3],
    "loaded": sorted(n for n in loaded if n not in stdlib and not n.startswith("_")),
}))
"""
CEL_FIRST = "has(handoff.reopened) && handoff.reopened == true"


class BenchFailure(Exception):
    """A run did not succeed: the numbers would mean nothing."""


@dataclass(frozen=True)
class Shape:
    """What one stub run of the SDLC writes, measured from a warm-up run."""

    plan: list[tuple[str, int]]
    """(flow_key, steps executed) in run order."""
    receipt_bytes: int
    transcript_bytes: int
    transcript_lines: int
    event_bytes: int
    history_bytes: int
    checkpoint_bytes: int

    @property
    def steps(self) -> int:
        return sum(n for _, n in self.plan)

    def floor_args(self, run_dir: Path) -> dict[str, Any]:
        return {"run_dir": str(run_dir), **asdict(self)}


def _load_floor() -> Callable[..., int]:
    namespace: dict[str, Any] = {"__name__": "stub_bench_floor"}
    exec(compile(FLOOR_CODE, "<floor>", "exec"), namespace)
    return namespace["floor_run"]  # type: ignore[no-any-return]


floor_run = _load_floor()


# -- locations -------------------------------------------------------------------------------


def filesystem_of(path: Path) -> tuple[str, str]:
    """(fstype, mount point) of ``path`` from /proc/mounts; ("?", "?") when unknown."""
    real = os.path.realpath(path)
    best = ("?", "?")
    best_len = -1
    try:
        lines = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return best
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > best_len:
            best, best_len = (parts[2], mount), len(mount)
    return best


_MEMORY_FS = {"tmpfs", "ramfs"}


def disk_temp_dir(explicit: Path | None) -> Path:
    """A fresh temp dir on a real disk: --disk-dir, the system temp dir, else the cwd."""
    if explicit is not None:
        explicit.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="stub-bench-", dir=explicit))
    system = Path(tempfile.gettempdir())
    if filesystem_of(system)[0] not in _MEMORY_FS:
        return Path(tempfile.mkdtemp(prefix="stub-bench-", dir=system))
    return Path(tempfile.mkdtemp(prefix=".stub-bench-", dir=Path.cwd()))


def describe(kind: str, path: Path) -> str:
    fstype, _ = filesystem_of(path)
    warn = " NOT A DISK" if kind == "disk" and fstype in _MEMORY_FS else ""
    return f"{kind}: {fstype} {path}{warn}"


# -- in-process part -------------------------------------------------------------------------


def measure_shape(run_root: Path, summary: dict[str, Any], flows: tuple[str, ...]) -> Shape:
    """Average sizes of what the runtime wrote (every execution keeps its own file)."""
    receipts = list(run_root.glob("*/receipts/*.json"))
    # A navigator step's own call keeps a transcript of its own (``<step>-navigator-N``).
    transcripts = [p for p in run_root.glob("*/llm/*.jsonl") if "-navigator-" not in p.name]
    events = (run_root / "events.jsonl").read_bytes()
    history = (run_root / "history.jsonl").read_bytes()
    steps = summary["total_steps_executed"]
    if len(receipts) != steps or len(transcripts) != steps:
        raise BenchFailure(
            f"expected {steps} receipts and transcripts in {run_root}, "
            f"found {len(receipts)} and {len(transcripts)}"
        )
    transcript_sizes = [p.stat().st_size for p in transcripts]
    transcript_lines = sum(p.read_bytes().count(b"\n") for p in transcripts)
    event_lines = events.count(b"\n")
    totals = summary["flow_totals"]
    return Shape(
        plan=_plan(flows, totals),  # injected utility flows (security-scan) count too
        receipt_bytes=round(statistics.fmean(p.stat().st_size for p in receipts)),
        transcript_bytes=round(statistics.fmean(transcript_sizes)),
        transcript_lines=round(transcript_lines / steps),
        event_bytes=round(len(events) / event_lines),
        history_bytes=round(len(history) / max(1, history.count(b"\n"))),
        checkpoint_bytes=(run_root / "checkpoint.json").stat().st_size,
    )


def _plan(flows: tuple[str, ...], totals: dict[str, Any]) -> list[tuple[str, int]]:
    """Steps per flow: the run's flows in order, then the utility flows injected into them."""
    keys = [key for key in flows if key in totals] + [key for key in totals if key not in flows]
    return [(key, totals[key]["steps_executed"]) for key in keys]


class InProcess:
    """The runtime and the floor, run alternately in this process at one location."""

    def __init__(self, flows_dir: Path) -> None:
        from swarm_runtime.errors import SwarmError
        from swarm_runtime.flow.registry import FlowRegistry
        from swarm_runtime.orchestrator.plan import RunSpec
        from swarm_runtime.orchestrator.run import Orchestrator

        self._orchestrator = Orchestrator
        self._swarm_error = SwarmError
        # One registry for every round: its get() caches the parsed, validated flows, so
        # after the warm-up the timed region is the per-step path (prompt, engine, routing,
        # receipt/transcript/events writes), which is what the floor is compared with.
        # Loading YAML is paid once per process and shows up in the whole-process part.
        try:
            self.registry = FlowRegistry(flows_dir)
            self.order = tuple(self.registry.order())
        except SwarmError as exc:
            raise BenchFailure(f"flows: {exc}") from exc
        self.spec = RunSpec(flows=self.order)

    def runtime_round(self, runs_dir: Path) -> tuple[float, int, Path, dict[str, Any]]:
        """One timed run: (seconds, steps, run dir, summary)."""
        gc.collect()  # start each timed region with the same (empty) garbage
        began = time.perf_counter()
        try:
            outcome = self._orchestrator(self.registry, runs_dir=runs_dir).run(self.spec)
        except self._swarm_error as exc:
            raise BenchFailure(f"runtime run: {type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - began
        if outcome.status != "succeeded":
            raise BenchFailure(f"runtime run {outcome.run_id}: {outcome.status}: {outcome.error}")
        return elapsed, outcome.summary["total_steps_executed"], outcome.path, outcome.summary

    @staticmethod
    def floor_round(run_dir: Path, shape: Shape) -> tuple[float, int]:
        gc.collect()
        began = time.perf_counter()
        steps = floor_run(**shape.floor_args(run_dir))
        return time.perf_counter() - began, steps


@dataclass
class LocationResult:
    label: str
    runtime_rates: list[float]
    floor_rates: list[float]
    ratios: list[float]
    target: float


def bench_location(
    bench: InProcess, kind: str, root: Path, rounds: int, target: float, shape: Shape | None
) -> tuple[LocationResult, Shape]:
    """Warm up, then ``rounds`` alternating rounds (the order flips every round)."""
    _, steps, run_path, summary = bench.runtime_round(root)
    if shape is None:
        shape = measure_shape(run_path, summary, bench.order)
    if steps != shape.steps:
        raise BenchFailure(f"runtime executed {steps} steps, expected {shape.steps}")
    bench.floor_round(root / "floor-warmup", shape)
    result = LocationResult(describe(kind, root), [], [], [], target)
    for n in range(rounds):
        rates: dict[str, float] = {}
        for which in ("runtime", "floor") if n % 2 == 0 else ("floor", "runtime"):
            if which == "runtime":
                elapsed, steps, run_path, _ = bench.runtime_round(root)
                if steps != shape.steps:
                    raise BenchFailure(f"runtime executed {steps} steps, expected {shape.steps}")
            else:
                run_path = root / f"floor-{n}"
                elapsed, steps = bench.floor_round(run_path, shape)
            rates[which] = steps / elapsed
        result.runtime_rates.append(rates["runtime"])
        result.floor_rates.append(rates["floor"])
        result.ratios.append(rates["runtime"] / rates["floor"])
    _empty(root)
    return result, shape


def _empty(root: Path) -> None:
    """Delete the rounds' run directories.

    Only once the rounds are done: deleting between rounds would put the file system's
    delayed delete work (journal, discard) into the next timed round.
    """
    for child in root.iterdir():
        shutil.rmtree(child)


# -- whole-process part ----------------------------------------------------------------------


@dataclass
class ProcessResult:
    label: str
    command: str
    runtime_s: list[float]
    floor_s: list[float]
    ratios: list[float]
    deps_s: list[float]
    deps_ratios: list[float]
    stdlib_s: list[float]
    stdlib_ratios: list[float]
    runtime_rss_mib: list[float]
    floor_rss_mib: list[float]
    launcher_mib: list[float]


def swarm_command() -> tuple[list[str], str]:
    """The console script next to the interpreter (what users run), else ``-m``."""
    script = Path(sys.executable).parent / "swarm"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)], str(script)
    import importlib.util

    module = "swarm_runtime.cli.main"
    if importlib.util.find_spec("swarm_runtime.__main__") is not None:
        module = "swarm_runtime"
    argv = [sys.executable, "-m", module]
    return argv, " ".join(argv[1:]) + " (no console script next to the interpreter)"


def child_env(pycache: Path | None) -> dict[str, str]:
    """The environment of the measured processes.

    SWARM_* settings are dropped so nothing changes what `swarm run` does. With
    ``pycache``, bytecode is cached there (PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE
    dropped), as for an installed package, whose .pyc files are written at install time;
    without it a PYTHONDONTWRITEBYTECODE=1 environment makes every `swarm run` compile the
    whole package from source. The prefix keeps the repository free of __pycache__ dirs.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


# A child's ru_maxrss counts the memory of the process it was forked (vforked) from, so
# children are not started from this process, which has imported the runtime: a small
# launcher (`python -I -S`, os/sys/time only) starts one child, times it with perf_counter
# around posix_spawn + wait4, and prints "wall_seconds maxrss_kib exit_code own_hwm_kib".
# A child's RSS below the launcher's own (about 8 MiB) could not be told apart.
LAUNCHER_CODE = r"""
import os, sys, time
cwd, log, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
os.chdir(cwd)
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
actions = [(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)]
began = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - began
scale = 1024 if sys.platform == "darwin" else 1
own = -1
if os.path.exists("/proc/self/status"):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                own = int(line.split()[1])
print(wall, usage.ru_maxrss // scale, os.waitstatus_to_exitcode(status), own)
"""


@dataclass(frozen=True)
class ChildRun:
    wall_s: float
    rss_mib: float
    exit_code: int
    launcher_mib: float | None


def run_child(argv: list[str], cwd: Path, log: Path, env: dict[str, str]) -> ChildRun:
    """Run ``argv`` through the launcher: its wall time, peak RSS and exit code."""
    launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER_CODE, str(cwd), str(log), *argv]
    done = subprocess.run(launcher, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchFailure(f"launcher failed ({done.returncode}):\n{done.stderr}")
    wall, rss_kib, code, own_kib = done.stdout.split()
    return ChildRun(
        float(wall),
        int(rss_kib) / 1024,
        int(code),
        int(own_kib) / 1024 if int(own_kib) >= 0 else None,
    )


# What `swarm run` imports beyond a bare interpreter, outside the project: the command run
# in this child (as its console script would), then the modules it loaded, printed as JSON:
# all of them, and the standard-library modules that the project's own loaded modules name in
# an import statement (what its code needs of the standard library, whatever the third-party
# packages bring along).
IMPORTED_CODE = r"""
import ast, json, os, runpy, sys
bare = set(sys.modules)
sys.argv = ["swarm", *sys.argv[1:]]
out = os.environ.pop("SWARM_BENCH_IMPORTED")
try:
    runpy.run_module("swarm_runtime.cli.main", run_name="__main__")
except SystemExit:
    pass
loaded = [m for m in sys.modules if m not in bare and not m.startswith("swarm_runtime")]
own = set()
for name, module in list(sys.modules.items()):
    source = getattr(module, "__file__", None)
    if not name.startswith("swarm_runtime") or not source or not source.endswith(".py"):
        continue
    with open(source, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            own.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            own.add(node.module)
stdlib = [m for m in loaded if m in own and m.partition(".")[0] in sys.stdlib_module_names]
with open(out, "w") as handle:
    json.dump({"all": [m for m in loaded if m not in ("runpy", "__main__")], "own": stdlib}, handle)
"""

# The dependency floor: the floor, after importing those modules (each on its own; one that
# cannot be imported alone is skipped, as the import of its parent loads it).
DEPS_FLOOR_CODE = r"""
import importlib, sys
for _name in sys.argv.pop(1).split(","):
    try:
        importlib.import_module(_name)
    except Exception:
        pass
"""


def imported_modules(
    swarm_argv: list[str], cwd: Path, log: Path, env: dict[str, str]
) -> tuple[str, str]:
    """The modules outside the project a `swarm run` imports, comma-separated: all of them,
    and the standard-library modules the project's own code imports (see IMPORTED_CODE)."""
    out = log.with_name("imported.json")
    child_env = {**env, "SWARM_BENCH_IMPORTED": str(out)}
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED_CODE, *swarm_argv],
        cwd=cwd,
        env=child_env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not out.is_file():
        raise BenchFailure(f"listing what `swarm run` imports failed:\n{done.stderr}")
    names: dict[str, list[str]] = json.loads(out.read_text(encoding="utf-8"))
    return ",".join(names["all"]), ",".join(names["own"])


def bench_processes(
    flows_dir: Path, label: str, root: Path, rounds: int, shape: Shape, env: dict[str, str]
) -> ProcessResult:
    """Warm up, then ``rounds`` rotating rounds of `swarm run`, the floor and the two
    import floors (every dependency; the standard library's modules only)."""
    swarm, shown = swarm_command()
    cwd = root / "cwd"  # an empty working directory: no ./swarm/config/runtime.yaml
    cwd.mkdir()
    log = root / "child.log"
    argv_of_run = ["run", "--flows-dir", str(flows_dir), "--progress", "never"]
    modules, stdlib = imported_modules(
        [*argv_of_run, "--runs-dir", str(root / "runs-imported")], cwd, log, env
    )

    def runtime_once(n: int | str) -> ChildRun:
        runs_dir = root / f"runs-{n}"
        argv = [*swarm, "run", "--flows-dir", str(flows_dir), "--runs-dir", str(runs_dir)]
        child = run_child([*argv, "--progress", "never"], cwd, log, env)
        metas = list(runs_dir.glob("run-*/meta.json"))
        if child.exit_code != 0 or len(metas) != 1:
            output = log.read_text(encoding="utf-8", errors="replace")
            raise BenchFailure(f"`swarm run` exited {child.exit_code}:\n{output}")
        meta = json.loads(metas[0].read_text(encoding="utf-8"))
        if meta["status"] != "succeeded" or meta["total_steps_executed"] != shape.steps:
            raise BenchFailure(
                f"`swarm run`: {meta['status']}, {meta['total_steps_executed']} steps "
                f"(expected succeeded, {shape.steps})"
            )
        return child

    imports = {"floor": None, "deps": modules, "stdlib": stdlib}

    def floor_once(n: int | str, kind: str) -> ChildRun:
        run_dir = root / f"{kind}-{n}"
        args = json.dumps(shape.floor_args(run_dir))
        names = imports[kind]
        code = FLOOR_CODE if names is None else DEPS_FLOOR_CODE + FLOOR_CODE
        argv = [sys.executable, "-c", code, *([] if names is None else [names]), args]
        child = run_child(argv, cwd, log, env)
        if child.exit_code != 0:
            output = log.read_text(encoding="utf-8", errors="replace")
            raise BenchFailure(f"floor process exited {child.exit_code}:\n{output}")
        return child

    runtime_once("warmup")  # warms the page cache and writes the .pyc files (see child_env)
    for kind in imports:
        floor_once("warmup", kind)
    result = ProcessResult(label, shown, [], [], [], [], [], [], [], [], [], [])
    kinds = ["runtime", *imports]
    for n in range(rounds):
        runs: dict[str, ChildRun] = {}
        first = n % len(kinds)
        for which in kinds[first:] + kinds[:first]:  # each goes first in turn
            if which == "runtime":
                runs[which] = runtime_once(n)
            else:
                runs[which] = floor_once(n, which)
        runtime, floor = runs["runtime"], runs["floor"]
        result.runtime_s.append(runtime.wall_s)
        result.floor_s.append(floor.wall_s)
        result.ratios.append(runtime.wall_s / floor.wall_s)
        result.deps_s.append(runs["deps"].wall_s)
        result.deps_ratios.append(runs["deps"].wall_s / floor.wall_s)
        result.stdlib_s.append(runs["stdlib"].wall_s)
        result.stdlib_ratios.append(runs["stdlib"].wall_s / floor.wall_s)
        result.runtime_rss_mib.append(runtime.rss_mib)
        result.floor_rss_mib.append(floor.rss_mib)
        if runtime.launcher_mib is not None:
            result.launcher_mib.append(runtime.launcher_mib)
    shutil.rmtree(root)
    return result


# -- the CEL share of a process ---------------------------------------------------------------


@dataclass
class CelShare:
    conditions: int
    first_wall_ms: list[float]
    first_cpu_ms: list[float]
    rest_wall_ms: list[float]
    loaded: list[str]


def shipped_conditions(flows_dir: Path) -> list[str]:
    """Every ``when:`` condition written in the flows' YAML, in file order."""
    pattern = re.compile(r"""\bwhen:\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)')""")
    found: list[str] = []
    for path in sorted(flows_dir.glob("*.yaml")):
        for match in pattern.finditer(path.read_text(encoding="utf-8")):
            double, single = match.groups()
            source = double if double is not None else single.replace("''", "'")
            if source not in found:
                found.append(source)
    return found


def cel_share(flows_dir: Path, rounds: int, env: dict[str, str], cwd: Path) -> CelShare:
    """The first evaluate() of a shipped condition (and of the rest) in fresh interpreters."""
    others = [source for source in shipped_conditions(flows_dir) if source != CEL_FIRST]
    argv = [sys.executable, "-c", CEL_CODE, CEL_FIRST, json.dumps(others)]
    share = CelShare(len(others) + 1, [], [], [], [])
    for n in range(rounds + 1):  # the first one writes the .pyc files: not counted
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
        try:
            got = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise BenchFailure(f"CEL share: no result\n{done.stdout}{done.stderr}") from None
        if got["value"] is not True:
            raise BenchFailure(f"CEL share: {CEL_FIRST!r} gave {got['value']}: {got['error']}")
        if n:
            share.first_wall_ms.append(got["first_ms"][0])
            share.first_cpu_ms.append(got["first_ms"][1])
            share.rest_wall_ms.append(got["rest_ms"][0])
        share.loaded = got["loaded"]
    return share


def report_cel(share: CelShare, process: ProcessResult) -> None:
    first = statistics.median(share.first_wall_ms)
    cpu = statistics.median(share.first_cpu_ms)
    rest = statistics.median(share.rest_wall_ms)
    runtime = statistics.median(process.runtime_s) * 1000
    head = "  of which CEL (fresh interpreter, medians)"
    print(
        f"{head:<64} first condition {first:6.1f} ms ({cpu:.1f} ms CPU) + "
        f"{share.conditions - 1} more {rest:5.1f} ms = {(first + rest) / runtime:.0%} of "
        f"{runtime:.1f} ms"
    )
    loaded = ", ".join(share.loaded) or "nothing outside the standard library"
    print(f"    loaded by evaluating {CEL_FIRST!r}: {loaded}")


# -- report ----------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def spread(values: list[float], fmt: str) -> str:
    return f"[{format(min(values), fmt)} .. {format(max(values), fmt)}]"


def report_location(result: LocationResult, verbose: bool) -> None:
    runtime = statistics.median(result.runtime_rates)
    floor = statistics.median(result.floor_rates)
    ratio = statistics.median(result.ratios)
    head = f"stub steps/s ({result.label})"
    print(
        f"{head:<64} runtime {runtime:8.1f}  floor {floor:8.1f}  ratio {ratio:.2f} "
        f"(target >= {result.target:.2f})  {verdict(ratio >= result.target)}"
    )
    if verbose:
        print(
            f"    per step: runtime {1e6 / runtime:.0f} us, floor {1e6 / floor:.0f} us; "
            f"ratio per round {spread(result.ratios, '.2f')}: ",
            end="",
        )
        print(" ".join(f"{r:.2f}" for r in result.ratios))


def report_processes(result: ProcessResult, verbose: bool) -> None:
    runtime = statistics.median(result.runtime_s) * 1000
    floor = statistics.median(result.floor_s) * 1000
    ratio = statistics.median(result.ratios)
    head = f"swarm run process ({result.label})"
    judged = result.label.startswith("tmpfs")  # on disk the floor itself moves threefold
    target = (
        f"(target <= {TARGET_PROCESS:.2f})  {verdict(ratio <= TARGET_PROCESS)}"
        if judged
        else "(on disk: printed, not judged)"
    )
    print(
        f"{head:<64} runtime {runtime:6.1f} ms  floor {floor:6.1f} ms  ratio {ratio:.2f} {target}"
    )
    deps = statistics.median(result.deps_s) * 1000
    head = "  dependency floor: the floor after importing what swarm run does"
    print(
        f"{head:<64} deps    {deps:6.1f} ms  floor {floor:6.1f} ms  ratio "
        f"{statistics.median(result.deps_ratios):.2f} (no target: below it no change of "
        "swarm_runtime reaches)"
    )
    stdlib = statistics.median(result.stdlib_s) * 1000
    head = "  standard-library floor: the stdlib modules swarm_runtime imports"
    print(
        f"{head:<64} stdlib  {stdlib:6.1f} ms  floor {floor:6.1f} ms  ratio "
        f"{statistics.median(result.stdlib_ratios):.2f}"
    )
    if judged:
        report_headroom(floor, stdlib, deps)
    rss = statistics.median(result.runtime_rss_mib)
    floor_rss = statistics.median(result.floor_rss_mib)
    head = "  peak RSS (median of rounds)"
    print(
        f"{head:<64} runtime {rss:6.1f} MiB floor {floor_rss:6.1f} MiB "
        f"(target <= {TARGET_RSS_MIB:.0f} MiB)  {verdict(rss <= TARGET_RSS_MIB)}"
    )
    if verbose:
        print(f"    ratio per round {spread(result.ratios, '.2f')}: ", end="")
        print(" ".join(f"{r:.2f}" for r in result.ratios))


def report_headroom(floor: float, stdlib: float, deps: float) -> None:
    """What the process target leaves above the standard-library floor, and who needs it.

    Under the target, ``swarm run`` may take ``TARGET_PROCESS x floor``. The
    standard-library floor is already spent (the interpreter, the floor's writes, argparse,
    pathlib, typing, ...); what is left must hold the imports outside the standard library
    and what they bring (``deps - stdlib``), the project's own modules, and each step's
    Python beyond the writes.
    """
    left = TARGET_PROCESS * floor - stdlib
    outside = deps - stdlib
    head = "  left under the target above the standard-library floor"
    print(
        f"{head:<64} {left:6.1f} ms  (the other imports take {outside:.1f} ms alone; "
        "the project's modules and its steps' Python come on top)"
    )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help="in-process rounds per location (15)")
    parser.add_argument("--process-rounds", type=int, help="whole-process rounds (10)")
    parser.add_argument("--quick", action="store_true", help="3 rounds of each: a smoke test")
    parser.add_argument(
        "--flows-dir", type=Path, default=DEFAULT_FLOWS_DIR, help="default: the repo's flows/"
    )
    parser.add_argument(
        "--disk-dir", type=Path, help="where the disk runs go (default: the system temp dir)"
    )
    parser.add_argument(
        "--keep-bytecode-env",
        action="store_true",
        help="run the processes with the environment's bytecode settings as they are "
        "(default: bytecode cached in a temp PYTHONPYCACHEPREFIX, see child_env)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every round's ratio")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 3 if args.quick else 15
    if args.process_rounds is None:
        args.process_rounds = 3 if args.quick else 10
    if args.rounds < 1 or args.process_rounds < 1:
        parser.error("rounds must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    flows_dir = args.flows_dir.resolve()
    sys.dont_write_bytecode = True  # this process writes nothing into the repository
    try:
        bench = InProcess(flows_dir)
    except ImportError as exc:
        print(f"cannot import swarm_runtime ({exc}); run with the project's venv python")
        return 1
    except BenchFailure as exc:
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    print(
        f"python {platform.python_version()} ({sys.executable}), {os.cpu_count()} CPUs, "
        f"flows {flows_dir} ({', '.join(bench.order)})"
    )
    print(
        f"rounds: {args.rounds} in-process per location, {args.process_rounds} whole-process; "
        "alternating, order flipped every round, one warm-up of each first"
    )
    temp_dirs: list[Path] = []
    try:
        locations: list[tuple[str, Path, float]] = []
        disk = disk_temp_dir(args.disk_dir)
        temp_dirs.append(disk)
        locations.append(("disk", disk, TARGET_DISK))
        if Path("/dev/shm").is_dir():
            shm = Path(tempfile.mkdtemp(prefix="stub-bench-", dir="/dev/shm"))
            temp_dirs.append(shm)
            locations.append(("tmpfs", shm, TARGET_TMPFS))
        results: list[LocationResult] = []
        shape: Shape | None = None
        for kind, root, target in locations:
            result, shape = bench_location(bench, kind, root, args.rounds, target, shape)
            results.append(result)
            if len(results) == 1:
                print(
                    f"per run: {shape.steps} steps; per step: receipt ~{shape.receipt_bytes} B, "
                    f"transcript ~{shape.transcript_bytes} B in {shape.transcript_lines} lines, "
                    f"3 events ~{shape.event_bytes} B each, history line ~{shape.history_bytes} "
                    f"B, checkpoint ~{shape.checkpoint_bytes} B (the floor writes the same)"
                )
        if len(locations) == 1:
            print("no /dev/shm here: the tmpfs measurements are skipped")
        assert shape is not None
        pycache = None if args.keep_bytecode_env else Path(tempfile.mkdtemp(dir=disk))
        env = child_env(pycache)
        processes = [
            bench_processes(
                flows_dir,
                describe(kind, root),
                Path(tempfile.mkdtemp(prefix="proc-", dir=root)),
                args.process_rounds,
                shape,
                env,
            )
            for kind, root, _ in locations
        ]
        share = cel_share(flows_dir, args.process_rounds, env, disk)
        print()
        for result in results:
            report_location(result, args.verbose)
        for process in processes:
            report_processes(process, args.verbose)
        report_cel(share, processes[-1])
        print(f"`swarm run` measured as: {processes[0].command} run --progress never")
        if pycache is not None:
            print(
                "processes run with bytecode cached in a temp PYTHONPYCACHEPREFIX"
                + (
                    " (PYTHONDONTWRITEBYTECODE dropped)"
                    if os.environ.get("PYTHONDONTWRITEBYTECODE")
                    else ""
                )
                + "; --keep-bytecode-env measures with the environment as is"
            )
        launcher = [mib for process in processes for mib in process.launcher_mib]
        if launcher:
            print(
                f"peak RSS is ru_maxrss of each child started by a {max(launcher):.1f} MiB "
                "launcher, not by this process (a child inherits its parent's high-water mark)"
            )
    except BenchFailure as exc:
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    finally:
        for path in temp_dirs:
            shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
