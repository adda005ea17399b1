"""Serving the studio: a socket bound first (so a busy port is a clear error), then uvicorn.

Loopback is the default. Any other address is served only when asked for, with a warning
that names the hosts the studio then answers to (see :func:`host_names`).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
from typing import Any, TextIO

from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.install import install_command
from swarm_runtime.record import replace
from swarm_runtime.studio.app import StudioConfig, create_app
from swarm_runtime.studio.guard import LOOPBACK_HOSTS


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); a usage error when busy."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise SwarmUsageError(f"--host {host}: cannot resolve it ({exc.strerror})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise SwarmUsageError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pass another --port (0 picks a "
            "free one)"
        ) from None
    sock.setblocking(False)
    return sock


_HOST_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


def _as_host(name: str, where: str) -> str:
    """``name`` as a ``Host`` header gives it: an IPv6 address in brackets."""
    bare = name.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        if _HOST_NAME_RE.fullmatch(name):
            return name
        raise SwarmUsageError(
            f"{where} {name!r}: not a host name or IP address (letters, digits, '.' and '-'; "
            "no wildcards)"
        ) from None
    return f"[{bare}]" if address.version == 6 else bare


def host_names(host: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The names and addresses the studio answers to when bound to ``host``.

    Loopback ones always; beyond loopback also ``host`` itself (unless it is every
    address, 0.0.0.0 or ::), this machine's name and each ``--allow-host`` in ``extra``.
    """
    names = [*LOOPBACK_HOSTS, *(_as_host(name, "--allow-host") for name in extra)]
    if not is_loopback(host):
        names.append(socket.gethostname())
    if host.strip("[]") not in ("0.0.0.0", "::"):
        names.append(_as_host(host, "--host"))
    return tuple(dict.fromkeys(n.lower() for n in names if n))


def serve(config: StudioConfig, *, host: str, port: int, out: TextIO = sys.stdout) -> None:
    """Serve the studio until Ctrl-C; runs started from the page are cancelled at the end."""
    try:
        import uvicorn
    except ImportError:
        raise SwarmUsageError(
            f"swarm studio needs the studio extra: {install_command('studio')}"
        ) from None
    config = replace(config, allowed_hosts=host_names(host, config.allowed_hosts))
    if not is_loopback(host):
        print(
            f"swarm studio: warning: serving on {host}, not loopback: anyone who can reach "
            "this address can read every run here and start or stop runs; it answers to "
            f"{', '.join(config.allowed_hosts)} (--allow-host NAME adds a name or address)",
            file=sys.stderr,
        )
    sock = bind(host, port)
    app = create_app(config)
    bound: Any = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    print(f"Flow Studio: http://{shown}:{bound[1]}/", file=out)
    print(f"  runs: {config.runs_dir}   flows: {config.flows_dir}   (Ctrl-C stops)", file=out)
    out.flush()
    closing = app.state.studio.closing

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            closing.set()  # open event streams end now, so the server stops at once
            super().handle_exit(sig, frame)

    server = Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl-C once it has shut down: for a server, a normal end
    finally:
        app.state.studio.actions.shutdown()
        app.state.studio.index.close()
        sock.close()
