"""Which modules are public is marked in the code: the public ones (``swarm_runtime``,
``swarm_runtime.plan``, ``pytest_swarm``) list their names in ``__all__``, truly; every
other module is internal and has no ``__all__``, so nothing suggests it is an API."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import pytest_swarm
import swarm_runtime
from tests.test_public_surface import PUBLIC_MODULES

SKIPPED = {"swarm_runtime.__main__", "pytest_swarm.contract_suite.test_contract"}


def _modules() -> list[str]:
    names = []
    for package in (swarm_runtime, pytest_swarm):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name not in SKIPPED:
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_only_a_public_module_has_all(name: str) -> None:
    module = importlib.import_module(name)
    listed = getattr(module, "__all__", None)
    if name not in PUBLIC_MODULES:
        assert listed is None, f"{name} is internal but has __all__ (public: {PUBLIC_MODULES})"
        return
    assert listed is not None, f"{name} is public and has no __all__"
    assert len(listed) == len(set(listed)), f"{name}.__all__ repeats a name"
    missing = [n for n in listed if getattr(module, n, None) is None]
    assert not missing, f"{name}.__all__ lists names it does not have: {missing}"


def _defined_here(module: ModuleType) -> set[str]:
    """Public classes and functions whose home is this module."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize("package", [swarm_runtime, pytest_swarm])
def test_a_package_lists_every_public_name_it_holds(package: ModuleType) -> None:
    for name in package.__all__:
        getattr(package, name)  # lazy names resolve too
    public = {n for n in vars(package) if not n.startswith("_")}
    modules_and_typing = {
        n for n in public if inspect.ismodule(getattr(package, n)) or n in {"annotations", "Any"}
    }
    assert not sorted(public - modules_and_typing - set(package.__all__) - {"TYPE_CHECKING"})
    assert not sorted(_defined_here(package) - set(package.__all__))
