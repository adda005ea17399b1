"""The plugin's fixtures. The runtime is imported inside them, on first use.

See docs/pytest.md#fixtures.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_swarm.cassettes import CALL_PASSED, SwarmCassette
from pytest_swarm.coverage import run_observer
from pytest_swarm.judges import RUNNER_KEY
from pytest_swarm.listeners import PLUGINS_KEY, RunCounter
from pytest_swarm.markers import fault_plan_of
from pytest_swarm.options import OPTIONS_KEY, SwarmOptions
from pytest_swarm.runner import (
    FlowRunner,
    StubScenario,
    SwarmEngine,
    SwarmSession,
    skip_stub_only,
)
from pytest_swarm.summary import TOTALS_KEY, SwarmTotals
from swarm_runtime.install import install_command

if TYPE_CHECKING:
    from pytest_swarm.expect import Expectations
    from pytest_swarm.judges import SwarmJudge
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.config import Settings
    from swarm_runtime.engines.registry import EngineRegistry
    from swarm_runtime.flow.registry import FlowRegistry


@pytest.fixture(scope="session")
def swarm_options(pytestconfig: pytest.Config) -> SwarmOptions:
    """The resolved ``--swarm-*`` options."""
    return pytestconfig.stash[OPTIONS_KEY]


@pytest.fixture(scope="session")
def swarm_mode(swarm_options: SwarmOptions) -> str:
    """The active mode: stub, replay, record, sdk or cli."""
    return swarm_options.mode


def flows_dir_error(options: SwarmOptions) -> str | None:
    """Why the flows dir cannot be used, naming the settings that choose it; or None."""
    if options.flows_dir.is_dir():
        return None
    return (
        f"swarm: flows dir {options.flows_dir} (from {options.sources['flows_dir']}) does not "
        "exist; set --swarm-flows-dir, SWARM_FLOWS_DIR or the swarm_flows_dir ini key"
    )


@pytest.fixture(scope="session")
def swarm_flows(swarm_options: SwarmOptions) -> FlowRegistry:
    """The flows of ``--swarm-flows-dir``, validated on first use."""
    from swarm_runtime.flow.registry import FlowRegistry

    problem = flows_dir_error(swarm_options)
    if problem:
        pytest.fail(problem, pytrace=False)
    return FlowRegistry(swarm_options.flows_dir)


@pytest.fixture(scope="session")
def _swarm_settings(pytestconfig: pytest.Config, swarm_options: SwarmOptions) -> Settings:
    """The project's ``runtime.yaml`` (at pytest's rootdir) and environment, resolved.

    They are resolved as ``swarm run`` resolves them, so a flow runs the same under both.
    """
    import os

    from swarm_runtime.config import resolve_settings
    from swarm_runtime.errors import ConfigError

    try:
        return resolve_settings(
            env=os.environ,
            mode=swarm_options.mode,
            cwd=pytestconfig.rootpath,
            navigator=swarm_options.navigator,
        )
    except ConfigError as exc:
        problem = str(exc)
    pytest.fail(f"swarm: {problem}", pytrace=False)


@pytest.fixture(scope="session")
def _swarm_engine_registry(pytestconfig: pytest.Config) -> EngineRegistry:
    from swarm_runtime.plugins import engine_registry

    pytestconfig.stash[PLUGINS_KEY].attach()
    registry = engine_registry()  # with every swarm_register_engines, conftest.py's too
    old = pytestconfig.hook.pytest_swarm_register_engines
    for impl in old.get_hookimpls():
        warnings.warn(
            f"pytest_swarm_register_engines (in {impl.plugin_name}) is deprecated and called "
            "for one more release: name the function swarm_register_engines(registry) - "
            "the same function, which swarm run and the workers call too when it is in a "
            "module of the 'swarm_runtime' entry point group",
            DeprecationWarning,
            stacklevel=1,
        )
    old(registry=registry)
    return registry


@pytest.fixture
def swarm_engine(_swarm_engine_registry: EngineRegistry, swarm_mode: str) -> SwarmEngine:
    """Engines (with every plugin's ``swarm_register_engines``) and the mode.

    Per test: setting ``swarm_engine.engine_id`` picks the engine of this test's runs only.
    """
    return SwarmEngine(_swarm_engine_registry, swarm_mode)


class IsolatedRunsEnv:
    """Temporary runs and examples directories, with ``SWARM_RUNS_DIR`` pointing at them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs_dir = root / "runs"
        self.examples_dir = root / "examples"


@pytest.fixture
def isolated_runs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[IsolatedRunsEnv]:
    """A fresh runs dir (``SWARM_RUNS_DIR``), a scratch ``examples_dir`` and an idle run service.

    ``examples_dir`` is an empty directory beside the runs dir for the test's own files (the
    runtime reads nothing there). Runs still going at the end of the test are cancelled;
    the environment is restored.
    """
    from swarm_runtime.service import reset_backends

    env = IsolatedRunsEnv(tmp_path / "swarm")
    env.runs_dir.mkdir(parents=True)
    env.examples_dir.mkdir()
    monkeypatch.setenv("SWARM_RUNS_DIR", str(env.runs_dir))
    reset_backends()
    yield env
    reset_backends()


@pytest.fixture
def _swarm_stub_holder() -> Iterator[StubScenario]:
    holder = StubScenario()
    yield holder
    holder.check_used()


@pytest.fixture
def stub_scenario(_swarm_stub_holder: StubScenario, swarm_mode: str) -> StubScenario:
    """``stub_scenario(mapping_or_path)`` scripts the stub for this test's runs.

    A test that asks for it is stub-only by nature: in the other modes it is skipped at
    setup, with the reason, and counted in the summary.
    """
    if swarm_mode != "stub":
        skip_stub_only(swarm_mode)
    return _swarm_stub_holder


@pytest.fixture
def flow_runner(
    request: pytest.FixtureRequest,
    swarm_options: SwarmOptions,
    swarm_engine: SwarmEngine,
    swarm_flows: FlowRegistry,
    isolated_runs_env: IsolatedRunsEnv,
    _swarm_stub_holder: StubScenario,
    _swarm_settings: Settings,
    swarm_cassette: SwarmCassette,
) -> Iterator[FlowRunner]:
    """Run flows in the current mode and get a :class:`RunRecord` back."""
    from pytest_swarm.budgets import marker_budget
    from pytest_swarm.commands import node_of

    marker = request.node.get_closest_marker("swarm_flow")
    totals = request.config.stash[TOTALS_KEY]
    node, golden = node_of(request.node), "swarm_golden" in request.fixturenames
    request.config.stash[PLUGINS_KEY].attach()
    runner = FlowRunner(
        session=SwarmSession(
            swarm_options,
            _swarm_settings,
            swarm_engine,
            swarm_flows,
            listeners=(RunCounter(totals),),
        ),
        runs_dir=swarm_options.runs_dir or isolated_runs_env.runs_dir,
        scenario=_swarm_stub_holder,
        default_flow=marker.args[0] if marker else None,
        on_run=run_observer(request.config),
        cassette=swarm_cassette,
        nodeid=request.node.nodeid,
        on_miss=lambda: totals.rerecord.update({node: golden}),
    )
    runner.faults = fault_plan_of(request.node)  # checked at collection: it parses
    runner.budget, runner.on_call = marker_budget(request.node), totals.add_call
    request.node.stash[RUNNER_KEY] = runner  # its runs' judges: held at the end of the call
    yield runner
    passed = request.node.stash.get(CALL_PASSED, False)
    swarm_cassette.finish(passed=passed)
    # After a divergence the test has failed with the one message that matters.
    diverged = any(c.divergences for c in swarm_cassette.used)
    problems = [] if diverged else swarm_cassette.unplayed()
    _count_cassettes(totals, swarm_cassette, passed=passed)
    totals.count("cassettes_unplayed", len(problems))
    if problems:
        totals.rerecord[node] = golden
        pytest.fail(
            "swarm: recorded calls were never played (the test no longer makes them); "
            f"re-record with: {swarm_cassette.rerecord}\n  " + "\n  ".join(problems),
            pytrace=False,
        )


def _count_cassettes(totals: SwarmTotals, swarm_cassette: SwarmCassette, *, passed: bool) -> None:
    """Add what the test's cassettes played, recorded, missed and diverged from."""
    for cassettes in swarm_cassette.used:
        totals.cassette_dirs.add(cassettes.name)  # what no test used is reported at the end
        if not cassettes.record:  # asked for and there: a call with no cassette is a miss
            there = sum(path.is_file() for path in cassettes.played)
            unlike = len(cassettes.divergences) - cassettes.missing  # there, but unlike it
            totals.count("cassettes_played", there - unlike)
            totals.count("cassettes_diverged", unlike)
            totals.count("cassettes_missing", len(cassettes.played) - there)
        elif passed:  # a recording a failed test made is dropped, not counted
            totals.count("cassettes_played", len(cassettes.replayed))  # new episodes
            totals.count("cassettes_recorded", len(cassettes.played - cassettes.replayed))


@pytest.fixture
def swarm_cassette(request: pytest.FixtureRequest, swarm_options: SwarmOptions) -> SwarmCassette:
    """The test's cassette directory; ``swarm_cassette.use("name")`` names another."""
    from pytest_swarm.commands import pytest_command

    marker = request.node.get_closest_marker("swarm_cassette")
    return SwarmCassette(
        swarm_options.cassette_dir,
        request.node.nodeid,
        name=marker.args[0] if marker and marker.args else None,
        # A new recording makes a new golden: a test that compares one updates it too.
        rerecord=pytest_command(
            request.node, mode="record", update_goldens="swarm_golden" in request.fixturenames
        ),
        mode=swarm_options.mode,
    )


class SwarmContract:
    """The assertions of ``pytest_swarm.assertions`` as methods."""

    def __init__(self) -> None:
        from pytest_swarm import assertions

        self.assert_run = assertions.assert_run
        self.assert_receipt_contract = assertions.assert_receipt_contract
        self.assert_transcript_contract = assertions.assert_transcript_contract
        self.assert_event_sequence = assertions.assert_event_sequence
        self.assert_tool_calls = assertions.assert_tool_calls
        self.assert_routing = assertions.assert_routing
        self.assert_teaching_notes = assertions.assert_teaching_notes
        self.assert_step_results = assertions.assert_step_results
        self.assert_mode_parity = assertions.assert_mode_parity


@pytest.fixture
def swarm_contract() -> SwarmContract:
    """``swarm_contract.assert_run(record)`` checks every contract assertion."""
    return SwarmContract()


@pytest.fixture
def swarm_expect() -> Callable[[RunRecord], Expectations]:
    """``swarm_expect(record).step("review").contains("refund")``: checks on what steps said."""
    from pytest_swarm.expect import swarm_expect

    return swarm_expect


@pytest.fixture
def swarm_judge(flow_runner: FlowRunner) -> SwarmJudge:
    """``swarm_judge(record, step=…, rubric=…, threshold=0.7)``: a model grades a step's reply."""
    from pytest_swarm.judges import SwarmJudge

    return SwarmJudge(flow_runner)


@pytest.fixture
def swarm_golden(request: pytest.FixtureRequest, swarm_options: SwarmOptions) -> Any:
    """``swarm_golden(record, scenario)``: compare a run with its golden (syrupy)."""
    try:
        from pytest_swarm.golden import SwarmGolden
    except ImportError as exc:  # syrupy is an optional dependency
        pytest.fail(
            f"swarm_golden needs syrupy ({exc}); {install_command('pytest')}",
            pytrace=False,
        )
    from pytest_swarm.commands import pytest_command

    snapshot = request.getfixturevalue("snapshot")
    totals = request.config.stash[TOTALS_KEY]
    return SwarmGolden(
        snapshot,
        swarm_options.golden_dir,
        request.config.hook,
        mode=swarm_options.mode,
        count=totals.count,
        update_command=pytest_command(request.node, mode=swarm_options.mode, update_goldens=True),
    )
