"""``request_sha256`` in every receipt: the same request, the same digest, on any machine."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def _digests(run: Path) -> dict[str, str]:
    return {
        path.relative_to(run).as_posix(): json.loads(path.read_text())["request_sha256"]
        for path in sorted(run.glob("*/receipts/*.json"))
    }


def test_two_stub_runs_send_the_same_requests_and_old_runs_still_validate(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    assert cli("run", "stepwise-demo", "--runs-dir", "a").code == 0
    assert cli("run", "stepwise-demo", "--runs-dir", "b").code == 0
    (first,) = (tmp_path / "a").iterdir()
    (second,) = (tmp_path / "b").iterdir()
    digests = _digests(first)
    assert len(digests) >= 10
    assert all(re.fullmatch(r"[0-9a-f]{64}", value) for value in digests.values())
    assert digests == _digests(second)
    # Each step's request differs from the others' (its own prompt).
    assert len(set(digests.values())) == len(digests)
    # A run written before receipts carried the digest still validates.
    for path in first.glob("*/receipts/*.json"):
        receipt = json.loads(path.read_text())
        del receipt["request_sha256"]
        path.write_text(json.dumps(receipt))
    assert cli("runs", "validate", str(first)).code == 0
    # A digest that is not one is refused.
    path = next(second.glob("*/receipts/*.json"))
    path.write_text(json.dumps({**json.loads(path.read_text()), "request_sha256": "abc"}))
    refused = cli("runs", "validate", str(second))
    assert refused.code == 1 and "request_sha256" in refused.out + refused.err
