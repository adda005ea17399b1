"""No connection off this machine during a test, where a test must not need one (replay).

``--swarm-block-network`` (on by default in replay) refuses every connection a test makes
to an address that is not loopback, whatever makes it (the SDK, a helper, a library), so a
replay that would quietly reach the internet fails instead, naming where it tried to go.
Loopback and unix sockets stay open: a test's own local servers keep working.
"""

from __future__ import annotations

import ipaddress
import socket
from types import TracebackType
from typing import Any


def _loopback(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # a unix socket's path, or something that is no internet address
    host = str(address[0]).split("%")[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name to resolve: somewhere else


class NetworkGuard:
    """While entered, ``socket.connect`` to a non-loopback address is refused and noted."""

    def __init__(self, mode: str = "replay", source: str = "default") -> None:
        self.mode = mode
        """The session's mode: what the message says the network is blocked for."""
        self.source = source
        """Where ``--swarm-block-network`` came from (a flag, a variable, an ini key)."""
        self.attempts: list[str] = []
        self._saved: tuple[Any, Any] | None = None

    def __enter__(self) -> NetworkGuard:
        guard = self
        connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

        def refuse(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
                where = f"{address[0]}:{address[1]}" if len(address) > 1 else str(address[0])
                guard.attempts.append(where)
                raise ConnectionRefusedError(f"swarm: network blocked: {where}")

        def guarded(sock: socket.socket, address: Any) -> Any:
            refuse(sock, address)
            return connect(sock, address)

        def guarded_ex(sock: socket.socket, address: Any) -> Any:
            refuse(sock, address)
            return connect_ex(sock, address)

        self._saved = (connect, connect_ex)
        socket.socket.connect = guarded  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_ex  # type: ignore[method-assign,assignment]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            socket.socket.connect, socket.socket.connect_ex = self._saved  # type: ignore[method-assign]
            self._saved = None

    def message(self, nodeid: str) -> str:
        """Why the test fails: where it tried to connect, and how to allow it."""
        where = ", ".join(dict.fromkeys(self.attempts))
        head = f"swarm: {nodeid} tried to connect to {where} while the network is blocked"
        if self.mode == "replay":
            return (
                f"{head} (replay serves every call from cassettes); a live call needs "
                "--swarm-mode=record, or pass --swarm-block-network=no to allow connections"
            )
        why = (
            "the stub calls no model, so the test or a library it uses made this connection"
            if self.mode == "stub"
            else f"{self.mode} mode calls the model's server, and that is blocked too"
        )
        given = (
            f"{self.source.removeprefix('ini ')} = yes in the ini file"
            if self.source.startswith("ini ")
            else f"{self.source}=yes"
        )
        return (
            f"{head} ({given}; {why}); pass --swarm-block-network=no (or auto, which blocks "
            "in replay only) to allow connections"
        )
