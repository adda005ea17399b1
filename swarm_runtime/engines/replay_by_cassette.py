"""A replay that runs each step the way its cassette was recorded: SDK or CLI.

A cassette's first line, ``recorded_via: cli``, names the CLI; any other cassette (or
none) is replayed through the SDK. Both ways serve a fault plan's HTTP kinds: the SDK's
transport (:mod:`.fault_http`) or the CLI's loopback server (:mod:`.fault_loopback`).
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.cli_match import recorded_via
from swarm_runtime.engines.faults import HTTP_KINDS


class ReplayByCassette(StepEngine):
    """Replays each step the way its cassette was recorded: through the SDK or the CLI."""

    mode = "sdk"
    fault_kinds = HTTP_KINDS  # through the SDK's transport, or the CLI's loopback server

    def __init__(self, cassettes: Cassettes, sdk: Any, cli: Any) -> None:
        self.cassettes = cassettes
        self._factories = {"sdk": sdk, "cli": cli}
        self._engines: dict[str, StepEngine] = {}
        self.engine_id = "claude-step"
        self.engine_short = "claude"

    def _engine(self, ctx: StepContext) -> StepEngine:
        via = recorded_via(self.cassettes.path(ctx))
        engine = self._engines.get(via)
        if engine is None:
            engine = self._engines[via] = self._factories[via]()
        return engine

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """The step, by the engine its cassette names."""
        return self._engine(ctx).run_step(ctx)

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The request of the engine the step's cassette names."""
        return self._engine(ctx).request_body(ctx)

    def close(self) -> None:
        """Close the engines that ran."""
        engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.close()
