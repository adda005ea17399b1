"""Entry points read from ``entry_points.txt``: what importlib.metadata gives, faster."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from pathlib import Path

import pytest

from swarm_runtime import entry_points as reader
from tests.conftest import plugin_distribution


def _library(group: str) -> list[tuple[str, str, str]]:
    return [(e.name, e.value, e.group) for e in importlib.metadata.entry_points(group=group)]


def _ours(group: str) -> list[tuple[str, str, str]]:
    return [(e.name, e.value, e.group) for e in reader.entry_points(group)]


def test_every_group_of_this_environment_reads_as_importlib_metadata_reads_it() -> None:
    groups = {e.group for dist in importlib.metadata.distributions() for e in dist.entry_points}
    assert {"console_scripts", "pytest11"} <= groups  # this project's own, at least
    assert reader._read_path() is not None  # read from the files, not by the library
    for group in sorted(groups):
        assert _ours(group) == _library(group), group


def test_a_plugin_on_the_path_is_found_and_loads_and_the_first_of_a_name_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = """
        # a comment, then a group
        [swarm_runtime]
        first = first_plugin:hooks
        nested = first_plugin:Outer.inner

        [other.group]
        ignored = first_plugin
    """
    source = "class Outer:\n    inner = 'the inner one'\nhooks = 'the hooks'\n"
    front = plugin_distribution(tmp_path / "front", "first_plugin", source, entries)
    shadowed = plugin_distribution(
        tmp_path / "back", "first_plugin", source, "[swarm_runtime]\nshadowed = x:y\n"
    )
    monkeypatch.syspath_prepend(str(shadowed))
    monkeypatch.syspath_prepend(str(front))
    assert reader._read_path() is not None
    assert _ours("swarm_runtime") == _library("swarm_runtime")
    found = {e.name: e for e in reader.entry_points("swarm_runtime")}
    assert "shadowed" not in found
    assert found["first"].load() == "the hooks"
    assert found["nested"].load() == "the inner one"
    assert _ours("other.group") == [("ignored", "first_plugin", "other.group")]


def test_a_zip_on_the_path_is_read_by_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_plugin.py", "hooks = 'zipped'\n")
        zipped.writestr("zipped_plugin-1.0.dist-info/METADATA", "Name: zipped_plugin\n")
        zipped.writestr(
            "zipped_plugin-1.0.dist-info/entry_points.txt",
            "[swarm_runtime]\nzipped = zipped_plugin:hooks\n",
        )
    monkeypatch.syspath_prepend(str(archive))
    assert ("zipped", "zipped_plugin:hooks", "swarm_runtime") in _ours("swarm_runtime")
    assert reader.entry_points("swarm_runtime")[0].load() == "zipped"
    assert sys.path[0] == str(archive)


def test_a_distribution_installed_after_a_reading_is_found_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = _ours("swarm_runtime")
    assert reader.entry_points("swarm_runtime") == reader.entry_points("swarm_runtime")
    plugin_distribution(
        site, "late_plugin", "hooks = 1\n", "[swarm_runtime]\nlate = late_plugin:hooks\n"
    )
    after = _ours("swarm_runtime")
    assert after == _library("swarm_runtime")
    assert ("late", "late_plugin:hooks", "swarm_runtime") in after
    assert ("late", "late_plugin:hooks", "swarm_runtime") not in before
