"""Route coverage in pytest (docs/coverage.md): ``--swarm-coverage`` and ``--swarm-coverage-min``.

Every run a fixture makes is counted after it ends (its steps, routes and tool calls,
from the events it already read or one read of ``events.jsonl``); pytest-xdist workers
hand their counts to the controller, which measures them against every step and edge of
the flows dir (and every tool its steps name), prints a table, writes
``swarm-coverage.json`` in pytest's rootdir and, below the minimum, fails the session
listing the edges never taken. Tools never called are listed, never gated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.coverage.routes import Taken

REPORT_FILE = "swarm-coverage.json"
MIN_ENV = "SWARM_COVERAGE_MIN"
MIN_INI = "swarm_coverage_min"


def add_options(parser: pytest.Parser) -> None:
    """``--swarm-coverage`` and ``--swarm-coverage-min PCT`` (and the minimum's ini key)."""
    group = parser.getgroup("swarm")
    group.addoption(
        "--swarm-coverage",
        action="store_true",
        default=False,
        help=f"measure which steps and edges of the flows the session's runs took (and "
        f"which tools each step called); print a table and write {REPORT_FILE} in the rootdir",
    )
    group.addoption(
        "--swarm-coverage-min",
        dest="swarm_coverage_min",
        default=None,
        metavar="PCT",
        help=f"fail the session when route coverage is below PCT (0-100); implies "
        f"--swarm-coverage (env {MIN_ENV}, ini {MIN_INI})",
    )
    parser.addini(MIN_INI, f"route coverage minimum, 0-100 (overridden by {MIN_ENV})", default=None)


def minimum(
    config: pytest.Config, env: Mapping[str, str] | None = None
) -> tuple[bool, float | None]:
    """Whether coverage is on, and the minimum: CLI > environment > ini; UsageError if bad."""
    environ = os.environ if env is None else env
    value: Any = config.getoption("swarm_coverage_min")
    source = "--swarm-coverage-min"
    if value in (None, ""):
        value, source = environ.get(MIN_ENV) or None, MIN_ENV
    if value in (None, ""):
        value, source = config.getini(MIN_INI) or None, f"ini {MIN_INI}"
    on = bool(config.getoption("swarm_coverage"))
    if value in (None, ""):
        return on, None
    try:
        number = float(str(value).strip().rstrip("%"))
    except ValueError:
        number = -1.0
    if not 0 <= number <= 100:  # NaN fails too
        raise pytest.UsageError(
            f"swarm: coverage minimum {value!r} from {source} is not allowed: give a "
            "percentage from 0 to 100, e.g. --swarm-coverage-min 80"
        )
    return True, number


class SwarmCoverage:
    """The session's coverage: counted on every process, reported on the controller."""

    def __init__(self, config: pytest.Config, minimum: float | None) -> None:
        from swarm_runtime.coverage.routes import Taken

        self.config = config
        self.minimum = minimum
        self.taken: Taken = Taken()
        self.report: dict[str, Any] | None = None
        self.error: str | None = None
        self.written: str | None = None

    def add_run(self, record: RunRecord) -> None:
        """Count the steps and routes of one finished run (its events read at most once)."""
        from swarm_runtime.coverage.routes import collect, collect_file

        if "event_dicts" in vars(record):  # the test read them already
            collect(record.event_dicts, self.taken)
            return
        try:
            collect_file(record.path / "events.jsonl", self.taken)
        except OSError:
            return  # the run's own test reports an unreadable log

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: known only where it is
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """On the xdist controller, add a finished worker's counts."""
        counts = getattr(node, "workeroutput", {}).get("swarm_coverage")
        if counts:
            self.taken.merge(counts)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A worker hands over its counts; the controller reports and applies the minimum."""
        workeroutput: Any = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["swarm_coverage"] = self.taken.as_dict()
            return
        if session.exitstatus == pytest.ExitCode.INTERNAL_ERROR:
            return  # a session that broke measured nothing: an earlier report stays
        self._report(self.taken)
        if self.minimum is None or session.exitstatus != pytest.ExitCode.OK:
            return
        from swarm_runtime.coverage.report import below

        if self.report is None or below(self.report, self.minimum):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _report(self, taken: Taken) -> None:
        from pytest_swarm.options import OPTIONS_KEY
        from swarm_runtime.coverage.report import build
        from swarm_runtime.coverage.routes import Universe
        from swarm_runtime.errors import SwarmError
        from swarm_runtime.flow.registry import FlowRegistry
        from swarm_runtime.storage.store import write_json_atomic

        flows_dir = self.config.stash[OPTIONS_KEY].flows_dir
        try:
            registry = FlowRegistry(flows_dir)
            universe = Universe.of(registry)
        except (SwarmError, OSError) as exc:
            self.error = f"the flows of {flows_dir} cannot be measured: {exc}"
            return
        self.report = build(universe, taken)
        path = self.config.rootpath / REPORT_FILE
        write_json_atomic(path, self.report)
        self.written = str(path)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The ``swarm coverage`` section: the table, and the gaps when the gate fails."""
        from swarm_runtime.coverage.report import below, judged, shown, table, uncalled, untaken

        if getattr(self.config, "workeroutput", None) is not None:
            return
        write = terminalreporter.write_line
        terminalreporter.write_sep("-", "swarm coverage")
        if self.report is None:
            write(f"swarm coverage: {self.error or 'no report'}")
            return
        for line in table(self.report):
            write(line)
        tools = uncalled(self.report)
        if tools:
            write("tools never called (not counted in the coverage):")
            for line in tools:
                write(f"  {line}")
        judges = judged(self.report)
        if judges:
            write("judges (not counted in the coverage):")
            for line in judges:
                write(f"  {line}")
        write(f"written to {self.written}")
        if self.minimum is not None and below(self.report, self.minimum):
            write(
                f"FAILED: route coverage {shown(self.report['percent'])} is below the "
                f"minimum {self.minimum:g}%; edges never taken:"
            )
            for line in untaken(self.report):
                write(f"  {line}")
            # The last line of the session says it too, rather than a green "N passed".
            terminalreporter.stats.setdefault(BELOW_STAT, []).append(self)


BELOW_STAT = "route coverage below its minimum (session failed)"
"""How the last line of a session failed by the coverage gate says so."""
COVERAGE_KEY = pytest.StashKey[SwarmCoverage]()
"""The session's coverage on ``config.stash`` (absent when coverage is off)."""


def configure(config: pytest.Config) -> None:
    """Turn coverage on when asked for (checking the minimum), as a plugin of the session."""
    on, least = minimum(config)
    if on and not (config.option.collectonly or config.option.help):
        coverage = SwarmCoverage(config, least)
        config.stash[COVERAGE_KEY] = coverage
        config.pluginmanager.register(coverage, "swarm-coverage")


def run_observer(config: pytest.Config) -> Callable[[RunRecord], None]:
    """What a ``flow_runner`` calls after each run: coverage, when it is on.

    (The session's counters hear each run as a listener: :class:`~.listeners.RunCounter`.)
    """
    coverage = config.stash.get(COVERAGE_KEY, None)
    if coverage is None:
        return lambda record: None

    def observe(record: RunRecord) -> None:
        if not record.reference:  # mode parity's stub reference is not the session's mode
            coverage.add_run(record)

    return observe
