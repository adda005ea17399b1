"""A directory of flows: ``<key>.yaml`` files plus an optional ``flows.yaml`` order file.

Flows that loaded cleanly before are taken from the flow cache
(:mod:`swarm_runtime.flow.cache`) when their bytes are unchanged; the YAML library and the
loader are imported only when a file has to be read as YAML.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from swarm_runtime.errors import FlowDefinitionError, SwarmUsageError
from swarm_runtime.flow.cache import FlowCache
from swarm_runtime.flow.spec import FlowSpec
from swarm_runtime.ids import AGENT_KEY_RE
from swarm_runtime.inputs.files import decode_utf8, read_bytes_limited, read_text_limited
from swarm_runtime.inputs.limits import MAX_INPUT_BYTES, InputRefused

if TYPE_CHECKING:
    import yaml  # only for annotations: the YAML library is imported when a file is read

ORDER_FILE = "flows.yaml"


def packaged_flows_dir() -> Path | None:
    """The flows shipped with the package (installed wheel or source checkout), if any."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_data" / "flows", here.parent / "flows"):
        if (candidate / ORDER_FILE).is_file():
            return candidate
    return None


def default_flows_dir(explicit: Path | None) -> Path:
    """``--flows-dir``, else ``SWARM_FLOWS_DIR``, else ``./flows``, else the packaged flows."""
    if explicit is not None:
        return explicit
    if os.environ.get("SWARM_FLOWS_DIR"):
        return Path(os.environ["SWARM_FLOWS_DIR"])
    local = Path("flows")
    if local.is_dir():
        return local
    packaged = packaged_flows_dir()
    if packaged is None:
        raise SwarmUsageError(
            "no ./flows directory here; pass --flows-dir DIR or set SWARM_FLOWS_DIR"
        )
    return packaged


class FlowRegistry:
    """The flows of one directory, validated when first read.

    ``cache`` keeps validated flows across processes (default: the user's flow cache,
    :meth:`FlowCache.default`; ``FlowCache(None)`` keeps nothing).
    """

    def __init__(self, flows_dir: Path | str, *, cache: FlowCache | None = None) -> None:
        self.cache = cache if cache is not None else FlowCache.default()
        self.flows_dir = Path(flows_dir)
        if not self.flows_dir.is_dir():
            raise SwarmUsageError(
                f"flows dir {self.flows_dir} does not exist or is not a directory; "
                "pass --flows-dir DIR or set SWARM_FLOWS_DIR"
            )
        self._paths = {
            path.stem: path
            for path in sorted(self.flows_dir.glob("*.yaml"))
            if path.name != ORDER_FILE
        }
        self._flows: dict[str, FlowSpec] = {}
        self._utilities: list[FlowSpec] | None = None
        self._resolved: Path | None = None
        self._errors: dict[str, list[FlowDefinitionError]] = {}
        self._problems: list[FlowDefinitionError] | None = None
        self._partial: dict[str, FlowSpec] = {}
        self._personas: dict[str, str | None] = {}
        self.system_prompts: dict[tuple[str, str], str] = {}
        """Each step's system prompt, made from these flows and
        personas (which the registry reads once): runs of the same flows share them."""

    @property
    def resolved_dir(self) -> Path:
        """The flows dir as an absolute, resolved path (worked out once)."""
        if self._resolved is None:
            self._resolved = self.flows_dir.resolve()
        return self._resolved

    def keys(self) -> list[str]:
        """Every flow key in the directory, sorted."""
        return sorted(self._paths)

    def utilities(self) -> list[FlowSpec]:
        """The utility flows with an ``injection_trigger``, by key.

        A flow file that does not load is left out here (``swarm flows validate`` names
        its errors): it cannot be injected.

        See docs/flows.md#detours-and-utility-flows.
        """
        if self._utilities is None:
            self._utilities = [
                flow
                for flow in (self._loaded(key) for key in self.keys())
                if flow is not None and flow.utility and flow.injection_trigger
            ]
        return self._utilities

    def utility_flows(self) -> list[FlowSpec]:
        """Every utility flow of the directory (``utility: true``), by key."""
        return [f for key in self.keys() if (f := self._loaded(key)) is not None and f.utility]

    def _loaded(self, key: str) -> FlowSpec | None:
        try:
            return self.get(key)
        except (FlowDefinitionError, SwarmUsageError):
            return None

    def order(self) -> list[str]:
        """The run order: ``flows.yaml``'s ``order`` list, else every flow sorted by key.

        Utility flows are never in the order (they are injected): without an order file
        they are left out, and an order file that names one is an error.
        """
        order_path = self.flows_dir / ORDER_FILE
        if not order_path.is_file():
            return [key for key in self.keys() if not _is_utility(self._loaded(key))]
        raw = self._raw(order_path)
        keys = self.keys()
        if raw is not None:
            cached = self.cache.order(order_path, raw, keys)
            if cached is not None:
                return cached
        errors: list[FlowDefinitionError] = []
        order = self._read_order(order_path, errors, raw)
        if errors:  # with every other error of the directory: one does not hide the next
            self.check()
            raise errors[0]
        if raw is not None:
            self.cache.keep_order(order_path, raw, keys, order)
        return order

    def _raw(self, path: Path) -> bytes | None:
        """The bytes of a file the cache is asked about; None to read it the slow way."""
        if self.cache.directory is None:
            return None
        try:
            return read_bytes_limited(path, MAX_INPUT_BYTES)
        except (InputRefused, OSError):
            return None  # the slow way reports it

    def _read_order(
        self, path: Path, errors: list[FlowDefinitionError], raw: bytes | None = None
    ) -> list[str]:
        """The keys of the order file's ``order`` list; every error found goes to ``errors``."""
        import yaml

        root = self._order_root(path, errors, raw)
        if root is None:
            return []
        order: list[str] = []
        for key_node, value_node in root.value:
            line = key_node.start_mark.line + 1
            if key_node.value != "order":
                errors.append(
                    FlowDefinitionError(
                        f"unknown key '{key_node.value}' (allowed: order)",
                        file=str(path),
                        line=line,
                        field=str(key_node.value),
                    )
                )
                continue
            if not isinstance(value_node, yaml.SequenceNode) or not value_node.value:
                errors.append(
                    FlowDefinitionError(
                        "'order' must be a non-empty list of flow keys",
                        file=str(path),
                        line=line,
                        field="order",
                    )
                )
                continue
            order.extend(self._order_keys(path, value_node, errors))
        return order

    def _order_root(
        self, path: Path, errors: list[FlowDefinitionError], raw: bytes | None
    ) -> yaml.MappingNode | None:
        """The order file's top mapping, or None after adding why it cannot be read."""
        import yaml

        from swarm_runtime.flow.yaml_reader import load_yaml_nodes

        try:
            text = decode_utf8(raw) if raw is not None else read_text_limited(path)
            root = load_yaml_nodes(path, text)
        except FlowDefinitionError as exc:
            errors.append(exc)
            return None
        except InputRefused as exc:
            errors.append(FlowDefinitionError(f"the file {exc}", file=str(path), line=exc.line))
            return None
        except OSError as exc:
            errors.append(
                FlowDefinitionError(f"cannot read the file: {exc.strerror or exc}", file=str(path))
            )
            return None
        if not isinstance(root, yaml.MappingNode):
            errors.append(
                FlowDefinitionError("must be a mapping with 'order: [flow, ...]'", file=str(path))
            )
            return None
        return root

    def _order_keys(
        self, path: Path, node: yaml.SequenceNode, errors: list[FlowDefinitionError]
    ) -> list[str]:
        """The flow keys of an ``order`` list, each checked against the flow files here."""
        import yaml

        keys: list[str] = []
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                errors.append(
                    FlowDefinitionError(
                        "every item of 'order' must be a flow key",
                        file=str(path),
                        line=item.start_mark.line + 1,
                        field="order",
                    )
                )
                continue
            key = str(item.value)
            if key in self._paths and _is_utility(self._loaded(key) or self._partial.get(key)):
                errors.append(
                    FlowDefinitionError(
                        f"'{key}' is a utility flow (utility: true): it is injected after a "
                        "step whose state makes its trigger true, never run from the order; "
                        "remove it from 'order'",
                        file=str(path),
                        line=item.start_mark.line + 1,
                        field="order",
                    )
                )
            elif key not in self._paths:
                errors.append(
                    FlowDefinitionError(
                        f"'{key}' names no flow file in {self.flows_dir} "
                        f"(flows: {', '.join(self.keys()) or 'none'})",
                        file=str(path),
                        line=item.start_mark.line + 1,
                        field="order",
                    )
                )
            keys.append(key)
        return keys

    def get(self, key: str) -> FlowSpec:
        """The validated flow ``key``; raise FlowDefinitionError or SwarmUsageError."""
        if key not in self._paths:
            import difflib

            close = difflib.get_close_matches(key, self.keys(), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise SwarmUsageError(
                f"no flow '{key}' in {self.flows_dir} "
                f"(flows: {', '.join(self.keys()) or 'none'}){hint}"
            )
        flow, errors = self._load(key)
        if errors:
            raise _first(errors, "run 'swarm flows validate'")
        assert flow is not None
        return flow

    def _load(self, key: str) -> tuple[FlowSpec | None, list[FlowDefinitionError]]:
        """The flow of file ``key`` (from the cache when its bytes are unchanged), or its errors."""
        if key in self._flows:
            return self._flows[key], []
        if key in self._errors:
            return None, self._errors[key]
        path = self._paths[key]
        raw = self._raw(path)
        flow = self.cache.flow(path, raw) if raw is not None else None
        if flow is None:
            from swarm_runtime.flow.loader import check_flow_file

            flow, errors = check_flow_file(path, raw=raw, partial=True)
            if errors:
                self._errors[key] = errors
                if flow is not None:  # read with errors: what it names is checked too
                    self._partial[key] = flow
                return None, errors
            assert flow is not None
            if raw is not None:
                self.cache.keep_flow(path, raw, flow)
        self._flows[key] = flow
        return flow, []

    def persona(self, agent_key: str) -> str | None:
        """The persona text of ``agents/<agent_key>.md``, or None when there is none."""
        if not AGENT_KEY_RE.fullmatch(agent_key):
            return None  # never read a path built from an unchecked key
        if agent_key not in self._personas:
            path = self.flows_dir / "agents" / f"{agent_key}.md"
            try:
                self._personas[agent_key] = read_text_limited(path)
            except (OSError, ValueError):  # also a FIFO, a device, a huge or non-UTF-8 file
                self._personas[agent_key] = None
        return self._personas[agent_key]

    def problems(self) -> list[FlowDefinitionError]:
        """Every error of the directory, each with its file and line (worked out once).

        The errors of each flow file, the detours that name no flow or no step of one
        (:mod:`~swarm_runtime.flow.references`), and those of the order file: what
        ``swarm flows validate`` prints, and what :meth:`check` refuses before a run.
        """
        if self._problems is None:
            from swarm_runtime.flow.references import reference_errors

            errors: list[FlowDefinitionError] = []
            for key in self.keys():
                errors.extend(self._load(key)[1])
            read = {**self._partial, **self._flows}
            errors.extend(reference_errors(read, self._flows, self.keys(), self.flows_dir))
            order_path = self.flows_dir / ORDER_FILE
            if order_path.is_file():
                raw = self._raw(order_path)
                if raw is None or self.cache.order(order_path, raw, self.keys()) is None:
                    self._read_order(order_path, errors, raw)
            if not self._paths:
                errors.append(
                    FlowDefinitionError("no flow files (*.yaml) found", file=str(self.flows_dir))
                )
            errors.sort(key=lambda error: (error.file, error.line or 0))
            self._problems = errors
        return self._problems

    def read(self) -> list[FlowSpec]:
        """Every flow file that reads as a flow, by key: valid, or as far as it reads.

        What a check of each step (its engine, say) looks at, so that no other error of a
        file hides one of these (:meth:`problems` has the rest).
        """
        self.problems()
        read = {**self._partial, **self._flows}
        return [read[key] for key in sorted(read)]

    def validate_all(self) -> list[FlowDefinitionError]:
        """Every error in every flow file and in the order file (:meth:`problems`)."""
        return self.problems()

    def check(self, also: Sequence[FlowDefinitionError] = ()) -> None:
        """Refuse a directory with any error: raise the first, the others as its notes.

        A run checks the whole directory before it starts, as ``swarm flows validate``
        does: a utility flow that does not load, or a detour that goes nowhere, would
        otherwise be found (or silently left out) in the middle of it. ``also``: errors
        found beside the files' own (each step's engine), reported with them.
        """
        errors = sorted([*self.problems(), *also], key=lambda error: (error.file, error.line or 0))
        if errors:
            raise _first(errors, f"'swarm flows validate {self.flows_dir}' lists them")


def _first(errors: list[FlowDefinitionError], then: str) -> FlowDefinitionError:
    """A copy of the first of ``errors``, with every other one and ``then`` as its notes."""
    first = errors[0]
    raised = FlowDefinitionError(
        first.reason, file=first.file, line=first.line, step_id=first.step_id, field=first.field
    )
    for other in errors[1:]:
        raised.add_note(str(other))
    if len(errors) > 1:
        raised.add_note(f"{len(errors)} errors in all; {then}")
    return raised


def _is_utility(flow: FlowSpec | None) -> bool:
    return flow is not None and flow.utility
