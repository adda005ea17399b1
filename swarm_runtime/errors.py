"""The error tree of the runtime.

::

    SwarmError                      root: catch this to catch everything we raise
    ├── SwarmUsageError             what a user wrote is wrong (exit code 2)
    │   ├── FlowDefinitionError     a flow file breaks a rule (docs/flows.md#loading-and-validation)
    │   ├── ScenarioError           a stub scenario or fault plan names an unknown step, key or kind
    │   ├── ConfigError             a setting (flag, env var, runtime.yaml) is invalid
    │   ├── PlanError               an execution plan breaks a rule (docs/plans.md)
    │   └── RunControlError         a run cannot be resumed, paused or stopped as asked
    └── SwarmRunError               something went wrong while running (exit code 1)
        ├── EngineError             an engine failed outside the step contract
        │   └── HandoffError        a reply's handoff block is not a mapping (also ValueError)
        ├── FailFast                a plan step that stores data failed: stop at once (exit 3)
        ├── ReplayDivergence        a replayed call has no matching recording
        ├── RoutingError            routing could not decide where to go
        └── StorageError            a run directory could not be written or read
            └── CredentialLeak      a file was about to hold a credential's value

Messages say what was received, what is allowed and what to do next.
"""

from __future__ import annotations


class SwarmError(Exception):
    """Root of every error the runtime raises on purpose."""


class SwarmUsageError(SwarmError):
    """Something a user wrote (a flow, a scenario, a flag, a config file) is wrong."""


class SwarmRunError(SwarmError):
    """A run could not proceed: engine, routing or storage trouble."""


class FlowDefinitionError(SwarmUsageError):
    """A flow file is invalid; carries where (file, line, step, field) and why."""

    def __init__(
        self,
        message: str,
        *,
        file: str,
        line: int | None = None,
        step_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.step_id = step_id
        self.field = field
        self.reason = message
        super().__init__(self.location() + ": " + message)

    def location(self) -> str:
        """``file:line`` followed by the step and field when known."""
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [where]
        if self.step_id is not None:
            parts.append(f"step '{self.step_id}'")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)


class ScenarioError(SwarmUsageError):
    """A stub scenario or a fault plan is malformed or names something that does not exist."""


class ConfigError(SwarmUsageError):
    """A configuration value is invalid; the message names where it came from."""


class PlanError(SwarmUsageError):
    """An execution plan is unreadable or breaks a v1 rule; carries the rule and the step."""

    def __init__(self, message: str, *, rule: str, step_id: str | None = None) -> None:
        self.rule = rule
        self.step_id = step_id
        super().__init__(message)


class RunControlError(SwarmUsageError):
    """A run cannot be resumed, paused or stopped as asked (it ended, or runs elsewhere)."""


class EngineError(SwarmRunError):
    """An engine could not be found, built or run."""


class RoutingError(SwarmRunError):
    """Routing found no step to go to."""


class StorageError(SwarmRunError):
    """A run directory is unsafe, unreadable or could not be written."""


class HandoffError(EngineError, ValueError):
    """The handoff block of a reply is present but is not a mapping of YAML or JSON."""


class FailFast(SwarmRunError):
    """A plan step whose failure could leave stored data half-written: the runtime stops.

    The executor records the failure in the cycle's run and raises this again; it never
    swallows it. ``swarm plan run`` exits with code 3.
    """

    def __init__(self, message: str, *, step_id: str, step_type: str, run_id: str | None) -> None:
        self.step_id = step_id
        self.step_type = step_type
        self.run_id = run_id
        super().__init__(message)


class ReplayDivergence(SwarmRunError):
    """A replayed call has no matching recording (the flow or its prompts changed)."""


class CredentialLeak(StorageError):
    """A file was about to hold the value of a credential; nothing was written."""
