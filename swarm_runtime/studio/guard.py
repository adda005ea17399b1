"""The studio's guard: who may reach it, who may change things, and what a page may run.

* **Host.** The studio answers a request addressed to one of its names (``localhost``,
  ``127.0.0.1``, ``[::1]``; beyond loopback also the address it is bound to, this
  machine's name and ``--allow-host`` ones): Starlette's ``TrustedHostMiddleware``
  answers any other ``Host`` with a 400, so a web page whose own domain was made to
  resolve to the studio's address (DNS rebinding) cannot read runs through it.
* **Other sites.** A request a browser marks as coming from another site is refused, but
  for following a link to the page itself.
* **Same origin.** A request that changes state (anything but GET, HEAD, OPTIONS) needs an
  ``Origin`` header naming the studio itself (or, without one, ``Sec-Fetch-Site:
  same-origin``), so another site open in the same browser cannot start or stop runs.
* **Headers.** Every response forbids MIME sniffing and framing, and a content security
  policy lets a page run only the studio's own script: model output that slipped through
  as markup still could not execute.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Scope = dict[str, Any]
Message = dict[str, Any]


def _other_site(headers: dict[str, str], method: str, path: str) -> bool:
    site = headers.get("sec-fetch-site")
    if site not in ("cross-site", "same-site"):
        return False
    return not (method == "GET" and path == "/" and headers.get("sec-fetch-mode") == "navigate")


def same_origin(headers: dict[str, str], scheme: str) -> bool:
    """Whether a state-changing request comes from a page of this server."""
    origin = headers.get("origin")
    host = headers.get("host", "")
    if origin is None or origin == "null":
        return origin is None and headers.get("sec-fetch-site") == "same-origin"
    parts = urlsplit(origin)
    return parts.scheme == scheme and parts.netloc == host


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The names a studio always answers to, as a ``Host`` header gives them."""


class GuardMiddleware:
    """ASGI middleware: the other-site and same-origin checks, the security headers.

    It wraps the host check (:data:`LOOPBACK_HOSTS` and the rest, by
    ``TrustedHostMiddleware``), so a refused ``Host`` gets the security headers too.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if _other_site(headers, scope["method"], scope["path"]):
            await _refuse(send, 403, "the studio does not answer requests from other sites")
            return
        if scope["method"] not in _SAFE_METHODS and not same_origin(
            headers, scope.get("scheme", "http")
        ):
            await _refuse(
                send,
                403,
                "a request that changes state must come from the studio's own page "
                f"(send 'Origin: http://{headers.get('host', '')}')",
            )
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse(send: Any, status: int, text: str) -> None:
    body = json.dumps({"error": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
