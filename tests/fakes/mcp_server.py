"""A small MCP server over stdio for tests, written with the mcp SDK's server side.

``python mcp_server.py [MODE]``: ``serve`` (the default) answers MCP; ``exit`` writes a
line to stderr and exits with status 2 before any handshake; ``garbage`` writes a line that
is not JSON-RPC to stdout first; ``silent`` reads its stdin and never answers. Its tools:
``echo``, ``fail`` (an error answer), ``hang`` (never answers; touches ``$FAKE_MCP_HANGING``
first when set), ``die`` (writes its last words to stderr and exits with status 3 in the
middle of the call), ``babble`` (writes a line that is not JSON-RPC to stdout and never
answers), ``picture`` (text and an image), ``env`` (the names and values of its
environment, as JSON). With ``$FAKE_MCP_STARTS`` set it appends a line to that file when it
starts; with ``$FAKE_MCP_HELPER`` set it first starts a helper that outlives it unless
killed (a session of its own, SIGTERM ignored). Everything it says on stderr includes ``$FAKE_MCP_SECRET`` when that is set, as a
server that echoes its configuration would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent

HELPER = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.pause()"


def _stderr(text: str) -> None:
    secret = os.environ.get("FAKE_MCP_SECRET", "")
    sys.stderr.write(f"{text} (token={secret})\n" if secret else f"{text}\n")
    sys.stderr.flush()


def serve() -> None:
    wire = os.dup(1)  # the SDK points fd 1 at stderr while it serves (prints cannot reach the wire)
    server = MCPServer("fake")

    @server.tool()
    def echo(text: str) -> str:
        """Say ``text`` back."""
        return f"echo: {text}"

    @server.tool()
    def fail(reason: str = "the widget is broken") -> str:
        """Answer an error."""
        raise ToolError(reason)

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        if os.environ.get("FAKE_MCP_HANGING"):
            Path(os.environ["FAKE_MCP_HANGING"]).touch()
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    def die() -> str:
        """Exit in the middle of the call."""
        _stderr("fake server: the disk caught fire")
        os._exit(3)

    @server.tool()
    async def babble() -> str:
        """Write what is not JSON-RPC to stdout, and never answer."""
        os.write(wire, b"this is not JSON-RPC\n")
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    def picture() -> list[TextContent | ImageContent]:
        """A caption and a 4-byte image."""
        return [
            TextContent(type="text", text="a picture"),
            ImageContent(type="image", data="iVBORw==", mime_type="image/png"),
        ]

    @server.tool()
    def env() -> str:
        """The server's environment."""
        return json.dumps(dict(os.environ))

    server.run("stdio")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if os.environ.get("FAKE_MCP_STARTS"):
        with open(os.environ["FAKE_MCP_STARTS"], "a", encoding="utf-8") as starts:
            starts.write(f"{os.getpid()}\n")
    if os.environ.get("FAKE_MCP_HELPER"):
        # A helper of its own, as a daemon: a session of its own, deaf to SIGTERM, holding
        # none of the server's pipes, so it outlives the server unless someone kills it.
        subprocess.Popen(
            [sys.executable, "-c", HELPER],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    if mode == "exit":
        _stderr("fake server: unknown flag --frobnicate")
        sys.exit(2)
    if mode == "garbage":
        sys.stdout.write("Fake server v1.0 starting up...\n")
        sys.stdout.flush()
    if mode == "silent":
        for _line in sys.stdin:
            pass
        return
    serve()


if __name__ == "__main__":
    main()
