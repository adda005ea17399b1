"""The flows and golden runs the studio knows, and the compare page's diff.

Flow definitions come from the studio's flows dir (``--flows-dir``), read with the same
loader as ``swarm run``; a flow that does not load is listed with its error. Golden runs
come from the golden dir (``--golden-dir``, by default ``./golden`` when there is one) and
are named ``golden:<name>``. :meth:`FlowCatalog.compare` gives what ``swarm golden diff``
prints, as data: the steps a change touches and a unified diff per file.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from swarm_runtime.flow.spec import FlowSpec
from swarm_runtime.studio.files import GOLDEN_NAME_RE, NotFound, RunFiles
from swarm_runtime.studio.graph import flow_graph


class FlowCatalog:
    """Flow definitions and golden runs, read on demand and kept while unchanged."""

    def __init__(self, flows_dir: Path | None, golden_dir: Path | None) -> None:
        self.flows_dir = flows_dir
        self.golden_dir = golden_dir
        self._lock = threading.Lock()

    def _registry(self) -> Any:
        from swarm_runtime.flow.registry import FlowRegistry

        if self.flows_dir is None or not self.flows_dir.is_dir():
            return None
        return FlowRegistry(self.flows_dir)

    def definition(self, key: str) -> FlowSpec | None:
        """The flow ``key`` as defined in the flows dir, or None when it is not there."""
        from swarm_runtime.errors import SwarmError

        registry = self._registry()
        if registry is None:
            return None
        known: list[str] = registry.keys()
        if key not in known:
            return None
        try:
            flow: FlowSpec = registry.get(key)
        except SwarmError:
            return None
        return flow

    def listing(self) -> dict[str, Any]:
        """Every flow of the flows dir in run order: key, title, steps, or its error.

        A utility flow is marked ``utility: true``.
        """
        from swarm_runtime.errors import SwarmError

        registry = self._registry()
        if registry is None:
            return {"flows_dir": str(self.flows_dir), "flows": [], "default": []}
        try:
            order = list(registry.order())
        except SwarmError:
            order = []
        flows = []
        for key in [*order, *sorted(set(registry.keys()) - set(order))]:
            try:
                flow = registry.get(key)
            except SwarmError as exc:
                flows.append({"key": key, "error": str(exc)})
                continue
            entry = {"key": key, "title": flow.title, "steps": len(flow.steps)}
            # A utility flow is only ever injected: the page does not offer it to start.
            flows.append({**entry, "utility": True} if flow.utility else entry)
        return {"flows_dir": str(self.flows_dir), "flows": flows, "default": order}

    def graph(self, key: str) -> dict[str, Any]:
        """The graph of flow ``key``; NotFound when the flows dir has no such valid flow."""
        flow = self.definition(key)
        if flow is None:
            raise NotFound(f"no valid flow {key!r} in {self.flows_dir}")
        return flow_graph(flow)

    # -- golden runs -------------------------------------------------------------------------

    def golden_names(self) -> list[str]:
        """The golden runs of the golden dir (directories holding an ``events.jsonl``)."""
        if self.golden_dir is None or not self.golden_dir.is_dir():
            return []
        names = []
        for entry in os.scandir(self.golden_dir):
            if (
                GOLDEN_NAME_RE.fullmatch(entry.name)
                and entry.is_dir(follow_symlinks=False)
                and os.path.isfile(os.path.join(entry.path, "events.jsonl"))
            ):
                names.append(entry.name)
        return sorted(names)

    def _side(self, files: RunFiles, ref: str) -> Path:
        files.golden_dir = self.golden_dir
        return files.run_dir(ref)

    def compare(self, files: RunFiles, old: str, new: str) -> dict[str, Any]:
        """Two runs (or ``golden:<name>`` and a run) compared as ``swarm golden diff`` does."""
        from swarm_runtime.golden import diff_runs, golden_files, markdown_report

        old_dir, new_dir = self._side(files, old), self._side(files, new)
        with self._lock:
            try:
                changes = diff_runs(golden_files(old_dir), golden_files(new_dir))
            except ValueError as exc:
                raise NotFound(f"cannot read a run file: {exc}") from None
        steps: dict[str, list[dict[str, str]]] = {}
        for change in changes:
            for step in change.steps:
                steps.setdefault(step, []).append({"path": change.path, "change": change.change})
        return {
            "old": old,
            "new": new,
            "changes": [
                {"path": c.path, "change": c.change, "steps": list(c.steps), "diff": list(c.diff)}
                for c in changes
            ],
            "steps": [
                {"flow": s.partition("/")[0] if s != "-" else "(run)", "step": s.partition("/")[2]}
                | {"files": items}
                for s, items in sorted(steps.items())
            ],
            "markdown": markdown_report(changes, old_label=old, new_label=new),
        }
