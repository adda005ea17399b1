"""The pytest plugin's hooks: options, configuration, markers, report header, summary.

Everything else lives in its own module (options, fixtures, assertions, hookspecs); the
runtime is imported only by fixtures that run flows, so a plain ``pytest`` pays nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# PyYAML's C loader cannot be imported a second time in one process (its nodes lose their
# tags), and pytester's inline sessions drop the modules first imported inside them: so
# the plugin imports PyYAML once, up front, for every session of the process.
import yaml  # noqa: F401

from pytest_swarm.cassettes import CALL_PASSED
from pytest_swarm.markers import marker_errors
from pytest_swarm.options import OPTIONS_KEY, add_options, check_credentials, resolve
from pytest_swarm.summary import TOTALS_KEY, SwarmTotals

__all__ = [
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``swarm`` option group."""
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """``pytest_swarm_register_engines`` and ``pytest_swarm_normalize``."""
    from pytest_swarm import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    """Resolve options, check credentials of live modes, register markers and fixtures."""
    from pytest_swarm import fixtures

    config.addinivalue_line(
        "markers", "swarm_flow(key): the flow flow_runner() runs when given no flow keys"
    )
    config.addinivalue_line(
        "markers",
        "swarm_modes(*modes): run the test only in these swarm modes (skipped in others)",
    )
    config.addinivalue_line(
        "markers",
        "swarm_cassette(name): record to and replay from <cassette dir>/<name>/ "
        "instead of the test's own directory",
    )
    options = resolve(config)
    if not (config.option.help or config.option.collectonly or config.option.showfixtures):
        check_credentials(options)
    config.stash[OPTIONS_KEY] = options
    config.stash[TOTALS_KEY] = SwarmTotals()
    config.pluginmanager.register(fixtures, "swarm-fixtures")
    if options.contract:
        from pytest_swarm import contract_suite

        config.args[:] = [str(Path(contract_suite.__file__).parent)]


def pytest_report_header(config: pytest.Config) -> str:
    """The active mode, where it came from, and the flows dir."""
    return config.stash[OPTIONS_KEY].describe()


MARKER_ERRORS = pytest.StashKey[list[str]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check swarm markers' arguments, and skip tests not meant for the current mode."""
    options = config.stash[OPTIONS_KEY]
    for item in items:
        found = marker_errors(item, options)
        if found:
            # Reported when the test sets up: a usage error raised here would be lost as
            # an internal error under pytest-xdist, where workers collect.
            item.stash[MARKER_ERRORS] = found
            continue
        marker = item.get_closest_marker("swarm_modes")
        if marker is not None and options.mode not in marker.args:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"runs only in swarm mode(s) {', '.join(marker.args)}; "
                    f"current mode is {options.mode}"
                )
            )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test whose swarm markers are invalid, saying what is allowed."""
    errors = item.stash.get(MARKER_ERRORS, None)
    if errors:
        pytest.fail("invalid swarm marker:\n  " + "\n  ".join(errors), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note how the test's call phase ended, for the fixtures' teardown."""
    report = yield
    if call.when == "call":
        item.stash[CALL_PASSED] = report.passed
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker, hand this worker's totals to the controller."""
    workeroutput: Any = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["swarm_totals"] = session.config.stash[TOTALS_KEY].as_dict()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller, add a finished worker's totals."""
    totals = getattr(node, "workeroutput", {}).get("swarm_totals")
    if totals:
        node.config.stash[TOTALS_KEY].merge(totals)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The ``swarm`` section: mode, runs, steps, tokens, cost."""
    totals = config.stash.get(TOTALS_KEY, None)
    if totals is None or totals.runs == 0:
        return
    terminalreporter.write_sep("-", "swarm")
    terminalreporter.write_line(totals.line(config.stash[OPTIONS_KEY].mode))
