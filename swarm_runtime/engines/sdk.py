"""``claude-step`` over HTTP: one Messages API call per step through the anthropic SDK.

The SDK's own retries are off: the orchestrator owns retries (docs/contract/steps.md#result-codes),
so API errors become result codes here — connection errors, 408, 409, 429, 5xx and 529 are
``retryable`` (with ``retry-after`` honoured), 400, 401, 403, 404, 413 and 422 are
``fatal``, and a reply that is not a Messages response is a clear ``fatal`` error. Replies
are streamed by default (``engines.claude.stream: false`` in runtime.yaml turns it off); an
error event in the middle of a stream (``overloaded_error``, …) maps like its HTTP status.
Record, replay and fault plans are the HTTP layers' (:mod:`.http_layers`): the SDK is
handed their client. The anthropic package is imported only when this engine is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import DEFAULT_TIMEOUT_S, StepContext, StepOutcome, TokenUsage
from swarm_runtime.engines.fault_replies import AnthropicWire
from swarm_runtime.engines.http_engine import (
    DeferredClient,
    HttpEngine,
    HttpSettings,
    Reply,
    retry_after_ms,
)
from swarm_runtime.engines.prices import load_prices
from swarm_runtime.engines.tool_calls import ToolAnswer, ToolCall, wire_name
from swarm_runtime.errors import ConfigError
from swarm_runtime.install import install_command

if TYPE_CHECKING:
    from swarm_runtime.tools.registry import ToolSpec

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 4096


ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""The HTTP status each API error type stands for: an error event in the middle of a
streamed reply arrives on a 200 response and is judged by its type."""


def _error_of(exc: Any) -> dict[str, Any]:
    """The ``error`` object of an API error's body (or the body itself), else empty."""
    body: dict[str, Any] = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error")
    return inner if isinstance(inner, dict) else body


def _status_of(exc: Any) -> int:
    status = int(exc.status_code)
    if status < 400:  # an error event inside a 200 stream
        return ERROR_TYPE_STATUS.get(str(_error_of(exc).get("type")), 500)
    return status


def _detail_of(exc: Any) -> str:
    """The server's own message (read from the body: not every SDK release parses it)."""
    message = _error_of(exc).get("message")
    return message if isinstance(message, str) and message else str(exc)


_retry_after_ms = retry_after_ms


def SdkSettings(**kwargs: Any) -> HttpSettings:
    """The settings of a Messages API call (the default model unless given)."""
    kwargs.setdefault("model", DEFAULT_MODEL)
    return HttpSettings(**kwargs)


class SdkEngine(HttpEngine):
    """One Messages API call per step, streamed by default, no SDK retries."""

    api_name = "Anthropic API"
    settings_section = "engines.claude"
    home_host = "api.anthropic.com"
    base_url: str | None = None
    """Where the calls go, as the engine was built (None: the client's)."""

    def __init__(
        self,
        client: Any,
        *,
        settings: HttpSettings | None = None,
        provider: str = "anthropic",
        engine_id: str = "claude-step",
        engine_short: str = "claude",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            client,
            settings=settings if settings is not None else SdkSettings(),
            provider=provider,
            engine_id=engine_id,
            engine_short=engine_short,
            **kwargs,
        )

    def request(
        self,
        ctx: StepContext,
        offered: list[ToolSpec] | None = None,
        turns: list[Any] | None = None,
    ) -> dict[str, Any]:
        """The arguments of one call for ``ctx`` (the SDK adds ``stream`` when streaming)."""
        prompt = ctx.prompt
        if prompt is None:
            raise ValueError("SdkEngine needs ctx.prompt")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}, *(turns or ())],
        }
        if offered:
            body["tools"] = [
                {
                    "name": wire_name(spec.name),
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                }
                for spec in offered
            ]
        return body

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The JSON body the SDK sends first: what replay matches a recorded call on."""
        return self._sent(ctx, self.step_tools(ctx).offered() if ctx.tools else None, None)

    def _sent(
        self, ctx: StepContext, offered: list[ToolSpec] | None, turns: list[Any] | None
    ) -> dict[str, Any]:
        """The JSON body the SDK sends for a call: :meth:`request`, ``stream`` when streaming."""
        body = self.request(ctx, offered, turns)
        if self.stream:
            body["stream"] = True
        return body

    def send(self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]) -> Any:
        """One API call of the step, streamed unless turned off.

        Streamed, the reply arrives as server-sent events that the SDK assembles into the
        same Message a plain call returns (text, tool calls, usage); an ``error`` event
        mid-stream raises like an HTTP error does.
        """
        request = self.request(ctx, offered, turns)
        if not self.stream:
            return self.client.messages.create(**request)
        with self.client.messages.stream(**request) as events:
            return events.get_final_message()

    def replay_request(
        self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]
    ) -> tuple[str, dict[str, Any]] | None:
        """``POST /v1/messages`` with the body the SDK sends (``stream`` added when streaming)."""
        base = self.base_url or str(self.client.base_url)
        return f"{base.rstrip('/')}/v1/messages", self._sent(ctx, offered, turns)

    def read_recorded(self, recorded: dict[str, Any]) -> Any:
        """A recorded successful response as the Message the SDK assembles (else None)."""
        from swarm_runtime.engines.recorded_messages import message_of

        return message_of(recorded, streamed=self.stream)

    def read(self, response: Any) -> Reply:
        """The text blocks, the tool calls, the usage and the model of a Message."""
        blocks = list(response.content)
        text = "".join(
            str(getattr(block, "text", ""))
            for block in blocks
            if getattr(block, "type", "") == "text"
        )
        calls = tuple(
            ToolCall(id=str(block.id), name=str(block.name), input=block.input)
            for block in blocks
            if getattr(block, "type", "") == "tool_use"
        )
        usage = response.usage
        tokens = TokenUsage(int(usage.input_tokens or 0), int(usage.output_tokens or 0))
        return Reply(text=text, tokens=tokens, model=str(response.model or self.model), calls=calls)

    def follow_up(self, response: Any, reply: Reply, answers: list[ToolAnswer]) -> list[Any]:
        """The model's turn as it was (its text and tool calls), then the tools' answers."""
        content: list[dict[str, Any]] = []
        for block in list(response.content):
            kind = getattr(block, "type", "")
            if kind == "text" and getattr(block, "text", ""):
                content.append({"type": "text", "text": str(block.text)})
            elif kind == "tool_use":
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
        results = [
            {
                "type": "tool_result",
                "tool_use_id": answer.call.id,
                "content": answer.output,
                **({} if answer.success else {"is_error": True}),
            }
            for answer in answers
        ]
        return [{"role": "assistant", "content": content}, {"role": "user", "content": results}]

    def failure(self, ctx: StepContext, exc: Exception) -> StepOutcome | None:
        """The outcome an error of the call stands for (None: not an error of the call)."""
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            status = _status_of(exc)
            detail = _detail_of(exc)
            error = f"Anthropic API answered HTTP {status}: {detail}"
            if exc.status_code < 400:  # an error event inside a streamed reply
                error = f"Anthropic API stream broke off with an error ({status}): {detail}"
            return self.status_outcome(ctx, status, error, exc.response.headers)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self.failed(
                ctx, "fatal", f"Anthropic API reply is not a Messages response: {exc}"
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return self.failed(ctx, "retryable", f"cannot reach the Anthropic API: {exc}")
        import httpx2

        if isinstance(exc, httpx2.TransportError):  # the connection broke mid-stream
            return self.failed(
                ctx, "retryable", f"the Anthropic API reply broke off mid-stream: {exc}"
            )
        if isinstance(exc, ValueError | TypeError | KeyError | AttributeError | AssertionError):
            # A body that is neither JSON nor a stream of events (the SDK asserts on those).
            return self.failed(
                ctx, "fatal", f"Anthropic API reply could not be read ({type(exc).__name__}: {exc})"
            )
        return None


def build_sdk_engine(
    config: dict[str, Any],
    *,
    engine_id: str,
    engine_short: str,
    layers: Any = None,
) -> SdkEngine:
    """The engine from resolved settings (``engines.claude`` and the environment).

    ``api_key``, ``base_url``, ``model``, ``max_tokens``, ``prices`` and ``stream``;
    ``layers`` are the mode's HTTP layers (record, replay, faults), whose client the SDK
    is handed.
    """
    from importlib.util import find_spec

    if find_spec("anthropic") is None:
        raise ConfigError(f"sdk mode needs the anthropic package: {install_command('sdk')}")
    replays = layers is not None and layers.replays
    api_key = config.get("api_key")
    base_url = config.get("base_url")
    if not api_key and not base_url and not replays:
        raise ConfigError(
            "sdk mode needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible "
            "server); set it, or run in stub mode"
        )
    timeout_s = float(config.get("timeout_s") or DEFAULT_TIMEOUT_S)
    compat = base_url or replays  # replayed: as recorded against a local server (or set provider)
    provider = str(config.get("provider") or ("anthropic_compat" if compat else "anthropic"))
    if provider not in ("anthropic", "anthropic_compat"):
        raise ConfigError(f"provider {provider!r} is not anthropic or anthropic_compat")
    if layers is None:
        from swarm_runtime.engines.http_layers import HttpLayers
        from swarm_runtime.engines.options import EngineOptions

        layers = HttpLayers(EngineOptions(mode="sdk"), AnthropicWire())
    client = _client(api_key, base_url, timeout_s, layers, replays=replays)
    settings = HttpSettings(
        model=str(config.get("model") or DEFAULT_MODEL),
        max_tokens=int(config.get("max_tokens") or DEFAULT_MAX_TOKENS),
        stream=bool(config.get("stream", True)),
        timeout_s=timeout_s,
    )
    engine = SdkEngine(
        DeferredClient(client) if replays else client(),  # a replay may never need it
        layers=layers,
        settings=settings,
        provider=provider,
        prices=load_prices(config.get("prices")),
        engine_id=engine_id,
        engine_short=engine_short,
    )
    engine.base_url = str(base_url or "https://api.anthropic.com")
    return engine


def _client(
    api_key: str | None, base_url: str | None, timeout_s: float, layers: Any, *, replays: bool
) -> Callable[[], Any]:
    """What makes the engine's anthropic client, over the mode's HTTP layers."""

    def make() -> Any:
        import anthropic

        return anthropic.Anthropic(
            # A replay reaches no server: the SDK wants a key all the same.
            api_key=api_key
            or ("replay-needs-no-key" if replays else "not-needed-for-a-local-server"),
            base_url=base_url or None,
            max_retries=0,  # the orchestrator owns retries: one attempt, one HTTP request
            timeout=timeout_s,
            http_client=layers.http_client(),
        )

    return make
