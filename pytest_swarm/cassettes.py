"""Record and replay of real SDK calls with vcrpy: one cassette per step call (SPEC §10.4).

``<cassette dir>/<scenario>/<flow>/<step>-<agent>-<iteration>.yaml``, so a divergence
names its step. Requests match on method, path and JSON body (not host or port: a
recording made against any server replays anywhere). Replay is strict: a request with no
recording fails with flow, step, iteration, the part of the body that differs, and the
command that re-records. Before anything is written, credential headers are removed and
the cassette is scanned for every credential value in the environment.
vcrpy is imported here, and this module only in the replay and record modes.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import vcr  # type: ignore[import-untyped]
from vcr.errors import CannotOverwriteExistingCassetteException  # type: ignore[import-untyped]

from swarm_runtime.credentials import credential_values, find_credentials
from swarm_runtime.engines.base import StepContext
from swarm_runtime.engines.sdk import SdkEngine
from swarm_runtime.errors import CredentialLeak, ReplayDivergence

__all__ = [
    "CassetteSdkEngine",
    "CredentialLeak",
    "ReplayDivergence",
]

DROPPED_HEADERS = re.compile(
    r"^(authorization|x-api-key|cookie|set-cookie|anthropic-.*-id|request-id)$", re.I
)


def _json_body(r1: Any, r2: Any) -> None:
    def load(request: Any) -> Any:
        body = request.body
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        try:
            return json.loads(body or "null")
        except json.JSONDecodeError:
            return body

    assert load(r1) == load(r2), "request bodies differ"


def _scrub_headers(headers: Any) -> None:
    for name in list(headers):
        if DROPPED_HEADERS.match(name):
            del headers[name]


def _body_diff(recorded: Any, sent: Any, limit: int = 24) -> str:
    def pretty(request: Any) -> list[str]:
        body = request.body
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        try:
            value = json.loads(body or "null")
        except json.JSONDecodeError:
            return str(body).splitlines()
        lines: list[str] = []
        for key, item in sorted(value.items()) if isinstance(value, dict) else []:
            text = item if isinstance(item, str) else json.dumps(item, sort_keys=True, indent=1)
            lines.extend(f"{key}| {line}" for line in text.splitlines())
        return lines

    diff = [
        line
        for line in difflib.unified_diff(
            pretty(recorded), pretty(sent), "recorded", "sent", n=1, lineterm=""
        )
    ]
    if len(diff) > limit:
        diff = [*diff[:limit], f"… ({len(diff) - limit} more diff lines)"]
    return "\n".join(diff)


class CassetteSdkEngine(SdkEngine):
    """The sdk engine whose HTTP is recorded to, or served from, one cassette per call."""

    def __init__(
        self,
        client: Any,
        *,
        cassette_dir: Path,
        scenario: str,
        record: bool,
        rerecord_command: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(client, **kwargs)
        self.cassette_dir = Path(cassette_dir)
        self.scenario = scenario
        self.record = record
        self.rerecord_command = rerecord_command
        self.played: set[Path] = set()
        self.unplayed: list[str] = []
        self._open: dict[Path, tuple[Any, Any]] = {}
        self._current: Path | None = None
        self.secrets = credential_values()
        self._vcr = vcr.VCR(
            record_mode="all" if record else "none",
            match_on=("method", "path", "json_body"),
            before_record_request=self._before_request,
            before_record_response=self._before_response,
            decode_compressed_response=True,
        )
        self._vcr.register_matcher("json_body", _json_body)

    def cassette_path(self, ctx: StepContext) -> Path:
        """Where this call's cassette lives."""
        agent = ctx.step_agents[0]
        return (
            self.cassette_dir
            / self.scenario
            / ctx.flow_key
            / (f"{ctx.step_id}-{agent}-{ctx.iteration}.yaml")
        )

    def _refuse_secrets(self, text: str, what: str) -> None:
        found = find_credentials(text, self.secrets)
        if found:
            raise CredentialLeak(
                f"refusing to write cassette {self._current}: the {what} holds the value of a "
                f"credential from the environment ({', '.join(found)})"
            )

    def _before_request(self, request: Any) -> Any:
        _scrub_headers(request.headers)
        body = (
            request.body.decode("utf-8", "replace")
            if isinstance(request.body, bytes)
            else str(request.body or "")
        )
        self._refuse_secrets(body + request.uri, "request")
        return request

    def _before_response(self, response: dict[str, Any]) -> dict[str, Any]:
        headers = response.get("headers") or {}
        _scrub_headers(headers)
        body = (response.get("body") or {}).get("string", b"")
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        self._refuse_secrets(text, "response")
        return response

    def cassette_for(self, ctx: StepContext) -> str | None:
        """A recorded or replayed call names its cassette."""
        return self.cassette_path(ctx).relative_to(self.cassette_dir).as_posix()

    def _cassette(self, path: Path) -> Any:
        # A cassette stays open for the whole run, so the retries of a call play (or
        # record) its interactions in order; close() writes and checks them.
        if path not in self._open:
            if self.record:
                path.parent.mkdir(parents=True, exist_ok=True)
            manager = self._vcr.use_cassette(str(path))
            self._open[path] = (manager, manager.__enter__())
        return self._open[path][1]

    def create_message(self, ctx: StepContext, **request: Any) -> Any:
        """The call, inside this step's cassette."""
        import anthropic

        path = self.cassette_path(ctx)
        where = f"{ctx.flow_key}/{ctx.step_id} iteration {ctx.iteration}"
        self._current = path
        cassette = self._cassette(path)
        self.played.add(path)
        try:
            return super().create_message(ctx, **request)
        except anthropic.APIConnectionError as exc:
            cause: BaseException | None = exc
            while cause is not None and not isinstance(
                cause, CannotOverwriteExistingCassetteException
            ):
                cause = cause.__cause__ or cause.__context__
            if cause is None:
                raise
            recorded = list(cassette.requests)
            detail = (
                _body_diff(recorded[0], cause.failed_request)
                if recorded
                else f"there is no cassette {path}"
            )
            raise ReplayDivergence(
                f"replay of {where}: no recorded call matches this request "
                f"(cassette {path.relative_to(self.cassette_dir)}).\n{detail}\n"
                f"Re-record with: {self.rerecord_command}"
            ) from None

    def close(self) -> None:
        """Write recorded cassettes; in replay, note recordings that were never played."""
        try:
            # Each open cassette patches the HTTP transports over the one before it: undo
            # them in reverse order, or an original transport is never put back.
            for path, (manager, cassette) in reversed(list(self._open.items())):
                if not self.record and not cassette.all_played:
                    self.unplayed.append(
                        f"{path.relative_to(self.cassette_dir)}: "
                        f"{len(cassette) - cassette.play_count} recorded call(s) never played"
                    )
                manager.__exit__(None, None, None)
        finally:
            self._open.clear()
            super().close()
