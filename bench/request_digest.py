"""The request digest of every recorded request body, against stdlib ``json.dumps``.

``request_digest`` (receipts' ``request_sha256``, what staleness compares) writes a body
as ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` would, with
msgspec's sorted encoder where the bytes are the same. This times both over the request
bodies of the golden cassettes, alternately in one process, checks every digest agrees,
and prints the median time of each and the median of the per-round ratios (now / stdlib;
lower is faster).

    python bench/request_digest.py [--rounds N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from swarm_runtime.engines.base import request_digest
from swarm_runtime.engines.cassette import body_value

REPO = Path(__file__).resolve().parent.parent


def _stdlib(body: Any) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _bodies() -> list[Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    bodies = []
    for path in sorted((REPO / "golden" / "cassettes").rglob("*.yaml")):
        for interaction in yaml.load(path.read_text("utf-8"), Loader=loader)["interactions"]:
            bodies.append(body_value(interaction["request"]["body"]))
    return [body for body in bodies if isinstance(body, dict)]


def _time(digest: Any, bodies: list[Any]) -> float:
    began = time.perf_counter()
    for body in bodies:
        digest(body)
    return (time.perf_counter() - began) / len(bodies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    bodies = _bodies()
    if any(request_digest(body) != _stdlib(body) for body in bodies):
        sys.exit("a digest differs from the stdlib's")
    size = statistics.median(len(json.dumps(body)) for body in bodies)
    times: dict[str, list[float]] = {"stdlib": [], "now": []}
    ratios = []
    for number in range(args.rounds):
        pair = [("stdlib", _stdlib), ("now", request_digest)]
        got = {name: _time(digest, bodies) for name, digest in pair[:: 1 - 2 * (number % 2)]}
        for name, seconds in got.items():
            times[name].append(seconds)
        ratios.append(got["now"] / got["stdlib"])
    print(f"{len(bodies)} recorded request bodies (median {size:.0f} chars), all digests agree")
    for name, values in times.items():
        print(f"  {name:>6}: {statistics.median(values) * 1e6:7.1f} us per body")
    print(
        f"  now / stdlib, median of {args.rounds} rounds: {statistics.median(ratios):.3f} "
        f"[{min(ratios):.3f} .. {max(ratios):.3f}]"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
