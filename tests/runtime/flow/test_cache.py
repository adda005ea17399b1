"""The flow cache: a run whose flows have not changed reads no YAML, and never a stale flow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.cache import FlowCache, cache_root, decode_flow, encode_flow
from swarm_runtime.flow.loader import load_flow
from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import REPO, SHIPPED_FLOWS


def _every_valid_flow() -> list[Path]:
    found = []
    for path in sorted(REPO.glob("**/*.yaml")):
        if ".venv" in path.parts or "cassettes" in path.parts or path.name == "flows.yaml":
            continue
        try:
            load_flow(path)
        except Exception:  # not a flow, or a flow made to be refused
            continue
        found.append(path)
    return found


def test_every_flow_in_the_repo_comes_back_from_the_cache_exactly() -> None:
    flows = _every_valid_flow()
    assert len(flows) >= 7  # the shipped SDLC flows at least
    for path in flows:
        flow = load_flow(path)
        again = decode_flow(encode_flow(flow))
        assert again == flow, path
        assert [s.field_lines for s in again.steps] == [s.field_lines for s in flow.steps]
        assert isinstance(again.path, Path) and isinstance(again.steps, tuple)
        assert [again.index_of(s.id) for s in flow.steps] == list(range(len(flow.steps)))


def test_a_value_json_cannot_give_back_is_not_cached(flows_copy: Path, tmp_path: Path) -> None:
    from swarm_runtime.flow.cache import Uncacheable
    from swarm_runtime.record import replace

    flow = load_flow(SHIPPED_FLOWS / "build.yaml")
    for charter in ({"score": float("nan")}, {"pair": (1, 2)}, {"when": object()}):
        with pytest.raises(Uncacheable):
            encode_flow(replace(flow, charter=charter))
    odd = replace(flow, charter={"t": ["a tuple?"], "r": ["a record?"], "d": [], "p": "x"})
    assert decode_flow(encode_flow(odd)).charter == odd.charter


@pytest.mark.parametrize(
    "text",
    ['{"r": ["FlowSpec", []]}', '{"x": 1}', "{}", '{"key": "k", "steps": {}}', "[]", "{not"],
)
def test_a_malformed_entry_is_refused_not_half_read(text: str) -> None:
    with pytest.raises(ValueError):
        decode_flow(text)


def _registry(flows: Path, cache: Path) -> FlowRegistry:
    return FlowRegistry(flows, cache=FlowCache(cache))


def test_a_cached_flow_is_served_and_an_edited_one_is_read_again(
    flows_copy: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first = _registry(flows_copy, cache).get("signal")
    assert len(list((cache / "flows").glob("flow-*.json"))) == 1
    assert _registry(flows_copy, cache).get("signal") == first
    # Same size, same mtime: only the bytes differ. The edit must be seen.
    path = flows_copy / "signal.yaml"
    info = path.stat()
    text = path.read_text(encoding="utf-8")
    assert "Rewrite the raw" in text
    path.write_text(text.replace("Rewrite the raw", "Redraft the raw"), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    edited = _registry(flows_copy, cache).get("signal")
    assert edited != first
    assert any("Redraft the raw" in step.role for step in edited.steps)


def test_a_broken_edit_of_a_cached_flow_is_reported_with_its_line(
    flows_copy: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    _registry(flows_copy, cache).get("plan")
    path = flows_copy / "plan.yaml"
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(n for n, line in enumerate(lines) if line.strip().startswith("role:"))
    lines[number] = lines[number].split("role:")[0] + "rol: oops"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FlowDefinitionError) as caught:
        _registry(flows_copy, cache).get("plan")
    assert caught.value.line == number + 1
    assert "rol" in str(caught.value)


def test_a_damaged_cache_entry_is_a_miss_and_is_written_again(
    flows_copy: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    flow = _registry(flows_copy, cache).get("gate")
    (entry,) = (cache / "flows").glob("flow-*.json")
    for damage in (b"", b"{not json", b'{"r": ["Nope", {}]}', b'{"t": 1, "r": 2}', b"[]"):
        entry.write_bytes(damage)
        assert _registry(flows_copy, cache).get("gate") == flow
        assert entry.read_bytes() == encode_flow(flow)


def test_a_cache_dir_that_cannot_be_written_changes_nothing(
    flows_copy: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    registry = _registry(flows_copy, blocker / "cache")
    assert [registry.get(key).key for key in registry.order()] == registry.order()
    assert blocker.read_text(encoding="utf-8") == "not a directory"


def test_where_the_cache_lives() -> None:
    home = {"HOME": "/home/u"}
    assert cache_root(home) == Path("/home/u/.cache/swarm-stepwise")
    assert cache_root({**home, "XDG_CACHE_HOME": "/xdg"}) == Path("/xdg/swarm-stepwise")
    assert cache_root({**home, "XDG_CACHE_HOME": "relative"}) == Path(
        "/home/u/.cache/swarm-stepwise"
    )
    assert cache_root({**home, "SWARM_CACHE_DIR": "/c"}) == Path("/c")
    assert cache_root({**home, "SWARM_CACHE_DIR": "/c", "SWARM_NO_CACHE": "1"}) is None
    assert cache_root({**home, "SWARM_NO_CACHE": "0"}) == Path("/home/u/.cache/swarm-stepwise")


# A user's view: `swarm run` twice, then with the flows edited; the cache never beside them.
_PROBE = """
import runpy, sys
sys.argv = ["swarm", *sys.argv[1:]]
try:
    runpy.run_module("swarm_runtime.cli.main", run_name="__main__")
except SystemExit as exc:
    print("exit", exc.code, "yaml imported" if "yaml" in sys.modules else "no yaml")
"""


def _swarm(tmp_path: Path, flows: Path, cache: Path, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    environ.update(SWARM_CACHE_DIR=str(cache), **env)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "run", "--flows-dir", str(flows), "--runs-dir", "runs"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = done.stdout.strip().splitlines()[-1]
    return int(last.split()[1]), last + done.stderr


def test_swarm_run_reads_no_yaml_when_its_flows_are_unchanged(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    import shutil

    shutil.copytree(SHIPPED_FLOWS, flows)
    before = sorted(p.relative_to(flows) for p in flows.rglob("*"))
    cache = tmp_path / "cache"
    assert _swarm(tmp_path, flows, cache) == (0, "exit 0 yaml imported")
    assert _swarm(tmp_path, flows, cache) == (0, "exit 0 no yaml")
    assert sorted(p.relative_to(flows) for p in flows.rglob("*")) == before  # nothing beside
    (flows / "deploy.yaml").write_text("key: deploy\nsteps: [\n", encoding="utf-8")
    code, output = _swarm(tmp_path, flows, cache)
    assert code == 2
    assert "deploy.yaml" in output
    assert "Traceback" not in output
    off = tmp_path / "off"
    (flows / "deploy.yaml").write_bytes((SHIPPED_FLOWS / "deploy.yaml").read_bytes())
    assert _swarm(tmp_path, flows, off, SWARM_NO_CACHE="1") == (0, "exit 0 yaml imported")
    assert not off.exists()


def test_the_cache_stays_bounded(
    flows_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import swarm_runtime.flow.cache as cache_module

    monkeypatch.setattr(cache_module, "MAX_ENTRIES", 4)
    cache = tmp_path / "cache"
    registry = _registry(flows_copy, cache)
    for key in registry.order():  # 7 flows and the order
        registry.get(key)
        assert len(list((cache / "flows").iterdir())) <= 4


def test_every_module_the_cache_stamp_names_is_there() -> None:
    """A module the stamp names but cannot find never invalidates the cache when it changes
    (``inputs.py`` became a package once, and the stamp kept reading ``inputs.py:-``)."""
    from swarm_runtime.flow import cache

    here = Path(cache.__file__).resolve().parent
    missing = [name for name in cache._LOADER_MODULES if not (here / name).is_file()]
    assert missing == []
    reading = {p.name for p in (here.parent / "inputs").glob("*.py")}
    named = {Path(name).name for name in cache._LOADER_MODULES if name.startswith("../inputs/")}
    assert reading <= named, "a module that reads flow files is not in the stamp"
    flow_modules = {p.name for p in here.glob("*.py")} - {"__init__.py"}
    assert flow_modules <= set(cache._LOADER_MODULES), "a flow module is not in the stamp"
