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

from pytest_swarm.budgets import MARKER_HELP
from pytest_swarm.cassettes import CALL_PASSED
from pytest_swarm.expect import VerdictFailed
from pytest_swarm.judges import RUNNER_KEY, VERDICT_KEY
from pytest_swarm.listeners import PLUGINS_KEY, RuntimePlugins
from pytest_swarm.markers import marker_errors
from pytest_swarm.options import OPTIONS_KEY, add_options, check_credentials, resolve
from pytest_swarm.repeat import RepeatPlugin
from pytest_swarm.repeat_summary import RepeatTotals
from pytest_swarm.results_log import OUTCOME_KEY, ResultsLog
from pytest_swarm.summary import TOTALS_KEY, SwarmTotals
from pytest_swarm.unused import shares_family


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``swarm`` option group."""
    from pytest_swarm import coverage

    add_options(parser)
    coverage.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """``pytest_swarm_register_engines`` and ``pytest_swarm_normalize``."""
    from pytest_swarm import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


MARKERS = (
    "swarm_flow(key): the flow flow_runner() runs when given no flow keys",
    "swarm_modes(*modes): run the test only in these swarm modes (skipped in others)",
    "swarm_cassette(name): record to and replay from <cassette dir>/<name>/ "
    "instead of the test's own directory",
    "swarm_repeat(n, min_pass_rate=1.0): run the test n times in sdk and cli modes "
    "(once in stub, replay and record); it passes when that share of them passes",
    "swarm_faults(plan): inject faults per step and attempt into the test's flow_runner "
    "runs, e.g. {'review': [{'kind': 'http_429', 'retry_after_ms': 0}, None]}",
)
"""The plugin's markers, as ``pytest --markers`` lists them."""


def pytest_configure(config: pytest.Config) -> None:
    """Resolve options, check credentials of live modes, register markers and fixtures."""
    from pytest_swarm import coverage, fixtures

    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.addinivalue_line("markers", MARKER_HELP)
    options = resolve(config)
    if not (config.option.help or config.option.collectonly or config.option.showfixtures):
        check_credentials(options, config.rootpath)
    config.stash[OPTIONS_KEY] = options
    config.stash[TOTALS_KEY] = SwarmTotals()
    config.stash[RESULTS_KEY] = (
        ResultsLog(options.results, config, options.mode) if options.results else None
    )
    # conftest.py files and plugins with swarm hooks join the runtime's plugins (historic:
    # those registered before this are seen too).
    config.stash[PLUGINS_KEY] = RuntimePlugins(config.stash[TOTALS_KEY])
    config.pluginmanager.register(config.stash[PLUGINS_KEY], "swarm-runtime-plugins")
    config.pluginmanager.register(fixtures, "swarm-fixtures")
    config.pluginmanager.register(_SkipWatcher(config.stash[TOTALS_KEY]), "swarm-skips")
    coverage.configure(config)
    config.pluginmanager.register(RepeatPlugin(options, RepeatTotals()), "swarm-repeat")
    if options.contract:
        from pytest_swarm import contract_suite
        from pytest_swarm.commands import CONTRACT_FILE

        # Tests of the suite named as the plugin prints them (test_contract.py::test_x[flow])
        # are picked out of the whole suite, so their node ids (and cassette dirs) are the
        # ones a run of the whole suite gives them.
        config.stash[CONTRACT_PICKED] = [
            arg for arg in config.args if arg.startswith(f"{CONTRACT_FILE}::")
        ]
        config.args[:] = [str(Path(contract_suite.__file__).parent)]


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """``assert record.status == "succeeded"`` on a run that did not: say why, whole."""
    from pytest_swarm.run_record import RunStatus

    for side in (left, right):
        if isinstance(side, RunStatus) and side != "succeeded" and side.record is not None:
            record = side.record
            return [
                f"{str(left)!r} {op} {str(right)!r}",
                f"run {record.run_id} {side}: {record.cause()}",
                f"run dir: {record.path}",
            ]
    return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The active mode, where it came from, and the flows dir; settings that moved."""
    import os

    from swarm_runtime.config import resolve_settings
    from swarm_runtime.errors import ConfigError

    try:
        notices = resolve_settings(env=os.environ, cwd=config.rootpath).notices
    except ConfigError:
        notices = ()  # said by the tests that run flows
    return [config.stash[OPTIONS_KEY].describe(), *(f"swarm: note: {n}" for n in notices)]


MARKER_ERRORS = pytest.StashKey[list[str]]()
UNUSED_STAT = "unused (session failed)"
"""How the last line of a session failed by unused goldens or cassettes counts them."""
CONTRACT_PICKED = pytest.StashKey[list[str]]()
"""The contract suite's tests named on the command line (none: the whole suite)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check swarm markers' arguments, and skip tests not meant for the current mode."""
    options = config.stash[OPTIONS_KEY]
    picked = config.stash.get(CONTRACT_PICKED, None)
    if picked:
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in picked])
        items[:] = [i for i in items if i.nodeid in picked]
    for item in items:
        found = marker_errors(item, options)
        if found:
            # Reported when the test sets up: a usage error raised here would be lost as
            # an internal error under pytest-xdist, where workers collect.
            item.stash[MARKER_ERRORS] = found
            continue
        marker = item.get_closest_marker("swarm_modes")
        # What replays must be recordable: a test meant for replay runs in record mode too.
        allowed = (*marker.args, "record") if marker and "replay" in marker.args else ()
        if marker is not None and options.mode not in (*marker.args, *allowed):
            if shares_family((*marker.args, *allowed), options.mode):
                config.stash[TOTALS_KEY].passed_over.add(item.nodeid)
            item.add_marker(
                pytest.mark.skip(
                    reason=f"runs only in swarm mode(s) {', '.join(marker.args)}; "
                    f"current mode is {options.mode}"
                )
            )


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Note deselected tests: after such a session no golden or cassette is "unused"."""
    for item in items:
        item.config.stash[TOTALS_KEY].passed_over.add(item.nodeid)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test whose swarm markers are invalid, saying what is allowed."""
    errors = item.stash.get(MARKER_ERRORS, None)
    if errors:
        pytest.fail("invalid swarm marker:\n  " + "\n  ".join(errors), pytrace=False)


NETWORK_GUARD = pytest.StashKey[Any]()
RESULTS_KEY = pytest.StashKey["ResultsLog | None"]()
"""The session's results file (docs/judges.md#the-results-file), where tests that ran flows are
written."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Block the network for the whole test (setup to teardown) when asked to."""
    options = item.config.stash[OPTIONS_KEY]
    if not options.block_network:
        return (yield)
    from pytest_swarm.network import NetworkGuard

    with NetworkGuard(options.mode, options.sources["block_network"]) as guard:
        item.stash[NETWORK_GUARD] = guard
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fail a test that tried to leave the machine with a blocked network, saying where.

    A test whose runs have a flow judge that did not pass fails once its body has passed.
    """
    guard = item.stash.get(NETWORK_GUARD, None)
    try:
        result = yield
        runner = item.stash.get(RUNNER_KEY, None)
        if runner is not None and runner.records:
            from pytest_swarm.judges import flow_judges_failed

            failed = flow_judges_failed(runner.records, runner.flows)
            if failed:
                item.stash[VERDICT_KEY] = failed[1]
                pytest.fail(failed[0], pytrace=False)
        return result
    finally:
        if guard is not None and guard.attempts:
            pytest.fail(guard.message(item.nodeid), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note how the test's call phase ended, for the fixtures' teardown."""
    report = yield
    if call.when == "call":
        item.stash[CALL_PASSED] = report.passed or _verdict_only(item, call)
    if report.failed or (report.skipped and item.stash.get(OUTCOME_KEY, "") != "failed"):
        item.stash[OUTCOME_KEY] = report.outcome
    if call.when == "teardown":
        _log_results(item)
    return report


def _verdict_only(item: pytest.Item, call: pytest.CallInfo[None]) -> bool:
    """Whether the call failed on a verdict about the output alone; its recording is kept.

    A verdict: an expectation or a judge failed, and every run of the test succeeded.
    """
    verdict = item.stash.get(VERDICT_KEY, False) or (
        call.excinfo is not None and call.excinfo.errisinstance(VerdictFailed)
    )
    runner = item.stash.get(RUNNER_KEY, None)
    runs = runner.records if runner is not None else []
    return verdict and all(record.status == "succeeded" for record in runs)


def _log_results(item: pytest.Item) -> None:
    """The test's lines in the session's results file, once it has ended.

    See docs/judges.md#the-results-file.
    """
    runner = item.stash.get(RUNNER_KEY, None)
    log = item.config.stash.get(RESULTS_KEY, None)
    if runner is None or log is None or not (runner.records or runner.verdicts):
        return  # only a test that ran flows has a line
    try:
        outcome = item.stash.get(OUTCOME_KEY, "passed")
        log.write(item.nodeid, outcome, runner.records, runner.verdicts, runner.flows)
    except OSError as exc:  # a results file that cannot be written never fails a test
        item.config.stash[TOTALS_KEY].plugin_warnings.setdefault(
            "results", f"{log.path} could not be written: {exc.strerror or exc}"
        )


class _SkipWatcher:
    """Notes tests skipped for reasons of their own: then no golden counts as unused."""

    def __init__(self, totals: SwarmTotals) -> None:
        self.totals = totals

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count a skip that is not a swarm_modes skip, and the stub-only ones."""
        from pytest_swarm.runner import STUB_ONLY

        if not report.skipped:
            return
        why = str(report.longrepr)
        if STUB_ONLY in why:
            self.totals.stub_only_skipped += 1
        elif "runs only in swarm mode" not in why:
            self.totals.unexplained_skips += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Hand a worker's totals to the controller; judge what no test used (docs/goldens.md)."""
    from pytest_swarm.unused import whole_suite

    config = session.config
    workeroutput: Any = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["swarm_totals"] = config.stash[TOTALS_KEY].as_dict()
        return
    totals, options = config.stash[TOTALS_KEY], config.stash[OPTIONS_KEY]
    # A test that failed may have failed before it compared its golden or played its
    # cassettes: what it still needs is not unused, so nothing is judged (or removed).
    if session.testsfailed == 0 and whole_suite(session, totals, contract=options.contract):
        _settle_unused(session, totals, options)


def _settle_unused(session: pytest.Session, totals: SwarmTotals, options: Any) -> None:
    """Remove what no test used where asked to; fail the session on the rest.

    See docs/pytest.md#parallel-runs-and-the-summary.
    """
    from pytest_swarm.unused import remove, unused_cassette_dirs, unused_goldens

    config = session.config
    goldens = unused_goldens(options.golden_dir, totals.scenarios, options.mode)
    cassettes: list[str] = []
    if options.mode in ("replay", "record"):
        cassettes = unused_cassette_dirs(options.cassette_dir, totals.cassette_dirs)
    updating = config.getoption("--snapshot-update", default=False)
    if goldens and updating:
        totals.goldens_removed = remove(options.golden_dir, goldens)
        goldens = []
    if cassettes and config.getoption("swarm_prune_cassettes"):
        totals.cassettes_removed = remove(options.cassette_dir, cassettes)
        cassettes = []
    totals.unused_goldens, totals.unused_cassettes = goldens, cassettes
    failing = (goldens or cassettes) and not config.getoption("swarm_warn_unused")
    if failing and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        totals.failed_by_unused = True


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller, add a finished worker's totals."""
    totals = getattr(node, "workeroutput", {}).get("swarm_totals")
    if totals:
        node.config.stash[TOTALS_KEY].merge(totals)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The ``swarm`` section: mode, runs, steps, tokens, cost."""
    totals = config.stash.get(TOTALS_KEY, None)
    if totals is None or not (
        totals.runs
        or totals.stub_only_skipped
        or totals.unused_goldens
        or totals.unused_cassettes
        or totals.rerecord
        or totals.plugin_warnings
    ):
        return
    terminalreporter.write_sep("-", "swarm")
    for line in totals.lines(config.stash[OPTIONS_KEY].mode):
        terminalreporter.write_line(line)
    if totals.failed_by_unused:
        unused = len(totals.unused_goldens) + len(totals.unused_cassettes)
        terminalreporter.write_line(
            "FAILED: every test passed, but what no test used (listed above) fails the "
            "session; --swarm-warn-unused only warns",
            red=True,
            bold=True,
        )
        # The last line of the session says it too, rather than a green "N passed".
        terminalreporter.stats.setdefault(UNUSED_STAT, []).extend([totals] * unused)
    if totals.rerecord:
        from pytest_swarm.commands import command_for

        command = command_for(
            config,
            sorted(totals.rerecord),
            mode="record",
            update_goldens=any(totals.rerecord.values()),
        )
        terminalreporter.write_line(
            f"re-record the {len(totals.rerecord)} test(s) whose recordings no longer match "
            f"(with each recording engine's key or base URL set, as each miss above says): "
            f"{command}"
        )
