"""The shape of the code: small rooms, imports one way, no circles.

Measured from the source with ``ast``: files of at most 450 lines and functions of at
most 80 in both packages; no import cycle between modules; ``pytest_swarm`` builds on
``swarm_runtime`` and never the reverse; ``flow/`` does not reach into ``storage/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("swarm_runtime", "pytest_swarm")
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80


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
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in MODULES and t != name}


def _is_type_checking_only(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    only: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module:
                    only.add(inner.module)
    return only


GRAPH = {
    name: _imports(name, path) - _is_type_checking_only(path) for name, path in MODULES.items()
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_files_and_functions_stay_small(name: str) -> None:
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


def test_no_import_cycles() -> None:
    # Package __init__ files re-export their modules; an import of the package for a name
    # is an arrow to the module that defines it, so __init__ edges are left out here.
    graph = {
        name: {t for t in targets if MODULES[t].name != "__init__.py"}
        for name, targets in GRAPH.items()
    }
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
