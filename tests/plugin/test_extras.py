"""The ``pytest`` extra brings what the plugin needs, and every message that asks for a
package names that extra, installed from where this copy came from (no index has us)."""

from __future__ import annotations

import re
import tomllib

import pytest

from swarm_runtime.install import install_command
from tests.conftest import REPO


def _extra(name: str, extras: dict[str, list[str]]) -> set[str]:
    """The distributions an extra brings, its nested extras followed."""
    found: set[str] = set()
    for requirement in extras[name]:
        match = re.match(r"([A-Za-z0-9_.-]+)(\[([a-z,]+)\])?", requirement)
        assert match is not None
        if match.group(1) == "swarm-stepwise":
            for nested in (match.group(3) or "").split(","):
                found |= _extra(nested, extras)
        else:
            found.add(match.group(1).lower())
    return found


def test_the_pytest_extra_brings_what_the_plugin_needs_and_no_more() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    brings = _extra("pytest", project["optional-dependencies"])
    assert {"pytest", "syrupy", "vcrpy", "anthropic"} <= brings
    assert not brings & {"playwright", "hypothesis", "starlette", "uvicorn"}


def _shadow(pytester: pytest.Pytester, module: str) -> None:
    """A package named ``module`` in the project that cannot be imported: as if missing."""
    pytester.mkpydir(module).joinpath("__init__.py").write_text(
        f"raise ImportError('no module named {module}')\n"
    )


def test_record_and_replay_without_vcrpy_stop_at_start_naming_the_extra(
    swarm_pytester: pytest.Pytester,
) -> None:
    # Not installed, as Python's import system sees it: neither importable nor found.
    swarm_pytester.makeconftest("import sys\n\nsys.modules['vcr'] = None\n")
    swarm_pytester.makepyfile("def test_x(flow_runner):\n    flow_runner('signal')\n")
    result = swarm_pytester.runpytest_subprocess("--swarm-mode=replay")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines(
        [rf".*mode replay .*needs vcrpy: {re.escape(install_command('pytest'))}"]
    )


def test_swarm_golden_without_syrupy_names_the_extra(swarm_pytester: pytest.Pytester) -> None:
    _shadow(swarm_pytester, "syrupy")
    swarm_pytester.makepyfile(
        "def test_x(flow_runner, swarm_golden):\n    swarm_golden(flow_runner('signal'), 'x')\n"
    )
    result = swarm_pytester.runpytest_subprocess("-p", "no:syrupy")
    result.assert_outcomes(errors=1)  # at setup, where the fixture is made
    result.stdout.re_match_lines(
        [rf".*swarm_golden needs syrupy.*{re.escape(install_command('pytest'))}"]
    )
