"""The README's install line for a user's project is real, and CI runs it as written.

swarm-stepwise is on no package index: the README installs it from a checkout. The slow
part (a fresh environment, the line run with ``sh``, a small project's pytest session) is
``scripts/check-install``, a step of ``.ci/run``; this checks that the line it runs is the
README's, and that CI runs it.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO, load_script


def _check_install() -> ModuleType:
    return load_script("check-install")


def test_ci_runs_the_readmes_install_line_from_a_checkout() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    script = _check_install()
    line = script.install_line(readme)
    assert re.fullmatch(
        r"python3 -m venv \.venv && \.venv/bin/pip install '/path/to/swarm-stepwise\[pytest\]'",
        line,
    )
    assert script.command(line, Path("/src/swarm stepwise")) == (
        "python3 -m venv .venv && .venv/bin/pip install '/src/swarm stepwise[pytest]'"
    )
    # An install by name alone fails: the package is on no index.
    assert not re.search(r"pip install ['\"]swarm-stepwise\[pytest\]['\"]", readme)
    steps = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    assert "python3 scripts/check-install" in steps
