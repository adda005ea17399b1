"""Serving the studio: a socket bound first (so a busy port is a clear error), then uvicorn.

Loopback is the default. Any other address is served only when asked for, with a warning,
and then the host check is off: the studio can be reached by that address's name.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any, TextIO

from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.install import install_command
from swarm_runtime.record import replace
from swarm_runtime.studio.app import StudioConfig, create_app


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


def host_names(host: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The names the studio answers to when bound to ``host`` (besides IP addresses)."""
    names = ["localhost", *extra]
    if not is_loopback(host):
        names.append(socket.gethostname())
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        names.append(host)  # bound by name: that name
    return tuple(dict.fromkeys(n for n in names if n))


def serve(config: StudioConfig, *, host: str, port: int, out: TextIO = sys.stdout) -> None:
    """Serve the studio until Ctrl-C; runs started from the page are cancelled at the end."""
    try:
        import uvicorn
    except ImportError:
        raise SwarmUsageError(
            f"swarm studio needs the studio extra: {install_command('studio')}"
        ) from None
    if not is_loopback(host):
        print(
            f"swarm studio: warning: serving on {host}, not loopback: anyone who can reach "
            "this address can read every run here and start or stop runs",
            file=sys.stderr,
        )
    config = replace(config, allowed_hosts=host_names(host, config.allowed_hosts))
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
