"""A run's Python tools as an MCP stdio server, for a CLI that calls tools itself (``cli`` mode).

The Claude Code CLI runs a step's tools in its own process; the step's Python tools reach
it as the tools of an MCP server it starts from the MCP config the engine writes::

    python -m swarm_runtime.tools.serve --tool lookup=pkg.mod:lookup --timeout-s 60 --path DIR

Each ``--tool`` is a reference as runtime.yaml's ``tools:`` writes it; each ``--path`` a
directory the run imported its tools from. A call runs under
the tool's deadline, like a call in the HTTP engines' tool loop, and whatever goes wrong
(arguments that do not fit the schema, a tool that raises, hangs, or returns what is not
JSON) is answered to the model as a tool error, never a crash of the server. The server is
built on the official ``mcp`` SDK (the ``[mcp]`` extra), imported only here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.tools.box import ToolBox, ToolTimeout, UnknownTool
from swarm_runtime.tools.config import DEFAULT_TOOL_OUTPUT_CHARS, ToolSettings
from swarm_runtime.tools.registry import DEFAULT_TOOL_TIMEOUT_S, ToolInputError, ToolRegistry

SERVER_NAME = "swarm"
"""The name the server has in a CLI's MCP config: its tools are ``mcp__swarm__<name>``."""
MODULE = "swarm_runtime.tools.serve"
WHERE = "the swarm tools server"
INSTALL_MCP = "pip install 'swarm-stepwise[mcp]'"


def answer(box: ToolBox, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """What the model is told for a call of ``name``: (text, is_error)."""
    try:
        spec = box.spec(name)
    except UnknownTool as exc:
        return str(exc), True
    try:
        value = box.call(spec, arguments)
    except (ToolInputError, ToolTimeout) as exc:
        return str(exc), True
    except Exception as exc:  # the tool's own failure is the model's to hear about
        return f"{name} raised {type(exc).__name__}: {exc}", True
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return f"{name} returned a value that is not JSON ({type(value).__name__}): {exc}", True
    limit = box.settings.tool_output_chars
    if len(text) > limit:
        cut = len(text) - limit
        text = f"{text[:limit]}\n[CONTEXT_TRUNCATED: {cut} chars of {name}'s output cut]"
    return text, False


def build_box(references: Sequence[str], *, timeout_s: float, output_chars: int) -> ToolBox:
    """The tools ``references`` name, with their deadline and output budget (ConfigError)."""
    registry = ToolRegistry()
    registry.add_references(references, WHERE)
    settings = ToolSettings(
        references=tuple(references), tool_timeout_s=timeout_s, tool_output_chars=output_chars
    )
    return ToolBox(registry, settings)


async def serve(box: ToolBox) -> None:  # pragma: no cover - runs in the CLI's child process
    """Serve ``box``'s Python tools over stdin and stdout until the client goes away."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        specs = [box.spec(name) for name in box.registry.names()]
        return types.ListToolsResult(
            tools=[
                types.Tool(name=s.name, description=s.description, input_schema=s.input_schema)
                for s in specs
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        text, error = await anyio.to_thread.run_sync(answer, box, params.name, arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)

    server: Server[Any] = Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; 2 with a message on stderr when a tool or the ``mcp`` SDK is missing."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    parser.add_argument("--tool", action="append", default=[], metavar="[NAME=]MODULE:FUNCTION")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TOOL_TIMEOUT_S)
    parser.add_argument("--output-chars", type=int, default=DEFAULT_TOOL_OUTPUT_CHARS)
    parser.add_argument("--path", action="append", default=[], metavar="DIR")
    args = parser.parse_args(argv)
    # Where the run found its tools' modules; not PYTHONPATH, which some CLIs refuse to pass
    # to an MCP server.
    sys.path[:0] = [entry for entry in args.path if entry not in sys.path]
    try:
        box = build_box(args.tool, timeout_s=args.timeout_s, output_chars=args.output_chars)
    except ConfigError as exc:
        print(f"{MODULE}: {exc}", file=sys.stderr)
        return 2
    try:
        import anyio
        import mcp  # noqa: F401  (only to say what to install before serving)
    except ImportError:
        print(f"{MODULE}: needs the mcp package: {INSTALL_MCP}", file=sys.stderr)
        return 2
    anyio.run(serve, box)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
