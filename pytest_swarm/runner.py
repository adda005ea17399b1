"""The objects behind the plugin's fixtures.

The engine choice, the stub scenario, what the session sets up once, and the flow runner
that runs flows in the current mode and hands back a :class:`RunRecord`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_swarm.cassettes import SwarmCassette
from pytest_swarm.options import SwarmOptions
from pytest_swarm.run_record import RunRecord
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from pytest_swarm.listeners import StepResults
    from swarm_runtime.config import Settings
    from swarm_runtime.engines.base import StepContext, StepOutcome
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.faults import FaultPlan
    from swarm_runtime.engines.registry import EngineRegistry
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.flow.spec import Budget
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps
    from swarm_runtime.orchestrator.run import Orchestrator


class SwarmEngine:
    """The engine registry (with every plugin's ``swarm_register_engines``) and mode."""

    def __init__(self, registry: EngineRegistry, mode: str, engine_id: str = "claude-step"):
        self.registry = registry
        self.mode = mode
        self.engine_id = engine_id

    def __repr__(self) -> str:
        return f"SwarmEngine({self.engine_id!r}, mode={self.mode!r}, ids={self.registry.ids()})"


class StubScenario:
    """Sets the stub scenario for later ``flow_runner`` calls in the test.

    See docs/engines.md#stub-scenarios.
    """

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


class SwarmSession(Record):
    """What the session sets up once for every ``flow_runner``: options, engines, flows."""

    options: SwarmOptions
    settings: Settings
    """``runtime.yaml`` and the environment, resolved as ``swarm run`` resolves them."""
    engine: SwarmEngine
    flows: FlowRegistry
    listeners: tuple[object, ...] = ()
    """Listeners of every run (the session's counters), beside the process's plugins."""


class FlowRunner:
    """``flow_runner(*flow_keys, scenario=None, start_step=None, end_step=None, **params)``."""

    def __init__(
        self,
        *,
        session: SwarmSession,
        runs_dir: Path,
        scenario: StubScenario,
        default_flow: str | None,
        on_run: Callable[[RunRecord], None],
        cassette: SwarmCassette,
        nodeid: str = "",
        on_miss: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = session.options
        self.settings = session.settings
        self.engine = session.engine
        self.flows = session.flows
        self.listeners = session.listeners
        self.runs_dir = runs_dir
        self.scenario = scenario
        self.default_flow = default_flow
        self.on_run = on_run
        self.nodeid = nodeid
        self.cassette = cassette
        self.on_miss = on_miss
        """Told when a replay finds its recording stale: the test is to be recorded again."""
        self.faults: FaultPlan | None = None
        """The ``swarm_faults`` marker's plan, for every run but the stub reference run."""
        self.budget: Budget | None = None
        """The run budget of every run (``@pytest.mark.swarm_budget``), over runtime.yaml's."""
        self.records: list[RunRecord] = []
        """The test's runs, in order (their flow judges are held at the end of its call)."""
        self.verdicts: list[Any] = []
        """What the test's own judges (``swarm_judge``) gave, in order."""
        self.expectations: list[tuple[str, bool]] = []
        """Each ``swarm_expect`` check of the test's runs and whether it held, in order."""
        self._cassettes: dict[str, Cassettes] = {}
        """The cassettes of each recorded or replayed run, by run id: its judges' calls too."""
        self.on_call: Callable[[int, float | None], None] = lambda _tokens, _cost: None
        """Told the tokens and cost of a call made outside a run (a test's judge)."""
        self.repo_root = Path.cwd()

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
        from pytest_swarm.listeners import StepResults
        from swarm_runtime.errors import SwarmUsageError
        from swarm_runtime.orchestrator.plan import RunSpec

        results = StepResults()
        problem: str | None = None
        deps, engine, cassettes = self._engine(mode, results, reference=reference, cassettes=None)
        try:
            default = (self.default_flow,) if self.default_flow else tuple(self.flows.order())
            keys = flow_keys or default
            orchestrator = self._orchestrator(deps, engine)
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
            problem = "\n".join([str(exc), *getattr(exc, "__notes__", ())])
            problem = problem.replace("--from ", "start_step=").replace("--to ", "end_step=")
        if problem is not None:
            __tracebackhide__ = True
            pytest.fail(f"swarm: {problem}", pytrace=False)
        self.scenario.ran = self.scenario.ran or self.scenario.scenario is not None
        record = RunRecord(outcome.path, flows=self.flows, results=results.results, mode=mode)
        record.reference = reference
        record.budget_use = outcome.budget_use
        if cassettes is not None:
            self._cassettes[record.run_id] = cassettes
        if not reference:
            self.records.append(record)
            record.expectations = self.expectations
        if mode != "stub":
            _refuse_credentials_in(record.path)
        if cassettes is not None and cassettes.divergences:
            self.on_run(record)
            self.on_miss()
            __tracebackhide__ = True
            headline = (
                f"swarm: {self.nodeid or 'this run'} has no recording to replay"
                if cassettes.missing == len(cassettes.divergences)
                else "swarm: the replay diverged from the recording"
            )
            pytest.fail(headline + "\n\n" + "\n\n".join(cassettes.divergences), pytrace=False)
        self.on_run(record)
        return record

    def _orchestrator(self, deps: RunDeps, engine: EngineChoice) -> Orchestrator:
        """The orchestrator of one run: runtime.yaml's settings, the test's run budget."""
        from swarm_runtime.orchestrator.assembly import build_orchestrator
        from swarm_runtime.orchestrator.plan import RunLimits

        return build_orchestrator(
            self.settings,
            self.flows,
            env=os.environ,
            runs_dir=self.runs_dir,
            deps=deps,
            engine=engine,
            limits=RunLimits(budget=self.budget),
        )

    def call_engine(
        self, record: RunRecord, engine_id: str, ctx: StepContext
    ) -> tuple[StepOutcome, Cassettes | None, int]:
        """One call outside a run (a test's judge), in the mode and cassettes of ``record``.

        Returns the answer, the cassettes it went through and how many divergences they
        had before it.
        """
        from pytest_swarm.listeners import StepResults

        __tracebackhide__ = True
        cassettes = self._cassettes.get(record.run_id)
        before = len(cassettes.divergences) if cassettes is not None else 0
        deps, choice, _ = self._engine(
            record.mode, StepResults(), reference=False, cassettes=cassettes
        )
        from swarm_runtime.errors import SwarmError

        engines = self._orchestrator(deps, choice).engines
        try:
            try:
                engine = engines.engine(engine_id)
            except SwarmError as exc:
                raise ValueError(f"engine {engine_id!r}: {exc}") from None
            return engine.run_step(ctx), cassettes, before
        finally:
            engines.close()

    def count_call(self, tokens: int, cost_usd: float | None) -> None:
        """Count a call made outside a run in the session's totals."""
        self.on_call(tokens, cost_usd)

    def _engine(
        self, mode: str, results: StepResults, *, reference: bool, cassettes: Cassettes | None
    ) -> tuple[RunDeps, EngineChoice, Cassettes | None]:
        """The mode, resolved: the engine choice, what the run is handed, the cassettes.

        ``cassettes``: those of an earlier run (a call made for it), else the next run's.
        """
        from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, no_wait
        from swarm_runtime.plugins import process_plugins
        from swarm_runtime.timeutil import interruptible_sleep

        # The reference run: every engine's stub, gemini-step's too (whatever
        # SWARM_GEMINI_STUB says).
        given: dict[str, Any] = {"gemini": {"mode": "stub"}} if reference else {}
        if cassettes is None and mode in ("replay", "record"):
            cassettes = self.cassette.for_run(self.options.record_mode)
        engine = EngineChoice(
            engine_id=self.engine.engine_id,
            mode=mode,
            cassettes=cassettes,
            scenario=self.scenario.scenario,
            given=given,
        )
        if self.faults is not None and not reference:
            from swarm_runtime.record import replace

            engine = replace(engine, faults=self.faults)
        deps = RunDeps(
            engines=self.engine.registry,
            # The run's listeners: the process's plugins (conftest.py's among them), the
            # session's counters and this run's results, side by side.
            plugins=process_plugins().with_listeners(*self.listeners, results),
            # A replayed retry is logged and counted as recorded, without the wait.
            sleep=no_wait if engine.replays else interruptible_sleep,
        )
        return deps, engine, cassettes


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
