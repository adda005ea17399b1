"""Re-record the cassettes and the sdk goldens against the local Anthropic server.

    .venv/bin/python tests/record_cassettes.py

Starts the loopback server of tests/fakes, then runs the contract suite and the sdk
goldens in record mode against it, and the user example under examples/ (its cassettes
go to examples/golden/cassettes). To record against the real API instead, run
`pytest tests/contract tests/golden --swarm-mode=record --snapshot-update` with
ANTHROPIC_API_KEY set (and no ANTHROPIC_BASE_URL).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.anthropic_server import AnthropicServer  # noqa: E402


def main() -> int:
    server = AnthropicServer().start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
        env["ANTHROPIC_BASE_URL"] = server.url
        env["ANTHROPIC_API_KEY"] = "sk-ant-local-recording-not-a-key"
        cassettes = REPO / "golden" / "cassettes"
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"]
        code = subprocess.call(
            [
                *pytest,
                "--swarm-mode=record",
                "--snapshot-update",
                "tests/contract",
                "tests/golden/test_goldens.py",
                f"--swarm-cassette-dir={cassettes}",
            ],
            cwd=REPO,
            env=env,
        )
        example = subprocess.call(
            [*pytest, "--swarm-mode=record", "--snapshot-update"], cwd=REPO / "examples", env=env
        )
        return code or example
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
