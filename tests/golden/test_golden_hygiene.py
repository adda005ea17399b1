"""What the goldens must never hold: absolute paths, real timestamps, run ids, durations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.conftest import REPO

GOLDEN = REPO / "golden"
TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}")
RUN_ID = re.compile(r"run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}")
ABSOLUTE = re.compile(r"(?<![\w<])/(?:tmp|home|root|work|Users|var|private)/")


def _walk(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if key in ("duration_ms", "durationMs") and item != "<DURATION_MS>":
                found.append(f"{where} = {item!r}")
            if key in ("ts", "timestamp", "started_at", "completed_at", "created_at") and (
                item not in ("<TIMESTAMP>", None)
            ):
                found.append(f"{where} = {item!r}")
            _walk(item, where, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", found)


def test_goldens_exist() -> None:
    scenarios = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name != "cassettes")
    assert {
        "sdlc",
        "signal",
        "stepwise-demo",
        "signal-max-iterations",
        "build-fails-at-implement",
    } <= set(scenarios)


def test_no_golden_holds_volatile_values() -> None:
    found: list[str] = []
    files = [p for p in GOLDEN.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO)
        for pattern, what in ((TIMESTAMP, "timestamp"), (RUN_ID, "run id"), (ABSOLUTE, "path")):
            match = pattern.search(text)
            if match:
                found.append(f"{rel}: {what} {match.group(0)!r}")
        documents = (
            [json.loads(line) for line in text.splitlines()]
            if path.suffix == ".jsonl"
            else [json.loads(text)]
        )
        for number, document in enumerate(documents, start=1):
            _walk(document, f"{rel}:{number}", found)
        assert text.endswith("\n") and not text.endswith("\n\n"), f"{rel}: one trailing newline"
    assert not found, "\n".join(found[:20])


def test_json_goldens_have_sorted_keys() -> None:
    for path in GOLDEN.rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert (
            text
            == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        ), path


def test_the_scan_would_catch_a_leak(tmp_path: Path) -> None:
    found: list[str] = []
    _walk({"ts": "2025-01-01T00:00:00Z", "payload": {"duration_ms": 3}}, "x", found)
    assert found == ["x.ts = '2025-01-01T00:00:00Z'", "x.payload.duration_ms = 3"]
    assert ABSOLUTE.search('"content": "see /tmp/pytest-of-root/x"')
    assert not ABSOLUTE.search('"content": "<PATH>/x"')
