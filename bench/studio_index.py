"""The studio's run list with 10 000 runs: the first page from the index against a full scan.

A runs dir of synthetic runs is made (``meta.json``, ``spec.json`` and a short
``events.jsonl`` each; 95 % succeeded, 3 % failed, 2 % stopped). Then, alternately (order
flipped each round), in this one process:

* **index**: the first page (50 runs, newest first) as ``GET /api/runs`` answers it, the
  index first brought up to date with the run dirs (it lists them and re-reads what
  changed; here nothing did);
* **scan**: the same page by reading every run's ``meta.json`` and lock, as a list
  without an index must.

It prints the median of each, the median of the per-round ratios, and the time the first
(cold) build of the index took. Target: index / scan <= 0.10.

    python bench/studio_index.py [--runs N] [--rounds N] [--http]

``--http`` also times ``GET /api/runs`` through the ASGI app in-process (Starlette's test
client; needs the studio extra).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.10
PAGE = 50


def make_runs(runs_dir: Path, count: int) -> None:
    """``count`` run dirs that look like what ``swarm run`` leaves."""
    runs_dir.mkdir(parents=True)
    for number in range(count):
        seconds = number
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(1_700_000_000 + seconds))
        run_id = f"run-{stamp}-{number % 36**6:06d}"[:26]
        run_dir = runs_dir / run_id
        run_dir.mkdir()
        status = "failed" if number % 33 == 0 else "stopped" if number % 50 == 1 else "succeeded"
        created = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(1_700_000_000 + seconds))
        meta = {
            "run_id": run_id,
            "status": status,
            "flows": ["signal", "plan"] if number % 2 else ["build"],
            "backend": "claude-step-orchestrator",
            "engine": "claude-step",
            "mode": "stub",
            "created_at": created,
            "completed_at": created,
            "error": "a step failed" if status == "failed" else None,
            "steps_completed": 18,
            "total_steps_executed": 18,
            "loop_iterations": 1,
            "tokens": {"prompt": 10_000, "completion": 800, "total": 10_800},
            "cost_usd": 0.0,
            "steps_without_cost": 0,
            "flow_totals": {"signal": {"steps_executed": 10}, "plan": {"steps_executed": 8}},
            "schema_version": "1",
        }
        (run_dir / "meta.json").write_text(json.dumps(meta, indent=2))
        (run_dir / "spec.json").write_text(json.dumps({"flows": meta["flows"]}))
        (run_dir / "events.jsonl").write_text(
            json.dumps({"run_id": run_id, "seq": 1, "kind": "run_created", "payload": {}}) + "\n"
        )
        moment = 1_700_000_000 + seconds  # a runs dir of this size was made over days
        os.utime(run_dir, (moment, moment))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs (default 10 000)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--http", action="store_true", help="also time GET /api/runs")
    parser.add_argument("--dir", help="where to make the runs (default: a temp dir)")
    args = parser.parse_args()

    from swarm_runtime.studio.index import RunIndex, scan_runs

    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        runs_dir = Path(scratch) / "runs"
        began = time.perf_counter()
        make_runs(runs_dir, args.runs)
        print(f"made {args.runs} runs in {time.perf_counter() - began:.1f} s under {runs_dir}")
        index = RunIndex(runs_dir)
        began = time.perf_counter()
        first = index.page(per_page=PAGE)
        print(f"first build of the index: {(time.perf_counter() - began) * 1000:.0f} ms")
        if [r["run_id"] for r in first["runs"]] != [
            r["run_id"] for r in scan_runs(runs_dir)[:PAGE]
        ]:
            sys.exit("the index and the scan disagree on the first page")
        client = _client(runs_dir) if args.http else None

        contenders = {
            "index": lambda: index.page(per_page=PAGE),
            "scan": lambda: scan_runs(runs_dir)[:PAGE],
        }
        if client is not None:
            contenders["http"] = lambda: client.get(f"/api/runs?per_page={PAGE}").json()
        timings: dict[str, list[float]] = {name: [] for name in contenders}
        for number in range(args.rounds):
            names = list(contenders)
            for name in names if number % 2 == 0 else reversed(names):
                began = time.perf_counter()
                contenders[name]()
                timings[name].append(time.perf_counter() - began)
        index.close()
    ratios = [i / s for i, s in zip(timings["index"], timings["scan"], strict=True)]
    for name, values in timings.items():
        print(f"{name:>6}: median {statistics.median(values) * 1000:8.2f} ms")
    ratio = statistics.median(ratios)
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"index / scan: {ratio:.4f} (target <= {TARGET}) {verdict}")
    if "http" in timings:
        http = [h / s for h, s in zip(timings["http"], timings["scan"], strict=True)]
        print(f"GET /api/runs / scan: {statistics.median(http):.4f}")
    return 0


def _client(runs_dir: Path) -> object:
    from starlette.testclient import TestClient

    from swarm_runtime.studio.app import StudioConfig, create_app

    return TestClient(create_app(StudioConfig(runs_dir=runs_dir)), base_url="http://127.0.0.1")


if __name__ == "__main__":
    os.environ.setdefault("SWARM_NO_CACHE", "1")
    sys.exit(main())
