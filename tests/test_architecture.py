"""The shape of the code: a room per concept, imports one way, no circles.

Measured from the source with ``ast``, in both packages: files of at most 800 lines (a room
holds a whole concept), functions of at most 60, constructors of at most 8 parameters; no
import cycle between modules, counting every import (under ``TYPE_CHECKING``, inside a function, of a
package's ``__init__``); every import goes to the same layer or a lower one (``LAYERS``);
``flow/`` does not reach into ``storage/``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("swarm_runtime", "pytest_swarm")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 60
MAX_CONSTRUCTOR_PARAMETERS = 8

LAYERS: tuple[tuple[str, ...], ...] = (
    # What every room uses: errors, value types, ids, time, versions.
    ("errors", "versions", "record", "lazy", "ids", "timeutil", "digest", "documents", "install"),
    ("entry_points",),  # the installed distributions' plugins, found
    ("inputs",),  # reading what users give: YAML, JSON, sizes, depths
    ("storage", "artifacts", "golden"),  # files of a run
    # settings, flow definitions, and the tools a step's model may call
    ("credentials", "config", "config_file", "flow", "tools"),
    ("engines",),  # one step's call
    ("contracts", "coverage", "results"),  # run-file contracts; route coverage; verdicts
    ("orchestrator", "hookspecs", "plugins"),  # the run kernel, and who hears it
    ("plan", "service", "distributed"),  # what runs on the kernel, here or on workers
    ("studio",),
    ("cli", "__main__", ""),  # the edges: the command line and the package's face
)
"""``swarm_runtime``'s rooms, lowest first; ``pytest_swarm`` stands above them all."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Project modules ``name`` imports, at any depth of the file (lazy imports count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` is an arrow to the module; a name is one to
            # the package (its __init__ is where that name comes from).
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in MODULES else base)
    return {t for t in targets if t in MODULES and t != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> int:
    if name.startswith("pytest_swarm"):
        return len(LAYERS)
    room = name.removeprefix("swarm_runtime").removeprefix(".").split(".")[0]
    for number, rooms in enumerate(LAYERS):
        if room in rooms:
            return number
    raise AssertionError(f"{name}: its room {room!r} is in no layer of LAYERS")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_files_functions_and_constructors_stay_small(name: str) -> None:
    path = MODULES[name]
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_FILE_LINES, f"{path}: over {MAX_FILE_LINES} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, (
                f"{path}:{node.lineno}: {node.name} is {length} lines (at most "
                f"{MAX_FUNCTION_LINES}); split it by concept"
            )
            if node.name == "__init__":
                count = len(node.args.posonlyargs + node.args.args + node.args.kwonlyargs) - 1
                assert count <= MAX_CONSTRUCTOR_PARAMETERS, (
                    f"{path}:{node.lineno}: a constructor of {count} parameters (at most "
                    f"{MAX_CONSTRUCTOR_PARAMETERS}); pass related ones as one record"
                )


def test_imports_go_to_the_same_layer_or_a_lower_one() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(name)
    )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_the_layer_rules_see_an_upward_import() -> None:
    assert _layer("swarm_runtime.orchestrator.step") > _layer("swarm_runtime.flow.loader")
    assert _layer("pytest_swarm.runner") > _layer("swarm_runtime.cli.run")
    assert _layer("swarm_runtime") == _layer("swarm_runtime.cli")
    assert "swarm_runtime.orchestrator.step" in GRAPH["swarm_runtime.orchestrator.run"]


def test_no_import_cycles() -> None:
    graph = GRAPH
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_the_runtime_never_imports_the_plugin() -> None:
    bad = {
        name: sorted(t for t in targets if t.startswith("pytest_swarm"))
        for name, targets in GRAPH.items()
        if name.startswith("swarm_runtime")
    }
    assert not {k: v for k, v in bad.items() if v}


def test_flow_definitions_do_not_reach_into_storage() -> None:
    bad = {
        name: sorted(t for t in targets if t.startswith("swarm_runtime.storage"))
        for name, targets in GRAPH.items()
        if name.startswith("swarm_runtime.flow")
    }
    assert not {k: v for k, v in bad.items() if v}


def test_the_package_version_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    versions = (REPO / "swarm_runtime" / "versions.py").read_text(encoding="utf-8")
    found = re.search(r'^PACKAGE_VERSION = "([^"]+)"', versions, re.M)
    assert found is not None
    assert found.group(1) == declared["project"]["version"]


def _calls_and_bases(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Dotted names called, and names used as decorators or base classes, in ``tree``."""

    def dotted(node: ast.expr) -> str:
        if isinstance(node, ast.Call):
            return dotted(node.func)
        if isinstance(node, ast.Attribute):
            return f"{dotted(node.value)}.{node.attr}"
        return node.id if isinstance(node, ast.Name) else ""

    calls = {dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    shapes = {
        dotted(expr)
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef)
        for expr in (*n.bases, *n.decorator_list)
    }
    return calls, shapes


def test_records_are_declared_one_way_and_never_compiled() -> None:
    # A value record is a Record (a msgspec struct); a payload written to a run file is a
    # TypedDict; a document read back is a pydantic model. Nothing compiles source.
    found = []
    for name, path in MODULES.items():
        calls, shapes = _calls_and_bases(ast.parse(path.read_text(encoding="utf-8")))
        for bad in sorted(
            (calls | shapes)
            & {
                "exec",
                "compile",
                "eval",
                "dataclass",
                "dataclasses.dataclass",
                "NamedTuple",
                "typing.NamedTuple",
                "namedtuple",
            }
        ):
            found.append(f"{name}: {bad}")
    assert not found, "\n".join(found)


def test_run_files_are_encoded_by_one_encoder() -> None:
    # Run documents go through storage/store.py's encoder; nothing on the run kernel's
    # path builds JSON by hand or with the json module.
    kernel = [n for n in MODULES if n.startswith("swarm_runtime.orchestrator")]
    found = []
    for name in kernel:
        calls, _ = _calls_and_bases(ast.parse(MODULES[name].read_text(encoding="utf-8")))
        found.extend(f"{name}: {c}" for c in sorted(calls) if c.startswith("json.dump"))
    # plan.py measures a param as JSON; context.py (the prompt), routing.py (the
    # navigator's prompt) and judging.py (a judge's prompt) lay values out in a prompt's text.
    assert found == [
        "swarm_runtime.orchestrator.context: json.dumps",
        "swarm_runtime.orchestrator.judging: json.dumps",
        "swarm_runtime.orchestrator.plan: json.dumps",
        "swarm_runtime.orchestrator.routing: json.dumps",
    ]
