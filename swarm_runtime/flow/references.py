"""Rules that look across the flows of a directory: where each detour goes.

A detour names another flow (``flow: KEY``) or one step of one (``step: FLOW/STEP``); the
flow may live in any file of the directory, so this is checked once every file is read,
by :meth:`swarm_runtime.flow.registry.FlowRegistry.problems` (what ``swarm flows validate``
prints and ``swarm run`` refuses). A detour into a file that does not load is not reported
here: that file's own errors are.

See docs/flows.md#detours-and-utility-flows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.spec import Detour, FlowSpec, StepSpec


def reference_errors(
    read: Mapping[str, FlowSpec],
    flows: Mapping[str, FlowSpec],
    keys: Sequence[str],
    flows_dir: Path,
) -> list[FlowDefinitionError]:
    """Every detour of ``read`` that names no flow, or no step of one of ``flows``.

    ``read``: every flow as far as its file reads (also one with errors); ``flows``: those
    that load; ``keys``: every flow file of ``flows_dir``.
    """
    errors: list[FlowDefinitionError] = []
    for flow in sorted(read.values(), key=lambda f: f.key):
        for step in flow.steps:
            for detour in step.detours:
                why = _missing(detour, flows, keys, flows_dir)
                if why is not None:
                    errors.append(_error(flow, step, detour, why))
    return errors


def _missing(
    detour: Detour, flows: Mapping[str, FlowSpec], keys: Sequence[str], flows_dir: Path
) -> str | None:
    """Why ``detour`` goes nowhere, or None."""
    if detour.flow not in keys:
        return (
            f"no flow '{detour.flow}' in {flows_dir} (flows: {', '.join(keys) or 'none'})"
            f"{_close(detour.flow, keys)}"
        )
    target = flows.get(detour.flow)
    if target is None or detour.step is None or target.has_step(detour.step):
        return None
    steps = [s.id for s in target.steps]
    return (
        f"flow '{target.key}' has no step '{detour.step}' (steps: {', '.join(steps)})"
        f"{_close(detour.step, steps)}"
    )


def _error(flow: FlowSpec, step: StepSpec, detour: Detour, why: str) -> FlowDefinitionError:
    field = f"detours.{detour.id}.{'flow' if detour.step is None else 'step'}"
    return FlowDefinitionError(
        f"detour '{detour.id}': {why}",
        file=str(flow.path),
        line=step.line_of(field),
        step_id=step.id,
        field=field,
    )


def _close(word: str, allowed: Sequence[str]) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(word, allowed, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""
