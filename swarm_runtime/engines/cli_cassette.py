"""Record and replay of CLI steps: a loopback server between the CLI and its provider.

A CLI is a separate process, so vcrpy cannot see its HTTP. Instead the engine points the
CLI's base URL (``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``) at a server on
127.0.0.1. Recording, the server forwards each request to the real provider and keeps
the exchange; replaying, it answers from the cassette and never opens a connection.
Cassettes use the layout of SDK cassettes (``<flow>/<step>-<agent>-<iteration>.yaml``,
one per step call); their first line, ``recorded_via: cli``, tells replay to run the CLI.

Requests match on method, path and the parts of the body that do not change from one run
to the next: the CLI's own session ids, dates, context blocks (``<system-reminder>``,
``<session_context>``), tool definitions and settings, the paths of the checkout and the
home dir, and what tools printed (they run again, live, in a replay) are left out. A
request with no recording fails the step, naming the cassette, the difference and the
command that re-records. Credential headers are never kept, a credential's value in a
response body is scrubbed, paths are replaced by placeholders (a replay puts the paths of
its own checkout and home back), and every cassette is scanned for credential values
before it is written.
A fault plan's HTTP faults are answered before any of this (:mod:`.fault_loopback`).
"""

from __future__ import annotations

import difflib
import http.client
import json
import threading
import urllib.parse
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import StepContext
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.cli import ClaudeCliEngine, CliEngine, GeminiCliEngine
from swarm_runtime.engines.cli_match import MARKER, placeholders, request_key, restore
from swarm_runtime.engines.fault_loopback import LoopbackFaults, start_loopback
from swarm_runtime.engines.faults import HTTP_KINDS, FaultInjector
from swarm_runtime.engines.process import ProcessEnd
from swarm_runtime.engines.streams import StreamReport
from swarm_runtime.errors import CredentialLeak, ReplayDivergence
from swarm_runtime.storage.store import write_text_atomic

_HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "accept-encoding", "transfer-encoding", "keep-alive"}
)
_UPSTREAM_TIMEOUT_S = 600.0


def _body(text: str) -> dict[str, Any]:
    """A request body as the cassette keeps it: JSON as a mapping (readable), else text."""
    try:
        return {"json": json.loads(text)} if text else {"body": ""}
    except ValueError:
        return {"body": text}


def _body_text(request: Mapping[str, Any]) -> str:
    if "json" in request:
        return json.dumps(request["json"])
    return str(request.get("body") or "")


def _literal(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value else None  # streamed replies read as they were sent
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Dumper(yaml.SafeDumper):
    """YAML with multi-line strings as literal blocks."""


_Dumper.add_representer(str, _literal)


class _Tape:
    """The exchanges of one cassette, and which of them were played."""

    def __init__(self, path: Path, label: str, interactions: list[dict[str, Any]]) -> None:
        self.path = path
        self.label = label
        self.interactions = interactions
        self.played = [False] * len(interactions)
        self.keys = [
            request_key(i["request"]["method"], i["request"]["path"], _body_text(i["request"]))
            for i in interactions
        ]
        self.misses: list[str] = []
        self.refused: str | None = None

    def take(self, key: str) -> dict[str, Any] | None:
        """The response of the first unplayed recorded call like ``key``, now played."""
        for index, recorded in enumerate(self.keys):
            if not self.played[index] and recorded == key:
                self.played[index] = True
                return dict(self.interactions[index]["response"])
        return None


class CassetteServer:
    """A loopback HTTP server that records to, or answers from, the current cassette."""

    def __init__(
        self,
        cassettes: Cassettes,
        *,
        upstream: str,
        provider: str,
        credentials: Credentials,
        injector: FaultInjector | None = None,
    ) -> None:
        self.cassettes = cassettes
        self.faults = LoopbackFaults(injector)
        """A fault plan's faults, served before the cassette sees a request."""
        self.upstream = upstream
        self.provider = provider
        self.credentials = credentials
        self.tapes: dict[Path, _Tape] = {}
        self.current: _Tape | None = None
        self.paths: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The base URL the CLI is pointed at (the server starts on first use)."""
        if self._server is None:
            self._start()
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _start(self) -> None:
        self._server = start_loopback(self.answer, self.faults, self.stand_in)

    def use(self, path: Path, paths: Mapping[str, str]) -> _Tape:
        """Make ``path`` the cassette the next requests go to (loaded once per run)."""
        with self._lock:
            tape = self.tapes.get(path)
            if tape is None:
                tape = self.tapes[path] = _Tape(
                    path,
                    self.cassettes.label(path),
                    [] if self.cassettes.record else self._load(path),
                )
            self.current = tape
            self.paths = dict(paths)
        self.faults.next_attempt()
        return tape

    def _load(self, path: Path) -> list[dict[str, Any]]:
        from swarm_runtime.inputs.files import read_text_limited
        from swarm_runtime.inputs.yaml_input import load_yaml

        if not path.is_file():
            return []
        document = load_yaml(read_text_limited(path))
        interactions = document.get("interactions") if isinstance(document, dict) else None
        if not isinstance(interactions, list):
            raise ReplayDivergence(
                f"cassette {self.cassettes.label(path)} has no interactions list"
            )
        return interactions

    def answer(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, str, bytes]:
        """The reply to one request from the CLI."""
        text = placeholders(body.decode("utf-8", "replace"), self.paths)
        with self._lock:
            tape = self.current
        if tape is None:
            return self._error("a request arrived while no step was running")
        if self.cassettes.record:
            return self._record(tape, method, path, headers, body, text)
        key = request_key(method, path, text)
        with self._lock:
            response = tape.take(key)
            if response is None:
                tape.misses.append(self._difference(tape, key))
        if response is None:
            return self._error(
                f"swarm replay: no recorded call in {tape.label} matches this request"
            )
        return (
            int(response["status"]),
            str(response.get("content_type") or "application/json"),
            # The paths of this checkout and home, where the recording had placeholders: a
            # tool call's input then points where it should.
            restore(str(response["body"]), self.paths).encode("utf-8"),
        )

    def stand_in(self, method: str, path: str, body: bytes) -> None:
        """A reply fault answered this request: a replay uses up the recorded call it replaces."""
        key = request_key(method, path, placeholders(body.decode("utf-8", "replace"), self.paths))
        with self._lock:
            if self.current is not None and not self.cassettes.record:
                self.current.take(key)

    def _difference(self, tape: _Tape, key: str) -> str:
        unplayed = [k for k, played in zip(tape.keys, tape.played, strict=True) if not played]
        if not tape.keys:
            return f"there is no recording {tape.label}"
        if not unplayed:
            return f"every recorded call of {tape.label} was played already; this one is extra"
        diff = list(
            difflib.unified_diff(
                unplayed[0].splitlines(), key.splitlines(), "recorded", "sent", n=1, lineterm=""
            )
        )
        return "\n".join(
            diff[:24] + ([f"… ({len(diff) - 24} more diff lines)"] if len(diff) > 24 else [])
        )

    def _record(
        self,
        tape: _Tape,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        text: str,
    ) -> tuple[int, str, bytes]:
        target = urllib.parse.urlsplit(self.upstream)
        connection_class = (
            http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_class(target.netloc, timeout=_UPSTREAM_TIMEOUT_S)
        forwarded = {k: v for k, v in headers.items() if k not in _HOP_HEADERS}
        forwarded["accept-encoding"] = "identity"
        try:
            connection.request(method, target.path.rstrip("/") + path, body=body, headers=forwarded)
            response = connection.getresponse()
            payload = response.read()
            content_type = response.getheader("content-type") or "application/json"
            status = response.status
        except OSError as exc:
            return self._error(f"swarm record: cannot reach {self.upstream}: {exc}", 502)
        finally:
            connection.close()
        interaction = {
            "request": {"method": method, "path": path, **_body(text)},
            "response": {
                "status": status,
                "content_type": content_type,
                # A server that echoes a key gets it scrubbed (docs/record-replay.md#secrets); the
                # CLI gets the reply as it came, and the run's own files are scanned as ever.
                "body": self.credentials.scrub(
                    placeholders(payload.decode("utf-8", "replace"), self.paths)
                ),
            },
        }
        try:
            self.credentials.check(
                json.dumps(interaction), f"cassette {tape.label} (a recorded exchange)"
            )
        except CredentialLeak as exc:
            tape.refused = str(exc)
            return self._error("swarm record: refused to record a credential", 500)
        with self._lock:
            tape.interactions.append(interaction)
            tape.played.append(True)
        return status, content_type, payload

    def _error(self, message: str, status: int = 400) -> tuple[int, str, bytes]:
        if self.provider == "gemini":
            body: dict[str, Any] = {
                "error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}
            }
        else:
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return status, "application/json", json.dumps(body).encode()

    def close(self) -> None:
        """Stop serving; write what was recorded, or note recordings never played."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for tape in self.tapes.values():
            if not self.cassettes.record:
                left = tape.played.count(False)
                if left:
                    self.cassettes.unplayed.append(
                        f"{tape.label}: {left} recorded call(s) never played"
                    )
                continue
            if tape.refused or not tape.interactions:
                continue
            document = yaml.dump(
                {"interactions": tape.interactions},
                Dumper=_Dumper,
                sort_keys=False,
                allow_unicode=True,
                width=100,
            )
            text = f"{MARKER}\n{document}"
            self.credentials.check(text, f"cassette {tape.label}")
            tape.path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(tape.path, text)


class _CassetteCli(CliEngine):
    """A CLI engine whose provider traffic goes through a :class:`CassetteServer`."""

    base_url_variable = ""
    key_variable = ""
    default_upstream = ""

    def __init__(
        self, *, cassettes: Cassettes, faults: FaultInjector | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.cassettes = cassettes
        self.server = CassetteServer(
            cassettes,
            upstream=self.base_env.get(self.base_url_variable) or self.default_upstream,
            provider=self.provider,
            credentials=Credentials.from_env(self.base_env),
            injector=faults if self.fault_kinds >= HTTP_KINDS else None,
        )
        if not cassettes.record:  # a replay needs no key, but a CLI will not start without one
            self.base_env[self.key_variable] = "replay-needs-no-key"

    def cassette_for(self, ctx: StepContext) -> str | None:
        """A recorded or replayed call names its cassette."""
        return self.cassettes.label(self.cassettes.path(ctx))

    def env(self, ctx: StepContext) -> dict[str, str]:
        """The CLI's environment, pointed at the loopback server (no key needed to replay)."""
        env = super().env(ctx)
        env[self.base_url_variable] = self.server.url
        return env

    def launch(self, ctx: StepContext, report: StreamReport, timeout: float) -> ProcessEnd:
        """The call, with the server on this step's cassette; a miss or a refusal raises."""
        path = self.cassettes.path(ctx)
        env = self.env(ctx)
        paths = {
            "repo": str(ctx.repo_root),
            "home": env.get("HOME", ""),
            "scratch": str(self.scratch),
        }
        tape = self.server.use(path, paths)
        self.cassettes.played.add(self.cassettes.directory / path.relative_to(self.cassettes.root))
        misses = len(tape.misses)
        end = super().launch(ctx, report, timeout)
        if tape.refused:
            raise CredentialLeak(tape.refused)
        if len(tape.misses) > misses:
            missing = not tape.keys  # no recording of this call at all
            raise self.cassettes.divergence(ctx, tape.label, tape.misses[misses], missing=missing)
        return end

    def close(self) -> None:
        """Write or check the cassettes, then the scratch dir."""
        try:
            self.server.close()
        finally:
            super().close()


class CassetteClaudeCliEngine(_CassetteCli, ClaudeCliEngine):
    """``claude-step`` through the Claude Code CLI, recorded or replayed."""

    base_url_variable = "ANTHROPIC_BASE_URL"
    key_variable = "ANTHROPIC_API_KEY"
    default_upstream = "https://api.anthropic.com"
    fault_kinds = HTTP_KINDS | {"cli_exit"}  # the HTTP kinds through the loopback server


class CassetteGeminiCliEngine(_CassetteCli, GeminiCliEngine):
    """``gemini-step`` through the Gemini CLI, recorded or replayed."""

    base_url_variable = "GOOGLE_GEMINI_BASE_URL"
    key_variable = "GEMINI_API_KEY"
    default_upstream = "https://generativelanguage.googleapis.com"
