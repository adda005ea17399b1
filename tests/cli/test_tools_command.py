"""``swarm run`` with tools, as a user sets them up: runtime.yaml ``tools:``, a plugin's tools.

A user project keeps its tools in a module beside its flows and names them in runtime.yaml;
an installed package adds its own through the ``swarm_register_tools`` hook. A stub run
whose scenario names a tool runs it; a bad reference is a usage error naming the file and
the reference, before any step runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swarm_runtime.storage.store import read_event_log
from tests.conftest import plugin_distribution
from tests.runtime.helpers import step_yaml, write_flow

TOOLS = '''
from swarm_runtime.tools import tool


def lookup(order_id: str) -> dict:
    """Look an order up."""
    with open("looked-up.txt", "a", encoding="utf-8") as handle:
        handle.write(order_id + "\\n")
    return {"order": order_id, "status": "shipped"}


def peek() -> str:
    """Read the note left in the project."""
    with open("note.txt", encoding="utf-8") as handle:
        return handle.read()


@tool(name="rate", pure=True)
def today_rate(currency: str) -> float:
    """Today's rate."""
    return 1.25
'''

PLUGIN = '''
def refund(order_id: str, cents: int) -> str:
    """Refund an order."""
    return f"refunded {cents} on {order_id}"


def swarm_register_tools(registry):
    registry.register(refund)
'''


def _swarm(
    cwd: Path, *args: str, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), *sys.path])
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _project(tmp_path: Path, references: str) -> Path:
    (tmp_path / "project_tools.py").write_text(TOOLS, encoding="utf-8")
    config = tmp_path / "swarm" / "config"
    config.mkdir(parents=True)
    (config / "runtime.yaml").write_text(f"tools: {references}\n", encoding="utf-8")
    step = step_yaml("triage") + "    tools: [lookup, rate, refund]\n"
    write_flow(tmp_path / "flows", "orders", [step])
    (tmp_path / "scenario.yaml").write_text(
        "triage:\n  tools:\n"
        "    - {tool: lookup, input: {order_id: A-1}}\n"
        "    - {tool: rate, input: {currency: EUR}}\n"
        "    - {tool: refund, input: {order_id: A-1, cents: 250}}\n",
        encoding="utf-8",
    )
    return tmp_path


def test_a_stub_run_calls_the_projects_tools_and_a_plugins(tmp_path: Path) -> None:
    project = _project(tmp_path, "[project_tools:lookup, project_tools:today_rate]")
    plugins = plugin_distribution(
        tmp_path / "site", "refunds", PLUGIN, "[swarm_runtime]\nrefunds = refunds\n"
    )
    done = _swarm(
        project, "orders", "--flows-dir", "flows", "--scenario", "scenario.yaml", pythonpath=plugins
    )
    assert done.returncode == 0, done.stderr
    assert (project / "looked-up.txt").read_text() == "A-1\n"  # the real tool ran
    (run_dir,) = (project / "swarm" / "runs").iterdir()
    ends = [
        (e["payload"]["tool"], e["payload"]["output"])
        for e in read_event_log(run_dir / "events.jsonl").events
        if e["kind"] == "tool_end"
    ]
    assert ends == [
        ("lookup", json.dumps({"order": "A-1", "status": "shipped"})),
        ("rate", "1.25"),
        ("refund", "refunded 250 on A-1"),
    ]
    receipt = json.loads((run_dir / "orders" / "receipts" / "triage-worker.json").read_text())
    assert receipt["tools_allowed"] == ["lookup", "rate", "refund"]


def test_a_tool_reference_that_does_not_import_is_a_usage_error_naming_it(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path, "[project_tools:lookup, project_tools:nope]")
    done = _swarm(project, "orders", "--flows-dir", "flows")
    assert done.returncode == 2
    assert "runtime.yaml" in done.stderr and "project_tools:nope" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / "swarm" / "runs").exists() or not any(
        (project / "swarm" / "runs").iterdir()
    )


def test_a_bad_mcp_server_entry_is_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    project = _project(tmp_path, "[]")
    (project / "swarm" / "config" / "runtime.yaml").write_text(
        "mcp_servers:\n  fs:\n    args: [x]\n", encoding="utf-8"
    )
    done = _swarm(project, "orders", "--flows-dir", "flows")
    assert done.returncode == 2
    assert "mcp_servers.fs.command" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_secret_in_an_mcp_servers_env_is_scrubbed_from_every_file(tmp_path: Path) -> None:
    project = _project(tmp_path, "[]")
    token = "fs-token-not-a-real-one-4242"
    (project / "note.txt").write_text(f"the token is {token}", encoding="utf-8")
    (project / "swarm" / "config" / "runtime.yaml").write_text(
        "tools: [project_tools:lookup, project_tools:peek, project_tools:today_rate]\n"
        "mcp_servers:\n  fs:\n    command: node\n    args: [server.js]\n"
        f"    env: {{FS_API_TOKEN: {token}}}\n",
        encoding="utf-8",
    )
    flow = project / "flows" / "orders.yaml"
    flow.write_text(flow.read_text().replace("refund]", "peek]"), encoding="utf-8")
    (project / "scenario.yaml").write_text(
        "triage:\n  tools:\n    - {tool: peek, input: {}}\n", encoding="utf-8"
    )
    done = _swarm(project, "orders", "--flows-dir", "flows", "--scenario", "scenario.yaml")
    assert done.returncode == 0, done.stderr
    (run_dir,) = (project / "swarm" / "runs").iterdir()
    files = [path for path in run_dir.rglob("*") if path.is_file()]
    assert files and not [path for path in files if token in path.read_text(errors="replace")]
    assert "[scrubbed FS_API_TOKEN]" in (run_dir / "events.jsonl").read_text()
