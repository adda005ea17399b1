"""Re-record the cassettes and the sdk goldens against the local fake servers.

    .venv/bin/python tests/record_cassettes.py [suite] [examples] [openai-compat]

Starts the loopback Anthropic and OpenAI servers of tests/fakes, then runs in record mode
(with --snapshot-update) the parts named, or all of them: `suite`, the contract suite and
the sdk goldens (cassettes in golden/cassettes); `examples`, the user example under
examples/ (examples/golden/cassettes); `openai-compat`, the example under
examples/openai-compat/, whose steps run on openai-step and claude-step (its
golden/cassettes). The keys are fake, and a key found in any file of a part's golden dir
afterwards fails the script. To record against the real API instead, run
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
from tests.fakes.openai_server import OpenAIServer  # noqa: E402

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-local-recording-not-a-key",
    "OPENAI_API_KEY": "sk-local-recording-not-a-key",
}
PARTS: dict[str, tuple[Path, list[str]]] = {
    "suite": (
        REPO,
        [
            "tests/contract",
            "tests/golden/test_goldens.py",
            f"--swarm-cassette-dir={REPO / 'golden' / 'cassettes'}",
        ],
    ),
    "examples": (REPO / "examples", []),
    "openai-compat": (REPO / "examples" / "openai-compat", []),
}
"""Each part: where pytest runs, its arguments; its recordings land in ``golden/`` there."""


def leaked_keys(directory: Path) -> list[str]:
    """Files under ``directory`` that hold one of the fake keys."""
    return sorted(
        str(path)
        for path in directory.rglob("*")
        if path.is_file() and any(key.encode() in path.read_bytes() for key in KEYS.values())
    )


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in PARTS]
    if unknown:
        print(f"unknown part(s): {', '.join(unknown)}; the parts: {', '.join(PARTS)}")
        return 2
    anthropic, openai = AnthropicServer().start(), OpenAIServer().start()
    try:
        prefixes = ("SWARM_", "ANTHROPIC_", "OPENAI_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        env.update(KEYS, ANTHROPIC_BASE_URL=anthropic.url, OPENAI_BASE_URL=openai.url + "/v1")
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"]
        record = [*pytest, "--swarm-mode=record", "--snapshot-update"]
        code = 0
        for name in names or list(PARTS):
            cwd, args = PARTS[name]
            code = subprocess.call([*record, *args], cwd=cwd, env=env) or code
            for path in leaked_keys(cwd / "golden"):
                print(f"a recording key is in {path}")
                code = 1
        return code
    finally:
        anthropic.stop()
        openai.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
