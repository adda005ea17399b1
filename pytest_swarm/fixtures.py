"""The plugin's fixtures (SPEC §10.2). The runtime is imported inside them, on first use."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_swarm.cassettes import CALL_PASSED, SwarmCassette
from pytest_swarm.options import OPTIONS_KEY, SwarmOptions
from pytest_swarm.run_record import RunRecord
from pytest_swarm.summary import TOTALS_KEY

if TYPE_CHECKING:
    from swarm_runtime.config import Settings
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.engines.registry import EngineRegistry
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry

__all__ = [
    "STUB_ONLY",
    "FlowRunner",
    "IsolatedRunsEnv",
    "StubScenario",
    "SwarmContract",
    "SwarmEngine",
    "flow_runner",
    "flows_dir_error",
    "isolated_runs_env",
    "skip_stub_only",
    "stub_scenario",
    "swarm_cassette",
    "swarm_contract",
    "swarm_engine",
    "swarm_flows",
    "swarm_golden",
    "swarm_mode",
    "swarm_options",
]


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
        return resolve_settings(env=os.environ, mode=swarm_options.mode, cwd=pytestconfig.rootpath)
    except ConfigError as exc:
        problem = str(exc)
    pytest.fail(f"swarm: {problem}", pytrace=False)


class SwarmEngine:
    """The engine registry (with engines from ``pytest_swarm_register_engines``) and mode."""

    def __init__(self, registry: EngineRegistry, mode: str, engine_id: str = "claude-step"):
        self.registry = registry
        self.mode = mode
        self.engine_id = engine_id

    def __repr__(self) -> str:
        return f"SwarmEngine({self.engine_id!r}, mode={self.mode!r}, ids={self.registry.ids()})"


@pytest.fixture(scope="session")
def _swarm_engine_registry(pytestconfig: pytest.Config) -> EngineRegistry:
    from swarm_runtime.engines.registry import default_registry

    registry = default_registry()
    pytestconfig.hook.pytest_swarm_register_engines(registry=registry)
    return registry


@pytest.fixture
def swarm_engine(_swarm_engine_registry: EngineRegistry, swarm_mode: str) -> SwarmEngine:
    """Engines (with every ``pytest_swarm_register_engines`` hook's) and the mode.

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
    """A fresh runs dir and examples dir for one test, and a run service with no runs.

    Runs still going at the end of the test are cancelled; the environment is restored.
    """
    from swarm_runtime.service import reset_backends

    env = IsolatedRunsEnv(tmp_path / "swarm")
    env.runs_dir.mkdir(parents=True)
    env.examples_dir.mkdir()
    monkeypatch.setenv("SWARM_RUNS_DIR", str(env.runs_dir))
    reset_backends()
    yield env
    reset_backends()


class StubScenario:
    """Sets the stub scenario (SPEC §5.5) for later ``flow_runner`` calls in the test."""

    def __init__(self) -> None:
        self.scenario: Scenario | None = None
        self.strict = True
        self.ran = False

    def __call__(self, scenario: Mapping[str, Any] | str | Path, *, strict: bool = True) -> None:
        """Use ``scenario`` (a mapping or a YAML file); ``strict=False`` allows unused entries."""
        from swarm_runtime.engines.scenario import Scenario
        from swarm_runtime.errors import ScenarioError

        __tracebackhide__ = True
        problem = None
        try:
            if isinstance(scenario, str | Path):
                self.scenario = Scenario.from_file(scenario)
            else:
                self.scenario = Scenario.from_mapping(scenario, source="stub_scenario(...)")
        except ScenarioError as exc:
            problem = str(exc)
        if problem is not None:  # failed outside the except: one message, no chained twin
            pytest.fail(f"swarm: {problem}", pytrace=False)
        self.strict = strict

    def check_used(self) -> None:
        """Fail when a scripted step never ran: a scenario that tests nothing."""
        if self.scenario is not None and self.strict and self.ran:
            unused = self.scenario.unused()
            if unused:
                pytest.fail(
                    f"stub_scenario: entries never used by any run in this test: "
                    f"{', '.join(unused)}; remove them or pass strict=False",
                    pytrace=False,
                )


STUB_ONLY = "scripts the stub (stub_scenario): runs in stub mode only"
"""The start of the reason a test that scripts the stub is skipped in other modes."""


def skip_stub_only(mode: str) -> None:
    """Skip a test that scripts the stub: a recording or a live model is not scripted."""
    __tracebackhide__ = True
    pytest.skip(f"{STUB_ONLY}; the mode is {mode}")


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


class FlowRunner:
    """``flow_runner(*flow_keys, scenario=None, start_step=None, end_step=None, **params)``."""

    def __init__(
        self,
        *,
        options: SwarmOptions,
        engine: SwarmEngine,
        flows: FlowRegistry,
        runs_dir: Path,
        scenario: StubScenario,
        default_flow: str | None,
        on_run: Callable[[RunRecord], None],
        settings: Settings,
        cassette: SwarmCassette,
        nodeid: str = "",
        on_miss: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = options
        self.settings = settings
        self.engine = engine
        self.flows = flows
        self.runs_dir = runs_dir
        self.scenario = scenario
        self.default_flow = default_flow
        self.on_run = on_run
        self.nodeid = nodeid
        self.cassette = cassette
        self.on_miss = on_miss
        """Told when a replay finds its recording stale: the test is to be recorded again."""

    def __call__(
        self,
        *flow_keys: str,
        scenario: Mapping[str, Any] | str | Path | None = None,
        start_step: str | None = None,
        end_step: str | None = None,
        **params: Any,
    ) -> RunRecord:
        """Run flows (default: the ``swarm_flow`` marker's, else every flow in order)."""
        if scenario is not None:
            if self.engine.mode != "stub":
                skip_stub_only(self.engine.mode)
            self.scenario(scenario)
        return self._run(flow_keys, self.engine.mode, start_step, end_step, params)

    def stub(self, *flow_keys: str, **params: Any) -> RunRecord:
        """The same flows in stub mode, as the reference for mode parity."""
        return self._run(flow_keys, "stub", None, None, params, reference=True)

    def _run(
        self,
        flow_keys: tuple[str, ...],
        mode: str,
        start_step: str | None,
        end_step: str | None,
        params: dict[str, Any],
        *,
        reference: bool = False,
    ) -> RunRecord:
        import os

        from swarm_runtime.errors import SwarmUsageError
        from swarm_runtime.orchestrator.assembly import build_orchestrator
        from swarm_runtime.orchestrator.runner import RunSpec

        results: list[tuple[str, StepResult]] = []
        problem: str | None = None
        cassettes = None
        overrides: dict[str, Any] = {}
        if reference:  # every engine's stub, gemini-step's too (whatever SWARM_GEMINI_STUB says)
            overrides["gemini"] = {"mode": "stub"}
        replaying = False
        if mode in ("replay", "record"):
            cassettes = self.cassette.for_run(self.options.record_mode)
            overrides["cassettes"] = cassettes
            replaying = not cassettes.record
            if replaying:  # never reaches a server: the cassettes answer, or refuse
                overrides.update(api_key="replay-needs-no-key", base_url="http://127.0.0.1:9")
        try:
            default = (self.default_flow,) if self.default_flow else tuple(self.flows.order())
            keys = flow_keys or default
            orchestrator = build_orchestrator(
                self.settings,
                self.flows,
                env=os.environ,
                runs_dir=self.runs_dir,
                engines=self.engine.registry,
                engine_id=self.engine.engine_id,
                # A recorded or replayed call is an sdk call; only its HTTP differs (§3.1).
                mode="sdk" if mode in ("replay", "record") else mode,
                scenario=self.scenario.scenario,
                result_observer=lambda flow, result: results.append((flow, result)),
                engine_overrides=overrides,
                # A replayed retry is logged and counted as recorded, without the wait.
                sleep=_no_wait if replaying else None,
            )
            spec = RunSpec(
                flows=keys,
                params=params,
                initiator="pytest",
                start_step=start_step,
                end_step=end_step,
            )
            outcome = orchestrator.run(spec)
        except SwarmUsageError as exc:
            # What the test asked for is wrong (flow, slice, scenario, mode): say it plainly,
            # once (failing inside the except would print the error twice, chained).
            problem = str(exc).replace("--from ", "start_step=").replace("--to ", "end_step=")
        if problem is not None:
            __tracebackhide__ = True
            pytest.fail(f"swarm: {problem}", pytrace=False)
        self.scenario.ran = self.scenario.ran or self.scenario.scenario is not None
        record = RunRecord(outcome.path, flows=self.flows, results=results, mode=mode)
        if mode != "stub":
            _refuse_credentials_in(record.path)
        if cassettes is not None and cassettes.divergences:
            self.on_run(record)
            self.on_miss()
            __tracebackhide__ = True
            pytest.fail(
                "swarm: the replay diverged from the recording\n\n"
                + "\n\n".join(cassettes.divergences),
                pytrace=False,
            )
        self.on_run(record)
        return record


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
    from pytest_swarm.commands import node_of

    marker = request.node.get_closest_marker("swarm_flow")
    totals = request.config.stash[TOTALS_KEY]
    node, golden = node_of(request.node), "swarm_golden" in request.fixturenames
    runner = FlowRunner(
        options=swarm_options,
        engine=swarm_engine,
        flows=swarm_flows,
        runs_dir=swarm_options.runs_dir or isolated_runs_env.runs_dir,
        scenario=_swarm_stub_holder,
        default_flow=marker.args[0] if marker else None,
        on_run=lambda record: totals.add_run(record.summary),
        settings=_swarm_settings,
        cassette=swarm_cassette,
        nodeid=request.node.nodeid,
        on_miss=lambda: totals.rerecord.update({node: golden}),
    )
    yield runner
    passed = request.node.stash.get(CALL_PASSED, False)
    swarm_cassette.finish(passed=passed)
    # After a divergence the test has failed with the one message that matters.
    diverged = any(c.divergences for c in swarm_cassette.used)
    problems = [] if diverged else swarm_cassette.unplayed()
    for cassettes in swarm_cassette.used:
        totals.cassette_dirs.add(cassettes.name)  # what no test used is reported at the end
        if not cassettes.record:  # asked for and there: a call with no cassette is a miss
            there = sum(path.is_file() for path in cassettes.played)
            totals.count("cassettes_played", there)
            totals.count("cassettes_missing", len(cassettes.played) - there)
        elif passed:  # a recording a failed test made is dropped, not counted
            totals.count("cassettes_recorded", len(cassettes.played))
    totals.count("cassettes_unplayed", len(problems))
    if problems:
        totals.rerecord[node] = golden
        pytest.fail(
            "swarm: recorded calls were never played (the test no longer makes them); "
            f"re-record with: {swarm_cassette.rerecord}\n  " + "\n  ".join(problems),
            pytrace=False,
        )


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
    )


def _no_wait(_seconds: float) -> None:
    """The retry wait of a replay: the recording already holds what came after it."""


def _refuse_credentials_in(run_dir: Path) -> None:
    """Fail when a run file holds the value of a credential from the environment."""
    from swarm_runtime.credentials import credential_values, find_credentials

    secrets = credential_values()
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        found = find_credentials(path.read_text(encoding="utf-8", errors="replace"), secrets)
        if found:
            pytest.fail(
                f"swarm: {path} holds a credential's value ({', '.join(found)})", pytrace=False
            )


class SwarmContract:
    """The assertions of ``pytest_swarm.assertions`` as methods."""

    def __init__(self) -> None:
        from pytest_swarm import assertions

        self.assert_run = assertions.assert_run
        self.assert_receipt_contract = assertions.assert_receipt_contract
        self.assert_transcript_contract = assertions.assert_transcript_contract
        self.assert_event_sequence = assertions.assert_event_sequence
        self.assert_routing = assertions.assert_routing
        self.assert_teaching_notes = assertions.assert_teaching_notes
        self.assert_step_results = assertions.assert_step_results
        self.assert_mode_parity = assertions.assert_mode_parity


@pytest.fixture
def swarm_contract() -> SwarmContract:
    """``swarm_contract.assert_run(record)`` checks every contract assertion."""
    return SwarmContract()


@pytest.fixture
def swarm_golden(request: pytest.FixtureRequest, swarm_options: SwarmOptions) -> Any:
    """``swarm_golden(record, scenario)``: compare a run with its golden (syrupy)."""
    try:
        from pytest_swarm.golden import SwarmGolden
    except ImportError as exc:  # syrupy is an optional dependency
        pytest.fail(
            f"swarm_golden needs syrupy ({exc}); pip install 'swarm-stepwise[pytest]'",
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
