"""MCP servers over stdio, through the official ``mcp`` SDK: their tools as ``server.tool``.

What a user needs: ``pip install 'swarm-stepwise[mcp]'`` (the SDK, imported only when a run
starts a server) and whatever the server itself runs on — Node.js for a server from the
npm registry (``command: node`` with its ``dist/index.js``, or ``npx``), Python for one
written with the SDK. Each ``mcp_servers`` entry of runtime.yaml is started the first time
a step needs one of its tools, once per run, and kept open until the run ends
(:meth:`McpServers.close`). It gets a minimal environment (PATH, HOME, LANG, TMPDIR and the
like) plus the entry's ``env``; never the run's whole environment, so no API key reaches a
server unless the entry names it.

No server outlives its run: each runs under a small guard (:mod:`.mcp_guard`) that ends the
server and everything it started when the run closes it, exits or is killed. A server that
will not start, dies or writes what is not MCP raises :class:`McpServerError` naming the
server, its command, what happened and the last lines of its stderr (credentials scrubbed);
a server that died stays dead for the rest of the run. A tool's error answer raises
:class:`McpToolError`, a call past its deadline :class:`~.registry.ToolTimeout`.

The SDK is async: one event loop, in a thread of its own, runs every server's client, and
the calls of the run's threads are handed to it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Awaitable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import ConfigError, SwarmRunError
from swarm_runtime.tools import mcp_guard
from swarm_runtime.tools.config import McpServerConfig
from swarm_runtime.tools.registry import ToolSpec, ToolTimeout

START_TIMEOUT_S = 30.0
"""How long a server has to start and answer the MCP handshake (and to list its tools)."""
STOP_GRACE_S = 1.0
"""How long the guard gives a server between SIGTERM and SIGKILL."""
STDERR_LINES = 12
"""How many of the last lines of a server's stderr an error quotes (each cut at 300 chars)."""
_STDERR_READ = 16 * 1024
_LINE_CHARS = 300
_PAGES = 100
"""At most this many pages of tools/list: a server whose cursor never ends cannot hang a run."""
_SETTLE_S = 15.0
"""What the caller's thread waits beyond the deadlines the loop keeps itself (a wedged loop)."""
_PASSED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
)
"""The variables of the run's environment a server gets (with its entry's ``env``)."""
_GUARD = Path(mcp_guard.__file__)
_T = TypeVar("_T")


class McpServerError(SwarmRunError):
    """An MCP server would not start, died, or answered what is not MCP: names the server."""


class McpToolError(Exception):
    """A tool of an MCP server answered with an error: the model is told, the step goes on."""


class _Broken(Exception):
    """The server wrote what is not MCP on its stdout."""


def server_env(config: McpServerConfig, token: str, environ: dict[str, str]) -> dict[str, str]:
    """A server's environment: the few variables of :data:`_PASSED_ENV`, its ``env``, its mark."""
    passed = {name: environ[name] for name in _PASSED_ENV if name in environ}
    return {**passed, **config.env, mcp_guard.MARK: token}


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        from swarm_runtime.install import install_command

        raise ConfigError(
            "runtime.yaml declares mcp_servers, which need the mcp package: "
            f"{install_command('mcp')}"
        ) from None
    # The SDK logs a line it cannot parse with its traceback; the error we raise says it.
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


class _Loop:
    """One asyncio event loop in a thread of its own, where every server's client runs.

    The servers' guards are started from this thread, and Linux signals a guard when the
    thread that started it ends: the thread lives until :meth:`stop`, after the servers.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="swarm-mcp", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, work: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Start ``work`` on the loop; its concurrent future."""
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def run(self, work: Coroutine[Any, Any, _T], wait_s: float) -> _T:
        """``work``'s result, waited for at most ``wait_s`` (then TimeoutError)."""
        future = self.submit(work)
        try:
            result: _T = future.result(wait_s)
        except TimeoutError:
            future.cancel()
            raise
        return result

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(_SETTLE_S)
        if not self.thread.is_alive():
            self.loop.close()


class _Link:
    """One server's MCP connection: a task on the loop holds the client from start to stop."""

    def __init__(self) -> None:
        import anyio

        self.client: Any = None
        self.ready = anyio.Event()
        self.broken = anyio.Event()
        self.garbage = ""
        self.failure: BaseException | None = None
        self.stopping = anyio.Event()
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self.task: asyncio.Task[None] | None = None

    async def hold(self, transport: Any) -> None:
        """Open the client on ``transport``, keep it until :attr:`stopping`, close it."""
        from mcp import Client

        try:
            with self.scope:
                async with Client(transport, message_handler=self._heard, cache=None) as client:
                    self.client = client
                    self.ready.set()
                    await self.stopping.wait()
        except Exception as exc:  # the handshake failed, or the transport did
            self.failure = _single(exc)
        finally:
            self.ready.set()
            self.done.set()

    async def _heard(self, message: Any) -> None:
        if isinstance(message, Exception) and not self.broken.is_set():
            self.garbage = _bad_line(message)
            self.broken.set()

    async def guarded(self, work: Awaitable[_T], timeout_s: float | None) -> _T:
        """``work``'s result, or _Broken when the server writes garbage meanwhile.

        TimeoutError past ``timeout_s``; ``work`` is cancelled either way.
        """
        import anyio

        outcome: list[tuple[bool, Any]] = []

        async def run() -> None:
            try:
                outcome.append((True, await work))
            except Exception as exc:
                outcome.append((False, exc))
            group.cancel_scope.cancel()

        async def watch() -> None:
            await self.broken.wait()
            group.cancel_scope.cancel()

        with anyio.fail_after(timeout_s):
            async with anyio.create_task_group() as group:
                group.start_soon(run)
                group.start_soon(watch)
        if not outcome:
            close = getattr(work, "close", None)
            if callable(close):  # cancelled before it started: never awaited
                close()
            raise _Broken
        ok, value = outcome[0]
        if not ok:
            raise value
        result: _T = value
        return result

    async def close(self, wait_s: float) -> None:
        """Close the client: the SDK closes stdin, then ends the guard's group.

        Cancelled when that takes longer than ``wait_s``.
        """
        import anyio

        self.stopping.set()
        with anyio.move_on_after(wait_s):
            await self.done.wait()
        await self.abort(wait_s)

    async def abort(self, wait_s: float) -> None:
        """Cancel the client wherever it is (the handshake, say); the SDK still ends the server."""
        import anyio

        self.scope.cancel()
        with anyio.move_on_after(wait_s):
            await self.done.wait()


def _single(exc: BaseException) -> BaseException:
    """The one exception inside nested exception groups of one member each."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _bad_line(exc: Exception) -> str:
    """What the server wrote that is not JSON-RPC, as far as the SDK's error tells."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            found = errors()[0].get("input")
            if isinstance(found, str | bytes):
                text = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
                return repr(text[:_LINE_CHARS])
    return str(exc).splitlines()[0][:_LINE_CHARS] if str(exc) else type(exc).__name__


def _base64_bytes(data: Any) -> int:
    return len(data.rstrip("=")) * 3 // 4 if isinstance(data, str) else 0


def answer_text(content: list[Any], structured: Any = None) -> str:
    """A tool's answer as text: its text parts joined, other parts said for what they are."""
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{block.mime_type}, {_base64_bytes(block.data)} bytes]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                mime = getattr(resource, "mime_type", None) or "binary"
                size = _base64_bytes(getattr(resource, "blob", ""))
                parts.append(f"[{mime} resource {resource.uri}, {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.uri}]")
        else:
            parts.append(f"[{kind or type(block).__name__} content]")
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False, sort_keys=True)
    return "\n".join(parts)


class _Server:
    """One declared server: started once, on first use; its failures stay."""

    def __init__(self, config: McpServerConfig, loop: _Loop, settings: _Settings) -> None:
        self.config = config
        self.loop = loop
        self.settings = settings
        self.token = os.urandom(8).hex()
        self.env = server_env(config, self.token, dict(os.environ))
        self.scrub = Credentials(
            [*settings.credentials.pairs, *Credentials.from_envs(config.env).pairs]
        ).scrub
        self._lock = threading.Lock()
        self._link: _Link | None = None
        self._specs: list[ToolSpec] | None = None
        self._failed: str | None = None
        self._errlog: Any = None

    @property
    def name(self) -> str:
        return self.config.name

    def specs(self) -> list[ToolSpec]:
        with self._lock:
            link = self._started()
            if self._specs is None:
                wait = self.settings.start_timeout_s + _SETTLE_S
                self._specs = self._tool_specs(self._wait(self._list(link), wait, "tools/list"))
            return self._specs

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> str:
        with self._lock:
            link = self._started()
        return self._wait(self._call(link, tool, arguments, timeout_s), timeout_s + _SETTLE_S, tool)

    def _wait(self, work: Coroutine[Any, Any, _T], wait_s: float, what: str) -> _T:
        try:
            return self.loop.run(work, wait_s)
        except TimeoutError:  # the loop's own deadlines did not answer: never hang a step
            raise self._fail(f"did not answer {what} within {wait_s:g} s") from None

    def _started(self) -> _Link:
        """The running link (started now, once); McpServerError when it failed, now or before."""
        if self._failed is not None:
            raise McpServerError(self._failed)
        if self._link is None:
            problem = self._cannot_run()
            if problem is not None:
                raise self._fail(f"would not start: {problem}", stderr=False)
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
            wait = self.settings.start_timeout_s + 2 * _SETTLE_S
            self._link = self._wait(self._open(), wait, "the MCP handshake")
        return self._link

    def _cannot_run(self) -> str | None:
        """Why the command cannot be started at all (missing, not executable), or None."""
        command, cwd = self.config.command, self.config.cwd
        if cwd is not None and not Path(cwd).is_dir():
            return f"its cwd {cwd!r} is not a directory"
        if "/" in command or os.sep in command:
            path = Path(cwd or ".") / command
            if not (path.is_file() and os.access(path, os.X_OK)):
                return f"{str(path)!r} is not an executable file"
            return None
        if shutil.which(command, path=self.env.get("PATH")) is None:
            return f"there is no program {command!r} on its PATH ({self.env.get('PATH', '')})"
        return None

    def _argv(self) -> list[str]:
        """The guard and the server's command (the server alone where there is no guard)."""
        command = [self.config.command, *self.config.args]
        if os.name != "posix":  # the SDK ends a server's process tree by a job object there
            return command
        grace = f"{self.settings.grace_s:g}"
        return [sys.executable, "-I", str(_GUARD), str(os.getpid()), grace, "--", *command]

    async def _open(self) -> _Link:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv = self._argv()
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=self.env, cwd=self.config.cwd
        )
        link = _Link()
        link.task = asyncio.get_running_loop().create_task(
            link.hold(stdio_client(params, errlog=self._errlog))
        )
        timeout = self.settings.start_timeout_s
        try:
            await link.guarded(link.ready.wait(), timeout)
        except TimeoutError:
            await link.abort(_SETTLE_S)
            raise self._fail(f"did not answer the MCP handshake within {timeout:g} s") from None
        except _Broken:
            await link.abort(_SETTLE_S)
            raise self._garbage(link) from None
        if link.failure is not None:
            await link.abort(_SETTLE_S)
            raise self._fail(f"would not start: {await self._why(link.failure)}") from None
        return link

    async def _why(self, failure: BaseException) -> str:
        """What a failed handshake or call says of the server."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(failure, MCPError) and failure.code == CONNECTION_CLOSED:
            return f"it closed its stdout before the MCP handshake ({await self._ending()})"
        if isinstance(failure, MCPError):
            return f"it refused the MCP handshake: {failure.message}"
        return f"the MCP handshake failed: {type(failure).__name__}: {failure}"

    async def _ending(self) -> str:
        """How the server ended, as its guard says on stderr (waited for a moment)."""
        import anyio

        with anyio.move_on_after(self.settings.grace_s + 2.0):
            while True:
                said = [line for line in self._stderr() if line.startswith(mcp_guard.SAYS)]
                if said:
                    return said[-1].removeprefix(mcp_guard.SAYS).strip()
                if os.name != "posix":
                    break
                await anyio.sleep(0.02)  # the guard writes it as the server's exit reaches it
        return "how it ended is unknown"

    async def _list(self, link: _Link) -> list[Any]:
        from mcp.shared.exceptions import MCPError

        tools: list[Any] = []
        cursor: str | None = None
        try:
            for _ in range(_PAGES):
                page = await link.guarded(
                    link.client.list_tools(cursor=cursor), self.settings.start_timeout_s
                )
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except TimeoutError:
            raise self._fail(
                f"did not list its tools within {self.settings.start_timeout_s:g} s"
            ) from None
        except _Broken:
            raise self._garbage(link) from None
        except MCPError as exc:
            raise await self._call_failed(exc, "while listing its tools") from None
        return tools

    def _tool_specs(self, tools: list[Any]) -> list[ToolSpec]:
        names = [tool.name for tool in tools]
        unknown = [name for name in self.config.pure_tools if name not in names]
        if unknown:
            raise McpServerError(
                f"MCP server {self.name!r}: pure_tools names {', '.join(map(repr, unknown))}, "
                f"which it does not have (its tools: {', '.join(names) or 'none'})"
            )
        return [
            ToolSpec(
                name=f"{self.name}.{tool.name}",
                description=tool.description or "",
                input_schema=dict(tool.input_schema),
                pure=tool.name in self.config.pure_tools,
                source=f"mcp server {self.name}",
            )
            for tool in tools
        ]

    async def _call(
        self, link: _Link, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> str:
        from mcp.shared.exceptions import MCPError
        from pydantic import ValidationError

        try:
            result = await link.guarded(link.client.call_tool(tool, arguments), timeout_s)
        except TimeoutError:
            raise ToolTimeout(
                f"{self.name}.{tool} did not answer within {timeout_s:g} s; the call was "
                "cancelled (the server goes on)"
            ) from None
        except _Broken:
            raise self._garbage(link) from None
        except MCPError as exc:
            raise await self._call_failed(exc, f"during a call of {tool}") from None
        except ValidationError:
            raise self._fail(f"answered a call of {tool} with what is not an MCP result") from None
        text = answer_text(result.content, result.structured_content)
        if result.is_error:
            raise McpToolError(text or f"{self.name}.{tool} answered an error and no text")
        return text

    async def _call_failed(self, exc: Exception, when: str) -> Exception:
        """The error for an MCPError: the server died, or it answered with an error."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            ending = await self._ending()
            return self._fail(f"died {when} ({ending}); it is not restarted within this run")
        return McpToolError(str(getattr(exc, "message", exc)))

    def _garbage(self, link: _Link) -> McpServerError:
        return self._fail(
            f"wrote what is not MCP on its stdout: {link.garbage} (an MCP server over stdio "
            "writes only JSON-RPC messages there; logs belong on stderr)"
        )

    def _fail(self, what: str, *, stderr: bool = True) -> McpServerError:
        """The error for ``what`` happened, which stays: later calls raise it again."""
        command = shlex.join([self.config.command, *self.config.args])
        if len(command) > _LINE_CHARS:
            command = command[:_LINE_CHARS] + "…"
        text = f"MCP server {self.name!r} ({command}) {what}"
        tail = [line for line in self._stderr() if not line.startswith(mcp_guard.SAYS)]
        if stderr and tail:
            text += "; its stderr ended with:\n" + "\n".join(f"  {line}" for line in tail)
        self._failed = self.scrub(text)
        return McpServerError(self._failed)

    def _stderr(self) -> list[str]:
        """The last lines the server (and its guard) wrote to stderr, each cut short."""
        if self._errlog is None:
            return []
        try:
            fd = self._errlog.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, _STDERR_READ, max(0, size - _STDERR_READ))
        except (OSError, ValueError, AttributeError):  # closed, or no pread (Windows)
            return []
        lines = [line.rstrip() for line in data.decode("utf-8", "replace").splitlines()]
        return [line[:_LINE_CHARS] for line in lines if line.strip()][-STDERR_LINES:]

    async def stop(self) -> None:
        """Close the server's link (it ends, and its guard with everything it started)."""
        if self._link is not None:
            await self._link.close(_SETTLE_S / 2)
        self._failed = self._failed or f"MCP server {self.name!r}: the run's MCP servers are closed"

    def release(self) -> None:
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()


class _Settings:
    """What every server of a run shares: credentials to scrub, start-up deadline, grace."""

    def __init__(self, credentials: Credentials, start_timeout_s: float, grace_s: float) -> None:
        self.credentials = credentials
        self.start_timeout_s = start_timeout_s
        self.grace_s = grace_s


class McpServers:
    """The MCP servers of one run: each started on first use, all stopped by :meth:`close`.

    Safe to call from several threads: a server is started once, whoever asks first.
    """

    def __init__(
        self,
        configs: dict[str, McpServerConfig],
        *,
        credentials: Credentials | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        grace_s: float = STOP_GRACE_S,
    ) -> None:
        self.configs = configs
        self.credentials = credentials
        self._settings = _Settings(
            credentials if credentials is not None else Credentials.from_env(),
            start_timeout_s,
            grace_s,
        )
        self._lock = threading.Lock()
        self._servers: dict[str, _Server] = {}
        self._loop: _Loop | None = None
        self._closed = False

    def specs(self, server: str) -> list[ToolSpec]:
        """The tools of ``server`` as ``server.tool`` (starting it, once)."""
        return self._server(server).specs()

    def call(self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """The text ``tool`` of ``server`` answers for ``arguments``.

        McpToolError when the tool answers an error, ToolTimeout past ``timeout_s`` (the
        call is cancelled, the server goes on), McpServerError when the server fails.
        """
        return self._server(server).call(tool, arguments, timeout_s)

    def _server(self, name: str) -> _Server:
        with self._lock:
            if self._closed:
                raise McpServerError(f"MCP server {name!r}: the run's MCP servers are closed")
            found = self._servers.get(name)
            if found is not None:
                return found
            config = self.configs.get(name)
            if config is None:
                declared = ", ".join(self.configs) or "none"
                raise McpServerError(
                    f"there is no MCP server {name!r} (runtime.yaml mcp_servers: {declared})"
                )
            if self._loop is None:
                _require_sdk()
                self._loop = _Loop()
            found = self._servers[name] = _Server(config, self._loop, self._settings)
            return found

    def close(self) -> None:
        """Stop every server started (closing its stdin, then SIGTERM, then SIGKILL)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            servers, loop = list(self._servers.values()), self._loop
        if loop is None:
            return
        futures = [loop.submit(server.stop()) for server in servers]
        for future in futures:
            with contextlib.suppress(Exception):
                future.result(_SETTLE_S * 2)
        _end_marked([server.token for server in servers])
        loop.stop()
        for server in servers:
            server.release()


def _end_marked(tokens: list[str]) -> None:
    """SIGKILL whatever still carries a server's mark (a guard ends them; this is in case)."""
    import signal
    import time

    deadline = time.monotonic() + 2.0
    while (left := mcp_guard.marked(tokens)) and time.monotonic() < deadline:
        mcp_guard.kill(left, signal.SIGKILL)
        time.sleep(0.01)  # SIGKILL lands within moments
