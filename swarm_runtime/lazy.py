"""Names a package exports without importing their modules until first use.

A package's ``__init__`` keeps a table of where each public name lives and sets
``__getattr__ = lazy_names(__name__, table, globals())``: the first access imports the
module, and the value is then kept in the package's namespace.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the ``swarm`` command imports this before its first line
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing ``name`` from ``homes[name]`` on first use.

    A home that starts with ``.`` is a submodule of ``package``.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(package + home if home[0] == "." else home), name)
        namespace[name] = value
        return value

    return __getattr__
