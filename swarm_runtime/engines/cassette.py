"""Record and replay of an engine's HTTP with vcrpy: one cassette per step call.

A :class:`Cassettes` is one directory of cassettes, ``<flow>/<step>-<agent>-<iteration>.yaml``
(the plugin gives each test its own; ``swarm run --cassette-dir`` names one). Requests match
on method, path and JSON body (not host or port: a recording made against any server
replays anywhere). Replay is strict: a request with no recording fails the step with flow,
step, iteration, the part of the body that differs, and the command that re-records.
Recording writes into a staging directory that replaces the old one whole once the run
is done, so a re-recording never leaves stale interactions behind; each file is written
atomically. Before anything is written, credential headers are removed, a credential's
value in a response (an echoing server's header or body) is scrubbed, and the cassette is
scanned for every credential value in the environment.

vcrpy is imported only when a cassette engine is built (record and replay modes); without
it, those modes stop with what to install.

See docs/record-replay.md#cassettes.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import StepContext
from swarm_runtime.engines.request_parts import changed_line, changed_parts
from swarm_runtime.errors import ConfigError, CredentialLeak, ReplayDivergence
from swarm_runtime.install import install_command
from swarm_runtime.storage.store import write_text_atomic

ENGINE_LINE = "engine: "
"""A cassette's first line names the engine that recorded it (docs/engines.md#engines-over-http)."""
DROPPED_HEADERS = re.compile(
    r"^(authorization|x-api-key|cookie|set-cookie|anthropic-.*-id|request-id"
    r"|openai-organization|openai-project)$",
    re.I,
)


class Cassettes:
    """One directory of cassettes, and what a run did with them.

    ``name`` is how receipts and messages refer to the directory (a test's cassette
    name, or the ``--cassette-dir`` given). In record mode files go to a staging
    directory until :meth:`commit` puts it in place of the old one.
    """

    def __init__(
        self,
        directory: Path,
        *,
        name: str,
        record: bool,
        rerecord_command: str,
        episodes: bool = False,
    ):
        self.directory = Path(directory)
        self.name = name
        self.record = record
        self.episodes = record and episodes
        """New episodes: a call whose request its cassette holds replays it; a call whose
        request changed (or that has none) is recorded in place of the old one; a
        cassette no call asked for goes (docs/record-replay.md#cassettes). Staged like a
        recording."""
        self.rerecord_command = rerecord_command
        # A symlinked directory is the directory it names: a recording is staged beside
        # that one and replaces it, and the link stays (replacing the link would leave its
        # target holding stale cassettes, and the link behind as ".name.old").
        self.real = Path(os.path.realpath(self.directory))
        self.root = self.real.with_name(f".{self.real.name}.recording")
        if record:
            shutil.rmtree(self.root, ignore_errors=True)  # a staging dir an earlier crash left
            if self.episodes and self.real.is_dir():
                shutil.copytree(self.real, self.root)  # what is kept, unless a call changed
        else:
            self.root = self.directory
        self.played: set[Path] = set()
        self.replayed: set[Path] = set()
        """New episodes: the cassettes of :attr:`played` served whole from their recording
        (nothing of theirs was recorded again)."""
        self.divergences: list[str] = []
        self.missing = 0
        """How many of the divergences are calls with no recording at all."""
        self.needs: set[str] = set()
        """What each engine recording to or replaying from here needs to record (its key or
        base URL): a re-record of a test records every engine's calls again."""
        self.unplayed: list[str] = []
        """Recorded calls a run never asked for, noted when its cassettes are closed."""

    def path(self, ctx: StepContext) -> Path:
        """Where this call's cassette lives (in the staging dir while recording)."""
        return self.root / ctx.flow_key / f"{ctx.step_id}-{ctx.step_agents[0]}-{ctx.iteration}.yaml"

    def label(self, path: Path) -> str:
        """A cassette as receipts name it: ``<name>/<flow>/<file>``."""
        relative = path.relative_to(self.root).as_posix()
        return f"{self.name}/{relative}" if self.name else relative

    def never_asked_for(self) -> list[str]:
        """Recordings in the directory that no call asked for (after a replay)."""
        if self.record or not self.directory.is_dir():
            return []
        return [
            f"{self.label(path)}: no call of this run asked for it"
            for path in sorted(self.directory.rglob("*.yaml"))
            if path not in self.played
        ]

    def divergence(
        self,
        ctx: StepContext,
        label: str,
        detail: str,
        *,
        missing: bool = False,
        needs: str = "",
    ) -> ReplayDivergence:
        """A replay miss of the call in ``ctx``: noted, and the error that fails the step.

        ``missing``: there is no recording of the call at all (not one that differs).
        ``needs`` says what recording the step's engine needs (its key or base URL).
        """
        where = f"replay of {ctx.flow_key}/{ctx.step_id} iteration {ctx.iteration}"
        # A judge's call (docs/judges.md#judges): named, as its rubric may differ.
        if ctx.call == "judge":
            where = (
                f"replay of judge '{ctx.extra.get('judge')}' of {where.removeprefix('replay of ')}"
            )
        elif ctx.call != "step":
            where = f"replay of the {ctx.call}'s call after {where.removeprefix('replay of ')}"
        said = sorted(self.needs | ({needs} if needs else set()))
        hint = f"\n(with {'; and '.join(said)})" if said else ""
        if missing:
            self.missing += 1
            recorded = self.directory.is_dir() and any(self.directory.rglob("*.yaml"))
            message = (
                f"{where}: there is no recording of this call (no cassette {label}"
                + ("" if recorded else f"; nothing is recorded in {self.directory}")
                + f").\nRecord it with: {self.rerecord_command}{hint}"
            )
        else:
            message = (
                f"{where}: no recorded call matches this request (cassette {label}).\n"
                f"{detail}\nRe-record with: {self.rerecord_command}{hint}"
            )
        self.divergences.append(message)
        return ReplayDivergence(message)

    def commit(self) -> None:
        """Put what was recorded in place of the old cassettes, whole."""
        if not self.record or not self.root.is_dir():
            return
        if self.episodes:  # what no call of the run asked for would fail the next replay
            asked = {self.root / path.relative_to(self.directory) for path in self.played}
            for path in self.root.rglob("*.yaml"):
                if path not in asked:
                    path.unlink()
        old = self.real.with_name(f".{self.real.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if self.real.exists():
            os.replace(self.real, old)
        os.replace(self.root, self.real)
        shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        """Drop a recording that is not to be kept (the old cassettes stay)."""
        if self.record:
            shutil.rmtree(self.root, ignore_errors=True)


def run_rerecord_command(cassette_dir: Path | str, words: list[str]) -> str:
    """The command that records the calls of ``swarm run WORDS…`` into ``cassette_dir`` again.

    Quoted for a POSIX shell: a param with spaces or commas is pasted as one argument.
    """
    command = ["swarm", "run", "--mode", "record", "--cassette-dir", str(cassette_dir), *words]
    return shlex.join(command)


def require_vcrpy() -> Any:
    """The vcr module, or a ConfigError that says what to install."""
    try:
        import vcr  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(
            f"record and replay modes need vcrpy: {install_command('replay')} (under pytest: "
            "the 'pytest' extra, which brings pytest and syrupy too) "
            "(or use --swarm-mode=stub / --mode stub, which needs nothing)"
        ) from None
    return vcr


class _AtomicPersister:
    """vcrpy's file persister, writing each cassette atomically, never with a credential.

    Every string of the cassette (URIs, headers of both sides, bodies) is scanned before
    it is serialised: the last fence, whatever a hook before it let through.
    """

    def __init__(self, credentials: Credentials, engine_id: str = "") -> None:
        self.credentials = credentials
        self.engine_id = engine_id

    @staticmethod
    def load_cassette(cassette_path: str, serializer: Any) -> Any:
        from vcr.persisters.filesystem import FilesystemPersister  # type: ignore[import-untyped]

        return FilesystemPersister.load_cassette(cassette_path, serializer)

    def save_cassette(self, cassette_path: str, cassette_dict: Any, serializer: Any) -> None:
        from vcr.serialize import serialize  # type: ignore[import-untyped]

        self.credentials.check_value(cassette_dict, f"cassette {cassette_path}")
        text = serialize(cassette_dict, serializer)
        if self.engine_id:  # a key of the cassette's mapping, first, as vcrpy ignores it
            text = f"{ENGINE_LINE}{self.engine_id}\n{text}"
        Path(cassette_path).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cassette_path, text)


def body_value(body: Any) -> Any:
    """A request body as requests are matched on it: its JSON value, else its text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body or "null")
    except json.JSONDecodeError:
        return body


def _json_body(r1: Any, r2: Any) -> None:
    assert body_value(r1.body) == body_value(r2.body), "request bodies differ"


def _scrub_headers(headers: Any) -> None:
    for name in list(headers):
        if DROPPED_HEADERS.match(name):
            del headers[name]


def body_diff(recorded: Any, sent: Any, limit: int = 24) -> str:
    """A unified diff of two requests' JSON bodies, key by key, at most ``limit`` lines."""

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

    diff = list(
        difflib.unified_diff(pretty(recorded), pretty(sent), "recorded", "sent", n=1, lineterm="")
    )
    if len(diff) > limit:
        diff = [*diff[:limit], f"… ({len(diff) - limit} more diff lines)"]
    return "\n".join(diff)


def miss_detail(recorded: Any, sent: Any) -> str:
    """What a replay miss says of two requests: the parts that changed, then the body diff."""
    parts = changed_parts(body_value(recorded.body), body_value(sent.body))
    return f"{changed_line(parts)}\n{body_diff(recorded, sent)}"


def cause_of(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The first of ``exc`` and the errors it was raised from that is one of ``kinds``.

    What an HTTP layer raises reaches the engine wrapped in its SDK's connection error,
    which would read as a network fault and be retried: this finds what it really was.
    """
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, kinds):
        cause = cause.__cause__ or cause.__context__
    return cause


class Recorder:
    """Records the HTTP of each step call to its cassette through vcrpy (any SDK on httpx2).

    A cassette stays open for the whole run, so the retries of a call record (or, for new
    episodes, play) its interactions in order; :meth:`close` writes and checks them.
    """

    def __init__(
        self, cassettes: Cassettes, credentials: Credentials, needs: str = "", engine_id: str = ""
    ) -> None:
        self.cassettes = cassettes
        self.credentials = credentials
        self.needs = needs
        self._open: dict[Path, tuple[Any, Any]] = {}
        self._current: Path | None = None
        self._closing = False
        self._vcr = require_vcrpy().VCR(
            record_mode="new_episodes" if cassettes.episodes else "all",
            match_on=("method", "path", "json_body"),
            before_record_request=self._before_request,
            before_record_response=self._before_response,
            decode_compressed_response=True,
        )
        self._vcr.register_matcher("json_body", _json_body)
        self._vcr.register_persister(_AtomicPersister(self.credentials, engine_id))

    def _refuse_secrets(self, text: str, what: str) -> None:
        self.credentials.check(text, f"cassette {self._current} (the recorded {what})")

    def _before_request(self, request: Any) -> Any:
        if self._current is not None:  # the call reached its cassette (a fault never does)
            self.cassettes.played.add(
                self.cassettes.directory / self._current.relative_to(self.cassettes.root)
            )
        _scrub_headers(request.headers)
        for name in list(request.headers):  # a key sent in a header of another name
            request.headers[name] = self.credentials.scrub_value(request.headers[name])
        body = (
            request.body.decode("utf-8", "replace")
            if isinstance(request.body, bytes)
            else str(request.body or "")
        )
        self._refuse_secrets(body + request.uri, "request")
        return request

    def _before_response(self, response: dict[str, Any]) -> dict[str, Any]:
        _scrub_headers(response.get("headers") or {})
        # A server may echo a key in any header or in its body: scrubbed
        # (docs/record-replay.md#secrets), then the whole response is scanned, the fence behind the
        # scrub.
        for part in ("headers", "body"):
            if part in response:
                response[part] = self.credentials.scrub_value(response[part])
        self.credentials.check_value(response, f"cassette {self._current} (the recorded response)")
        return response

    def _cassette(self, path: Path) -> Any:
        if path not in self._open:
            manager = self._vcr.use_cassette(str(path))
            self._open[path] = (manager, manager.__enter__())
            _ENTERED.append((self, path))
        return self._open[path][1]

    @contextlib.contextmanager
    def call(self, ctx: StepContext) -> Iterator[None]:
        """One call of the step in ``ctx``, recorded to its cassette (new episodes: or played).

        vcrpy's refusals become what they are: a replay divergence, a credential leak.
        """
        from vcr.errors import CannotOverwriteExistingCassetteException  # type: ignore[import-untyped]

        path = self.cassettes.path(ctx)
        self._current = path
        cassette = self._cassette(path)
        try:
            yield
        except Exception as exc:
            cause = cause_of(exc, (CannotOverwriteExistingCassetteException, CredentialLeak))
            if cause is None:
                raise
            if isinstance(cause, CredentialLeak):
                raise CredentialLeak(str(cause)) from None
            sent = getattr(cause, "failed_request", None)
            raise self._divergence(ctx, path, cassette, sent) from None

    # -- the tool tape: tool calls kept in the step's cassette, in order --------------------------
    # (docs/tools.md#tools-in-record-and-replay)

    replays = False

    def recorded(self, ctx: StepContext, tool: str, tool_input: Any) -> tuple[bool, str] | None:
        """New episodes: the recorded answer of a tool call the cassette holds; else None."""
        from vcr.request import Request  # type: ignore[import-untyped]

        from swarm_runtime.engines.tool_tape import TOOL_METHOD, tool_answer, tool_body, tool_uri

        path = self.cassettes.path(ctx)
        cassette = self._cassette(path)
        request = Request(TOOL_METHOD, tool_uri(tool), tool_body(tool, tool_input), {})
        if not cassette.can_play_response_for(request):
            return None
        self._mark_played(path)
        return tool_answer(cassette.play_response(request), f"cassette {path}")

    def keep(
        self, ctx: StepContext, tool: str, tool_input: Any, success: bool, output: str
    ) -> None:
        """Record a tool call that ran, after the model calls before it."""
        from vcr.request import Request

        from swarm_runtime.engines.tool_tape import TOOL_METHOD, tool_body, tool_response, tool_uri

        path = self.cassettes.path(ctx)
        self._current = path
        request = Request(TOOL_METHOD, tool_uri(tool), tool_body(tool, tool_input), {})
        self._cassette(path).append(request, tool_response(success, output))

    def missing(self, ctx: StepContext, tool: str, tool_input: Any) -> Exception:
        """Not asked of a recording (it runs every tool)."""
        raise NotImplementedError

    def _mark_played(self, path: Path) -> None:
        self.cassettes.played.add(self.cassettes.directory / path.relative_to(self.cassettes.root))

    def _divergence(self, ctx: StepContext, path: Path, cassette: Any, sent: Any) -> Exception:
        recorded = list(cassette.requests)
        label = self.cassettes.label(path)
        if not recorded:
            return self.cassettes.divergence(ctx, label, "", missing=True, needs=self.needs)
        detail = miss_detail(recorded[0], sent)
        return self.cassettes.divergence(ctx, label, detail, needs=self.needs)

    def close(self) -> None:
        """Write the recorded cassettes (new episodes: only those with something new).

        Each open cassette patches the HTTP transports over the one opened before it, by
        whichever recorder (two engines of one run each have one): they are undone in the
        reverse order they were opened, or an original transport is never put back. What
        another recorder opened after this one's cassettes is undone when it closes, and
        this one's with it.
        """
        self._closing = True
        failed: BaseException | None = None
        while _ENTERED and _ENTERED[-1][0]._closing:
            recorder, path = _ENTERED.pop()
            try:
                recorder._finish(path)
            except BaseException as exc:  # a refused write: the others are still undone
                failed = failed or exc
        if failed is not None:
            raise failed

    def _finish(self, path: Path) -> None:
        """Write (or drop) one cassette and undo its patches."""
        manager, cassette = self._open.pop(path)
        # New episodes: a call recorded again replaces the recording it no longer
        # matches; a cassette with nothing new is left as it was.
        cassette.drop_unused_requests = self.cassettes.episodes and cassette.dirty
        if self.cassettes.episodes and not cassette.dirty and cassette.play_count:
            relative = path.relative_to(self.cassettes.root)
            self.cassettes.replayed.add(self.cassettes.directory / relative)
        manager.__exit__(None, None, None)


_ENTERED: list[tuple[Recorder, Path]] = []
"""Every cassette open in this process, in the order it was opened (vcrpy patches stack)."""
