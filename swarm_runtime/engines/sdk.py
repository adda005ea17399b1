"""``claude-step`` in ``sdk`` mode: one Messages API call per step through the anthropic SDK.

The SDK's own retries are off: the orchestrator owns retries (SPEC §7.3), so API errors
become result codes here — connection errors, 408, 409, 429, 5xx and 529 are
``retryable`` (with ``retry-after`` honoured), 400, 401, 403, 404, 413 and 422 are
``fatal``, and a reply that is not a Messages response is a clear ``fatal`` error. Replies
are streamed by default (``engines.claude.stream: false`` in runtime.yaml turns it off); an
error event in the middle of a stream (``overloaded_error``, …) maps like its HTTP status.
The anthropic package is imported only when this engine is built.
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.engines.base import (
    DEFAULT_TIMEOUT_S,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
    truncate_output,
)
from swarm_runtime.engines.deadline import CallDeadline, call_deadline, deadline_hooks
from swarm_runtime.engines.prices import estimate_cost, load_prices
from swarm_runtime.engines.status import code_for_status
from swarm_runtime.errors import ConfigError
from swarm_runtime.install import install_command
from swarm_runtime.record import Record

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


def _retry_after_ms(headers: Any) -> int | None:
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            number = float(value) if name == "retry-after-ms" else float(value) * 1000
        except ValueError:
            continue  # an HTTP date: fall back to the orchestrator's backoff
        if not number >= 0:
            continue  # negative or NaN: no wait said, fall back to the backoff
        return round(min(number, 1e15))  # "inf" is as long as any cap refuses
    return None


class SdkSettings(Record):
    """What each Messages API call of the engine asks for, and how long it may take."""

    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    stream: bool = True
    """Stream the reply (the default; what long agent calls need), or one plain call."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """How long a call may take in all (a step's own ``timeout_s`` comes first)."""


class SdkEngine(StepEngine):
    """One Messages API call per step, streamed by default, no SDK retries."""

    mode = "sdk"

    def __init__(
        self,
        client: Any,
        *,
        settings: SdkSettings | None = None,
        provider: str = "anthropic",
        prices: dict[str, dict[str, float]] | None = None,
        engine_id: str = "claude-step",
        engine_short: str = "claude",
    ) -> None:
        settings = settings if settings is not None else SdkSettings()
        self.client = client
        self.timeout_s = settings.timeout_s
        """How long a call may take in all (a step's own ``timeout_s`` comes first)."""
        self.stream = settings.stream
        """Stream the reply (the default; what long agent calls need), or one plain call."""
        self.model = settings.model
        self.max_tokens = settings.max_tokens
        self.provider = provider
        self.prices = prices if prices is not None else load_prices()
        self.engine_id = engine_id
        self.engine_short = engine_short

    def _failed(
        self, ctx: StepContext, code: str, error: str, retry_after_ms: int | None = None
    ) -> StepOutcome:
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="failed", error=error),
            result_code=code,  # type: ignore[arg-type]
            model=self.model,
            provider=self.provider,
            mode="sdk",
            retry_after_ms=retry_after_ms,
            cost_usd=0.0,  # a refused or failed call is not billed
            cassette=self.cassette_for(ctx),
        )

    def create_message(self, ctx: StepContext, **request: Any) -> Any:
        """The one API call of a step, streamed unless turned off; cassettes wrap it.

        Streamed, the reply arrives as server-sent events that the SDK assembles into the
        same Message a plain call returns (text, usage); an ``error`` event mid-stream
        raises like an HTTP error does.
        """
        if not self.stream:
            return self.client.messages.create(**request)
        with self.client.messages.stream(**request) as events:
            return events.get_final_message()

    def cassette_for(self, ctx: StepContext) -> str | None:
        """The cassette a recorded or replayed call goes through (a subclass says)."""
        return None

    def request(self, ctx: StepContext) -> dict[str, Any]:
        """The arguments of the call for ``ctx`` (the SDK adds ``stream`` when streaming)."""
        prompt = ctx.prompt
        if prompt is None:
            raise ValueError("SdkEngine needs ctx.prompt")
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}],
        }

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The JSON body the SDK sends: what replay matches a recorded call on."""
        body = self.request(ctx)
        if self.stream:
            body["stream"] = True
        return body

    def _timed_out(self, ctx: StepContext, deadline: CallDeadline | None) -> StepOutcome | None:
        """A retryable timeout when the call's deadline cut it off, else None."""
        if deadline is None or not deadline.expired:
            return None
        return self._failed(
            ctx,
            "retryable",
            f"the Anthropic API call did not finish within {deadline.seconds:g} s and was cut "
            "off (raise the step's timeout_s, or engines.claude.timeout_s in runtime.yaml)",
        )

    def _failure(self, ctx: StepContext, exc: Exception) -> StepOutcome | None:
        """The outcome an error of the call stands for (None: not an error of the call)."""
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            status = _status_of(exc)
            detail = _detail_of(exc)
            error = f"Anthropic API answered HTTP {status}: {detail}"
            if exc.status_code < 400:  # an error event inside a streamed reply
                error = f"Anthropic API stream broke off with an error ({status}): {detail}"
            if code_for_status(status) == "retryable":
                return self._failed(ctx, "retryable", error, _retry_after_ms(exc.response.headers))
            return self._failed(ctx, "fatal", error)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self._failed(
                ctx, "fatal", f"Anthropic API reply is not a Messages response: {exc}"
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return self._failed(ctx, "retryable", f"cannot reach the Anthropic API: {exc}")
        import httpx2

        if isinstance(exc, httpx2.TransportError):  # the connection broke mid-stream
            return self._failed(
                ctx, "retryable", f"the Anthropic API reply broke off mid-stream: {exc}"
            )
        if isinstance(exc, ValueError | TypeError | KeyError | AttributeError | AssertionError):
            # A body that is neither JSON nor a stream of events (the SDK asserts on those).
            return self._failed(
                ctx, "fatal", f"Anthropic API reply could not be read ({type(exc).__name__}: {exc})"
            )
        return None

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """Call the Messages API once and turn the reply (or the error) into an outcome."""
        from swarm_runtime.engines.handoff import parse_handoff
        from swarm_runtime.errors import HandoffError

        prompt = ctx.prompt
        if prompt is None:
            raise ValueError("SdkEngine needs ctx.prompt")
        seconds = ctx.timeout_s or self.timeout_s
        deadline: CallDeadline | None = None
        try:
            with call_deadline(seconds) as deadline:
                message = self.create_message(ctx, **self.request(ctx))
        except Exception as exc:
            failed = self._timed_out(ctx, deadline) or self._failure(ctx, exc)
            if failed is None:
                raise
            return failed
        cut_off = self._timed_out(ctx, deadline)  # a body that ends at the cut reads as whole
        if cut_off is not None:
            return cut_off
        try:
            blocks = list(message.content)
            text = "".join(
                str(getattr(block, "text", ""))
                for block in blocks
                if getattr(block, "type", "") == "text"
            )
            usage = message.usage
            tokens = TokenUsage(int(usage.input_tokens or 0), int(usage.output_tokens or 0))
            model = str(message.model or self.model)
        except (AttributeError, TypeError, ValueError) as exc:
            return self._failed(ctx, "fatal", f"Anthropic API reply is missing fields: {exc}")
        try:
            handoff = parse_handoff(text)
        except HandoffError as exc:
            return self._failed(ctx, "fatal", f"the reply's handoff block is unusable: {exc}")
        cost = estimate_cost(self.prices, model, tokens)
        return StepOutcome(
            result=StepResult(
                step_id=ctx.step_id, status="succeeded", output=truncate_output(text)
            ),
            text=text,
            handoff=handoff,
            tokens=tokens,
            model=model,
            provider=self.provider,
            mode="sdk",
            transcript=({"role": "assistant", "content": text},),
            cost_usd=cost,
            cassette=self.cassette_for(ctx),
        )

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        close = getattr(self.client, "close", None)
        if callable(close):
            close()


def build_sdk_engine(
    config: dict[str, Any],
    *,
    engine_id: str,
    engine_short: str,
    engine_class: type[SdkEngine] | None = None,
    http_client: Any = None,
    **extra: Any,
) -> SdkEngine:
    """The engine from resolved settings.

    ``api_key``, ``base_url``, ``model``, ``max_tokens``, ``prices`` and ``stream``;
    ``engine_class`` and ``extra`` build a subclass (the cassette engines), ``http_client``
    is the SDK client's HTTP client (the replay engine's answers from cassettes).
    """
    try:
        import anthropic
    except ImportError:
        raise ConfigError(
            f"sdk mode needs the anthropic package: {install_command('sdk')}"
        ) from None
    api_key = config.get("api_key")
    base_url = config.get("base_url")
    if not api_key and not base_url:
        raise ConfigError(
            "sdk mode needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible "
            "server); set it, or run in stub mode"
        )
    timeout_s = float(config.get("timeout_s") or DEFAULT_TIMEOUT_S)
    provider = str(config.get("provider") or ("anthropic_compat" if base_url else "anthropic"))
    if provider not in ("anthropic", "anthropic_compat"):
        raise ConfigError(f"provider {provider!r} is not anthropic or anthropic_compat")
    http_client = http_client or anthropic.DefaultHttpxClient(**deadline_hooks())
    if config.get("fault_injector") is not None:  # a fault plan: its faults come from here
        from swarm_runtime.engines.fault_http import wrap_client

        http_client = wrap_client(http_client, config["fault_injector"])
    client = anthropic.Anthropic(
        api_key=api_key or "not-needed-for-a-local-server",
        base_url=base_url or None,
        max_retries=0,  # the orchestrator owns retries: one attempt, one HTTP request
        timeout=timeout_s,
        http_client=http_client,
    )
    settings = SdkSettings(
        model=str(config.get("model") or DEFAULT_MODEL),
        max_tokens=int(config.get("max_tokens") or DEFAULT_MAX_TOKENS),
        stream=bool(config.get("stream", True)),
        timeout_s=timeout_s,
    )
    return (engine_class or SdkEngine)(
        client,
        settings=settings,
        provider=provider,
        prices=load_prices(config.get("prices")),
        engine_id=engine_id,
        engine_short=engine_short,
        **extra,
    )
