"""Hostile input: the ``swarm`` command run as a user runs it, on files meant to break it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from swarm_runtime.record import Record, field

FAKE_KEY = "sk-ant-fake-hostile-0123456789abcdef"
"""An obviously fake credential: no test uses a real one."""


class Outcome(Record):
    """What a ``swarm`` process did: exit code, stdout, stderr (decoded with replacement)."""

    code: int
    out: str
    err: str
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)

    def one_line_error(self, *needles: str) -> str:
        """The error line on stderr; it must name every needle, and carry no traceback."""
        assert "Traceback" not in self.err, self.err
        lines = [line for line in self.err.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line]
        assert len(errors) == 1, f"expected one error line, got:\n{self.err}"
        for needle in needles:
            assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"
        return errors[0]


def files_under(root: Path) -> set[str]:
    """Every path under ``root``, relative (what a command left behind)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def swarm(tmp_path: Path) -> Iterator[Callable[..., Outcome]]:
    """Run ``swarm ARGS`` (``python -m swarm_runtime``) in a project dir of its own."""
    project = tmp_path / "project"
    project.mkdir()
    base_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SWARM_") and not k.startswith("ANTHROPIC_") and k != "GITHUB_TOKEN"
    }

    def run(
        *args: str | bytes,
        env: Mapping[str, str] | None = None,
        preexec: Callable[[], None] | None = None,
    ) -> Outcome:
        full_env = {**base_env, **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "swarm_runtime", *args],
            cwd=project,
            env=full_env,
            capture_output=True,
            timeout=300,  # a guard against a hang, never an assertion about speed
            preexec_fn=preexec,
        )
        return Outcome(
            code=proc.returncode,
            out=proc.stdout.decode("utf-8", "replace"),
            err=proc.stderr.decode("utf-8", "replace"),
            cwd=project,
            env=dict(env or {}),
        )

    yield run
