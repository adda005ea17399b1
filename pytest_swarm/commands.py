"""The commands the plugin prints for a user to run: each one works verbatim.

A re-record, a golden to write or accept: the command names the test so pytest finds it
from where the user ran pytest (a path relative to that dir), carries the swarm options
the user gave on the command line (absolute paths), adds ``--snapshot-update`` when the
test compares a golden (a new recording makes a new golden), and names a test of the
packaged contract suite the way ``--swarm-contract`` accepts it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from pytest_swarm.options import OPTIONS, OPTIONS_KEY

CONTRACT_FILE = "test_contract.py"
"""How a printed command names the packaged contract suite's file (``--swarm-contract``)."""


def pytest_command(item: pytest.Item, *, mode: str, update_goldens: bool = False) -> str:
    """``pytest --swarm-mode=MODE [options] [--snapshot-update] 'NODE'`` for ``item``."""
    return command_for(item.config, [node_of(item)], mode=mode, update_goldens=update_goldens)


def command_for(config: pytest.Config, nodes: list[str], *, mode: str, update_goldens: bool) -> str:
    """The command that runs ``nodes`` (from :func:`node_of`) in ``mode``."""
    options = config.stash[OPTIONS_KEY]
    words = ["pytest"]
    if options.contract:
        words.append("--swarm-contract")
    words.append(f"--swarm-mode={mode}")
    for option in OPTIONS:
        if option.name in ("mode", "record_mode"):
            continue  # the mode is the command's own
        if options.sources.get(option.name) == option.flag:
            value = getattr(options, option.name)
            shown = ("yes" if value else "no") if isinstance(value, bool) else value
            words.append(f"{option.flag}={shown}")
    if update_goldens:
        words.append("--snapshot-update")
    return " ".join(shlex.quote(word) for word in [*words, *nodes])


def node_of(item: pytest.Item) -> str:
    """The test as a command line names it, from where pytest ran (or in the suite)."""
    path, _, rest = item.nodeid.partition("::")
    if item.config.stash[OPTIONS_KEY].contract:
        return f"{CONTRACT_FILE}::{rest}"
    full = Path(item.config.rootpath) / path
    relative = os.path.relpath(full, item.config.invocation_params.dir)
    return f"{Path(relative).as_posix()}::{rest}" if rest else Path(relative).as_posix()
