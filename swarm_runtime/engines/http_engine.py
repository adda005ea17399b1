"""An engine that runs a step as one call of a provider's HTTP API, through its SDK.

:class:`HttpEngine` is what every such engine shares: the call's deadline, the layers of
the mode (record, replay, faults: :mod:`.http_layers`), the handoff block, the price, and
the outcome. A provider's engine says only how to call its SDK (:meth:`HttpEngine.send`),
what its errors mean (:meth:`HttpEngine.failure`, with :func:`status_outcome` for the HTTP
statuses, docs/contract/steps.md#result-codes) and what its request body is.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import (
    DEFAULT_TIMEOUT_S,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
    truncate_output,
)
from swarm_runtime.engines.deadline import CallDeadline, call_deadline
from swarm_runtime.engines.faults import HTTP_KINDS, TOOL_KINDS
from swarm_runtime.engines.prices import estimate_cost, load_prices
from swarm_runtime.engines.status import code_for_status
from swarm_runtime.engines.tool_calls import StepTools, ToolAnswer, ToolCall
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from swarm_runtime.engines.http_layers import HttpLayers
    from swarm_runtime.tools.box import ToolBox
    from swarm_runtime.tools.registry import ToolSpec


class Reply(Record):
    """What a provider's reply comes to: its text, tokens, model, and the tools it calls.

    No calls: the model ended its turn.
    """

    text: str
    tokens: TokenUsage
    model: str
    calls: tuple[ToolCall, ...] = ()


class HttpSettings(Record):
    """What each call of an HTTP engine asks for, and how long it may take."""

    model: str
    max_tokens: int = 4096
    stream: bool = True
    """Stream the reply (the default; what long agent calls need), or one plain call."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """How long a call may take in all (a step's own ``timeout_s`` comes first)."""


def retry_after_ms(headers: Any) -> int | None:
    """What a response's ``retry-after-ms`` or ``retry-after`` asks for, in ms; else None."""
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


def _from_the_http_stack(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of the HTTP libraries under the SDKs (httpx2, httpcore2)."""
    return type(exc).__module__.split(".", 1)[0] in ("httpx2", "httpcore2", "h11")


class HttpEngine(StepEngine, abc.ABC):
    """One call of a provider's API per step, through an SDK on the layers' client."""

    mode = "sdk"
    fault_kinds = HTTP_KINDS | TOOL_KINDS
    api_name = "the API"
    """How messages name the API (``Anthropic API``)."""
    settings_section = "engines"
    """Where the engine's settings live in runtime.yaml, for messages."""
    home_host = ""
    """The provider's own API host: a replay of a call recorded there names the provider;
    of one recorded against any other host, its ``…_compat`` kind."""

    def __init__(
        self,
        client: Any,
        *,
        layers: HttpLayers | None = None,
        settings: HttpSettings,
        provider: str,
        prices: dict[str, dict[str, float]] | None = None,
        engine_id: str,
        engine_short: str,
    ) -> None:
        self._client = client
        self.layers = layers
        self.model = settings.model
        self.max_tokens = settings.max_tokens
        self.stream = settings.stream
        self.timeout_s = settings.timeout_s
        self.provider = provider
        self.prices = prices if prices is not None else load_prices()
        self.engine_id = engine_id
        self.engine_short = engine_short

    # -- what a provider says --------------------------------------------------------

    @abc.abstractmethod
    def send(self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]) -> Any:
        """Make one call of the step through the SDK: its response, streamed and assembled.

        ``offered`` are the tools the model may call; ``turns`` what followed the prompt so
        far (the model's tool calls and their answers, in the provider's shapes).
        """

    def follow_up(self, response: Any, reply: Reply, answers: list[ToolAnswer]) -> list[Any]:
        """The turns that answer ``reply``'s tool calls: the model's turn, then the answers."""
        raise NotImplementedError(f"{type(self).__name__} runs no tools")

    @abc.abstractmethod
    def read(self, response: Any) -> Reply:
        """The reply in ``response``; a field it lacks raises AttributeError or TypeError."""

    @abc.abstractmethod
    def failure(self, ctx: StepContext, exc: Exception) -> StepOutcome | None:
        """The outcome an error of the SDK's call stands for (None: not an error of the call)."""

    # -- shared ----------------------------------------------------------------------

    @property
    def tools(self) -> ToolBox | None:
        """The run's tools (its options' ``tools``), or None."""
        return self.layers.options.tools if self.layers is not None else None

    def provider_now(self) -> str:
        """The provider of the call just made: in a replay, where it was recorded."""
        host = self.layers.recorded_host() if self.layers is not None else None
        if host is None or not self.home_host:
            return self.provider
        base = self.provider.removesuffix("_compat")
        return base if host == self.home_host else f"{base}_compat"

    def failed(
        self, ctx: StepContext, code: str, error: str, retry_after: int | None = None
    ) -> StepOutcome:
        """A failed call: not billed, with the cassette it went through."""
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="failed", error=error),
            result_code=code,  # type: ignore[arg-type]
            model=self.model,
            provider=self.provider_now(),
            mode="sdk",
            retry_after_ms=retry_after,
            cost_usd=0.0,  # a refused or failed call is not billed
            cassette=self.cassette_for(ctx),
        )

    def status_outcome(
        self, ctx: StepContext, status: int, error: str, headers: Any = None
    ) -> StepOutcome:
        """An HTTP error status as a result code (``retry-after`` honoured).

        See docs/contract/steps.md#result-codes.
        """
        if code_for_status(status) == "retryable":
            return self.failed(ctx, "retryable", error, retry_after_ms(headers))
        return self.failed(ctx, "fatal", error)

    def cassette_for(self, ctx: StepContext) -> str | None:
        """The cassette a recorded or replayed call goes through."""
        return self.layers.cassette_for(ctx) if self.layers is not None else None

    @property
    def client(self) -> Any:
        """The SDK's client, made when first needed (a replay read without it never makes it)."""
        if isinstance(self._client, DeferredClient):
            self._client = self._client.make()
        return self._client

    def _timed_out(self, ctx: StepContext, deadline: CallDeadline | None) -> StepOutcome | None:
        """A retryable timeout when the call's deadline cut it off, else None."""
        if deadline is None or not deadline.expired:
            return None
        return self.failed(
            ctx,
            "retryable",
            f"the {self.api_name} call did not finish within {deadline.seconds:g} s and was cut "
            f"off (raise the step's timeout_s, or {self.settings_section}.timeout_s in "
            "runtime.yaml)",
        )

    def _call(self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]) -> Any:
        """One call under its deadline and the mode's layers: the response, or what failed."""
        seconds = ctx.timeout_s or self.timeout_s
        deadline: CallDeadline | None = None
        # A replay reaches no socket: nothing could outlast a deadline, so none is kept.
        replays = self.layers is not None and self.layers.replays
        try:
            with contextlib.nullcontext() if replays else call_deadline(seconds) as deadline:
                if self.layers is None:
                    return self.send(ctx, offered, turns)
                with self.layers.call(ctx):
                    response = self._replayed(ctx, offered, turns) if replays else None
                    if response is None:
                        response = self.send(ctx, offered, turns)
        except Exception as exc:
            from swarm_runtime.errors import CredentialLeak, ReplayDivergence

            if isinstance(exc, ReplayDivergence | CredentialLeak):
                raise
            failed = self._timed_out(ctx, deadline) or self.failure(ctx, exc)
            if failed is None and _from_the_http_stack(exc):
                # A connection error the SDK did not wrap (an SDK release that lets the
                # HTTP library's own error through): the network's, so a retry may mend it.
                failed = self.failed(
                    ctx, "retryable", f"the {self.api_name} connection broke off: {exc!r}"
                )
            if failed is None:
                raise
            return failed
        # A body that ends at the cut reads as whole: the deadline says it was cut.
        return self._timed_out(ctx, deadline) or response

    def _replayed(self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]) -> Any:
        """The call's recorded response read without the SDK's client (None: the SDK replays).

        Only with no fault plan (its faults are served to the SDK's client) and where the
        provider can say what its SDK sends and read what was recorded.
        """
        from swarm_runtime.engines.replay import Replayer

        layers = self.layers
        tape = layers.tape() if layers is not None else None
        if layers is None or layers.options.faults is not None or not isinstance(tape, Replayer):
            return None
        sent = self.replay_request(ctx, offered, turns)
        if sent is None:
            return None
        uri, body = sent
        return tape.answer(uri, body, self.read_recorded)

    def replay_request(
        self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]
    ) -> tuple[str, dict[str, Any]] | None:
        """The URI and JSON body the SDK would send for this call (None: not known here)."""
        return None

    def read_recorded(self, recorded: dict[str, Any]) -> Any:
        """A recorded response as :meth:`send` would return it (None: leave it to the SDK)."""
        return None

    def step_tools(self, ctx: StepContext) -> StepTools:
        """The tools of one step call, with the mode's recording of their answers."""
        layers = self.layers
        return StepTools(
            self.tools,
            ctx,
            credentials=layers.credentials if layers is not None else None,
            tape=layers.tape() if layers is not None else None,
            faults=layers.options.faults if layers is not None else None,
        )

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """The step's tool loop: call the API, run the tools it asks for, until it ends its turn."""
        from swarm_runtime.tools.box import UnknownTool
        from swarm_runtime.tools.mcp import McpServerError

        if ctx.prompt is None:
            raise ValueError(f"{type(self).__name__} needs ctx.prompt")
        tools = self.step_tools(ctx)
        try:
            offered = tools.offered()
        except (UnknownTool, McpServerError) as exc:
            return self.failed(ctx, "fatal", f"the step's tools: {exc}")
        turns: list[Any] = []
        spent = _Spent()
        while True:
            response = self._call(ctx, offered, turns)
            if isinstance(response, StepOutcome):
                return spent.onto(response, tools)
            try:
                reply = self.read(response)
            except (AttributeError, TypeError, ValueError) as exc:
                failed = self.failed(
                    ctx, "fatal", f"{self.api_name} reply is missing fields: {exc}"
                )
                return spent.onto(failed, tools)
            spent.add(reply, estimate_cost(self.prices, reply.model, reply.tokens))
            if not reply.calls:
                break
            if reply.text:
                tools.lines.append({"role": "assistant", "content": reply.text})
            try:
                answers = [tools.answer(call) for call in reply.calls]
            except Exception as exc:
                stopped = self._tool_failure(ctx, exc)
                if stopped is None:
                    raise
                return spent.onto(stopped, tools)
            turns += self.follow_up(response, reply, answers)
        return spent.onto(self._answer(ctx, reply), tools)

    def _tool_failure(self, ctx: StepContext, exc: Exception) -> StepOutcome | None:
        """The fatal outcome of a tool loop that cannot go on (None: not one of those)."""
        from swarm_runtime.engines.tool_calls import TooManyToolCalls
        from swarm_runtime.tools.mcp import McpServerError

        if isinstance(exc, TooManyToolCalls | McpServerError):
            return self.failed(ctx, "fatal", str(exc))
        return None

    def _answer(self, ctx: StepContext, reply: Reply) -> StepOutcome:
        """The outcome of the reply that ended the model's turn."""
        from swarm_runtime.engines.handoff import parse_handoff
        from swarm_runtime.errors import HandoffError

        text = reply.text
        try:
            handoff = parse_handoff(text)
        except HandoffError as exc:
            return self.failed(ctx, "fatal", f"the reply's handoff block is unusable: {exc}")
        return StepOutcome(
            result=StepResult(
                step_id=ctx.step_id, status="succeeded", output=truncate_output(text)
            ),
            text=text,
            handoff=handoff,
            tokens=reply.tokens,
            model=reply.model,
            provider=self.provider_now(),
            mode="sdk",
            transcript=({"role": "assistant", "content": text},),
            cost_usd=estimate_cost(self.prices, reply.model, reply.tokens),
            cassette=self.cassette_for(ctx),
        )

    def close(self) -> None:
        """Write or note what the layers hold, then close the SDK's HTTP connections."""
        try:
            if self.layers is not None:
                self.layers.close()
        finally:
            client = self._client
            close = None if isinstance(client, DeferredClient) else getattr(client, "close", None)
            if callable(close):
                close()


class DeferredClient:
    """An SDK client made on first use: importing an SDK costs more than a replay's steps."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class _Spent:
    """What the calls of one step's tool loop spent so far: tokens and cost, summed."""

    def __init__(self) -> None:
        self.tokens = TokenUsage()
        self.cost: float | None = 0.0
        self.calls = 0

    def add(self, reply: Reply, cost: float | None) -> None:
        self.calls += 1
        self.tokens = TokenUsage(
            self.tokens.prompt + reply.tokens.prompt,
            self.tokens.completion + reply.tokens.completion,
        )
        self.cost = None if cost is None or self.cost is None else self.cost + cost

    def onto(self, outcome: StepOutcome, tools: StepTools) -> StepOutcome:
        """``outcome`` with the loop's tool events, transcript lines, time and spending."""
        from swarm_runtime.record import replace

        if not self.calls and not tools.events:
            return outcome
        return replace(
            outcome,
            events=(*tools.events, *outcome.events),
            transcript=(*tools.lines, *outcome.transcript),
            tool_call_ms=tools.tool_ms,
            tokens=self.tokens,
            cost_usd=self.cost,
        )
