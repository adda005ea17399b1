"""Every module of both packages says what it offers in ``__all__``, and says it truly."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import pytest_swarm
import swarm_runtime

SKIPPED = {"swarm_runtime.__main__", "pytest_swarm.contract_suite.test_contract"}


def _modules() -> list[str]:
    names = []
    for package in (swarm_runtime, pytest_swarm):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name not in SKIPPED:
                names.append(info.name)
    return sorted(names)


def _defined_here(module: ModuleType) -> set[str]:
    """Public classes and functions whose home is this module."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize("name", _modules())
def test_all_lists_real_names_once_and_everything_defined_here(name: str) -> None:
    module = importlib.import_module(name)
    listed = getattr(module, "__all__", None)
    assert listed is not None, f"{name} has no __all__"
    assert len(listed) == len(set(listed)), f"{name}.__all__ repeats a name"
    missing = [n for n in listed if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names it does not have: {missing}"
    unlisted = sorted(_defined_here(module) - set(listed))
    assert not unlisted, f"{name} defines {unlisted} without listing them in __all__"


@pytest.mark.parametrize("package", [swarm_runtime, pytest_swarm])
def test_a_package_lists_every_public_name_it_holds(package: ModuleType) -> None:
    for name in package.__all__:
        getattr(package, name)  # lazy names resolve too
    public = {n for n in vars(package) if not n.startswith("_")}
    modules_and_typing = {
        n for n in public if inspect.ismodule(getattr(package, n)) or n in {"annotations", "Any"}
    }
    assert not sorted(public - modules_and_typing - set(package.__all__) - {"TYPE_CHECKING"})
