"""``openai-step``: one Chat Completions call per step through the official ``openai`` SDK.

For OpenAI and every OpenAI-compatible server (vLLM, Ollama, LiteLLM, a llama.cpp
server, …). The base URL and key come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` or
``engines.openai: {base_url, api_key_env, model, …}`` in runtime.yaml; the provider is
``openai`` on OpenAI's own URL and ``openai_compat`` on any other. Replies are streamed
(``engines.openai.stream: false`` turns it off) with ``stream_options.include_usage``, so
the tokens come from the stream's last chunk; the cost from the price table.

Errors map to result codes (docs/contract/steps.md#result-codes): connection errors, 408, 409, 429,
5xx → ``retryable`` with ``retry-after`` honoured; 400, 401, 403, 404, 413, 422 and
``context_length_exceeded`` (whatever its status) → ``fatal``. Record, replay and fault plans are
the HTTP layers' (:mod:`.http_layers`): the SDK is handed their client. The openai package is
imported only when the engine is built (``pip install 'swarm-stepwise[openai]'``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome, TokenUsage
from swarm_runtime.engines.http_engine import HttpEngine, HttpSettings, Reply
from swarm_runtime.engines.options import EngineOptions
from swarm_runtime.engines.request_parts import Expected
from swarm_runtime.engines.settings import openai_settings
from swarm_runtime.engines.tool_calls import ToolAnswer, ToolCall, wire_name
from swarm_runtime.errors import ConfigError

if TYPE_CHECKING:
    from swarm_runtime.tools.registry import ToolSpec

NEEDS = "OPENAI_API_KEY set, or OPENAI_BASE_URL for a local OpenAI-compatible server"
FATAL_CODES = ("context_length_exceeded", "invalid_api_key", "model_not_found")
"""Error codes no retry can mend, whatever the status they come with."""
RETRYABLE_TYPES = ("server_error", "rate_limit_exceeded", "overloaded", "service_unavailable")
"""Error types and codes of an error sent mid-stream that a retry may mend."""


class OpenAIWire:
    """The Chat Completions API's shapes, for faults served to the openai SDK."""

    api_name = "OpenAI API"
    needs = NEEDS
    half_event = b'data: {"id": "chatcmpl-fault-plan", "object": "chat.completion.chu'

    def error_body(self, kind: str, status: int) -> dict[str, Any]:
        """The API's error body for ``status``."""
        kinds = {429: ("requests", "rate_limit_exceeded")}
        error_type, code = kinds.get(status, ("server_error", None))
        message = f"injected by the fault plan: {kind}"
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}

    def reply_body(self, model: str, text: str) -> dict[str, Any]:
        """A whole ``chat.completion``."""
        return {
            "id": "chatcmpl-fault-plan",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(0, (len(text) + 3) // 4),
        }

    def stream(self, model: str, text: str, *, whole: bool = True) -> bytes:
        """A streamed reply (its start only, when not ``whole``), usage last."""
        chunks = [_chunk(model, {"role": "assistant", "content": ""})]
        if text or not whole:
            chunks.append(_chunk(model, {"content": text or "partial"}))
        if whole:
            chunks.append(_chunk(model, {}, finish="stop"))
            chunks.append(
                {**_chunk(model, {}), "choices": [], "usage": _usage(0, (len(text) + 3) // 4)}
            )
        data = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
        return data + (b"data: [DONE]\n\n" if whole else b"")

    def stream_error(self, kind: str) -> bytes:
        """An error in the middle of a stream, as the API sends one."""
        body = {"message": f"injected by the fault plan: {kind}", "type": "server_error"}
        return b"data: " + json.dumps({"error": {**body, "code": "overloaded"}}).encode() + b"\n\n"


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault-plan",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _arguments(text: Any) -> Any:
    """A tool call's arguments: the JSON object the model wrote, else what it wrote as is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


class OpenAIEngine(HttpEngine):
    """One Chat Completions call per step, streamed by default, no SDK retries."""

    api_name = "OpenAI API"
    settings_section = "engines.openai"
    home_host = "api.openai.com"

    def request(
        self,
        ctx: StepContext,
        offered: list[ToolSpec] | None = None,
        turns: list[Any] | None = None,
    ) -> dict[str, Any]:
        """The arguments of one call for ``ctx``: what the SDK sends as the JSON body."""
        prompt = ctx.prompt
        if prompt is None:
            raise ValueError("OpenAIEngine needs ctx.prompt")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
                *(turns or ()),
            ],
        }
        if offered:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": wire_name(spec.name),
                        "description": spec.description,
                        "parameters": spec.input_schema,
                    },
                }
                for spec in offered
            ]
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The JSON body the SDK sends first: what replay matches a recorded call on."""
        return self.request(ctx, self.step_tools(ctx).offered() if ctx.tools else None)

    def send(self, ctx: StepContext, offered: list[ToolSpec], turns: list[Any]) -> Any:
        """One call; a streamed reply is read to its end (text pieces, tool calls, usage)."""
        request = self.request(ctx, offered, turns)
        if not self.stream:
            return self.client.chat.completions.create(**request)
        pieces: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Any = None
        model = None
        with self.client.chat.completions.create(**request) as chunks:
            for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        pieces.append(delta.content)
                    for part in delta.tool_calls or ():
                        call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = part.id or call["id"]
                        if part.function is not None:
                            call["name"] += part.function.name or ""
                            call["arguments"] += part.function.arguments or ""
        return {
            "text": "".join(pieces),
            "usage": usage,
            "model": model,
            "tool_calls": [calls[index] for index in sorted(calls)],
        }

    def read(self, response: Any) -> Reply:
        """The text, tool calls, usage and model of a completion (or of a stream read whole)."""
        if isinstance(response, dict):
            text, usage, model = response["text"], response["usage"], response["model"]
            raw_calls = response["tool_calls"]
        else:
            choices = list(response.choices)
            message = choices[0].message if choices else None
            text = str(message.content or "") if message is not None else ""
            usage, model = response.usage, response.model
            raw_calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in (message.tool_calls or () if message is not None else ())
            ]
        tokens = TokenUsage(
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
        )
        calls = tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), input=_arguments(c["arguments"]))
            for c in raw_calls
        )
        return Reply(text=text, tokens=tokens, model=str(model or self.model), calls=calls)

    def follow_up(self, response: Any, reply: Reply, answers: list[ToolAnswer]) -> list[Any]:
        """The model's turn (its text and tool calls), then one ``tool`` message per answer."""
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text or None,
            "tool_calls": [
                {
                    "id": answer.call.id,
                    "type": "function",
                    "function": {
                        "name": answer.call.name,
                        "arguments": json.dumps(answer.call.input, sort_keys=True),
                    },
                }
                for answer in answers
            ],
        }
        tools = [
            {"role": "tool", "tool_call_id": answer.call.id, "content": answer.output}
            for answer in answers
        ]
        return [assistant, *tools]

    def failure(self, ctx: StepContext, exc: Exception) -> StepOutcome | None:
        """The outcome an error of the call stands for (None: not an error of the call)."""
        import openai

        if isinstance(exc, openai.APIStatusError):
            error = f"OpenAI API answered HTTP {exc.status_code}: {_detail(exc)}"
            if _code(exc) in FATAL_CODES:
                return self.failed(ctx, "fatal", error)
            return self.status_outcome(ctx, exc.status_code, error, exc.response.headers)
        if isinstance(exc, openai.APIResponseValidationError):
            return self.failed(ctx, "fatal", f"OpenAI API reply is not a completion: {exc}")
        if isinstance(exc, openai.APIConnectionError):
            return self.failed(ctx, "retryable", f"cannot reach the OpenAI API: {exc}")
        if isinstance(exc, openai.APIError):  # an error sent in the middle of a stream
            kind = _code(exc) or str(getattr(exc, "type", "") or "")
            code = "fatal" if kind in FATAL_CODES or kind not in RETRYABLE_TYPES else "retryable"
            return self.failed(
                ctx, code, f"OpenAI API stream broke off with an error ({kind}): {_detail(exc)}"
            )
        import httpx2

        if isinstance(exc, httpx2.TransportError):
            return self.failed(ctx, "retryable", f"the OpenAI API reply broke off: {exc}")
        if isinstance(exc, ValueError | TypeError | KeyError | AttributeError | AssertionError):
            return self.failed(
                ctx, "fatal", f"OpenAI API reply could not be read ({type(exc).__name__}: {exc})"
            )
        return None


def _error(exc: Any) -> dict[str, Any]:
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error")
    return inner if isinstance(inner, dict) else body


def _code(exc: Any) -> str:
    return str(_error(exc).get("code") or getattr(exc, "code", None) or "")


def _detail(exc: Any) -> str:
    message = _error(exc).get("message")
    return message if isinstance(message, str) and message else str(exc)


def expected(options: EngineOptions) -> Expected:
    """The model and parameters openai-step's calls send with these settings."""
    settings = openai_settings(options)
    stream = {"stream": True, "stream_options": {"include_usage": True}}
    return Expected(
        model=settings["model"],
        params={
            **({"max_tokens": settings["max_tokens"]} if settings["max_tokens"] else {}),
            **(stream if settings["stream"] else {}),
        },
    )


def missing(options: EngineOptions) -> str | None:
    """What a mode of openai-step lacks before any step runs (None: nothing)."""
    import importlib.util

    if options.mode not in ("sdk", "record", "replay"):
        return None
    if importlib.util.find_spec("openai") is None:
        from swarm_runtime.install import install_command

        install = install_command("openai")
        return f"needs the openai package for openai-step: {install}"
    settings = openai_settings(options)
    if options.mode != "replay" and not settings["api_key"] and not settings["base_url"]:
        return (
            f"makes live API calls and needs {settings['key_env']} (or OPENAI_BASE_URL, or "
            "engines.openai.base_url, for a local OpenAI-compatible server) for openai-step"
        )
    return None


def openai_step(options: EngineOptions) -> StepEngine:
    """``openai-step`` in the run's mode: the stub, or the API through the HTTP layers."""
    from swarm_runtime.engines.base import DEFAULT_TIMEOUT_S
    from swarm_runtime.engines.claude_step import no_mode, stub_engine

    settings = openai_settings(options)
    if options.mode == "stub":
        timeout = settings["timeout_s"]
        return stub_engine("openai-step", "openai", options, timeout, OpenAIEngine.api_name)
    if options.mode not in ("sdk", "record", "replay"):
        raise no_mode("openai-step", options.mode, "stub, sdk, record, replay")
    problem = missing(options)
    if problem is not None:
        raise ConfigError(f"{options.mode} mode {problem}")
    import openai

    from swarm_runtime.engines.http_layers import HttpLayers
    from swarm_runtime.engines.prices import load_prices

    layers = HttpLayers(options, OpenAIWire(), "openai-step")
    timeout_s = float(settings["timeout_s"] or DEFAULT_TIMEOUT_S)
    client = openai.OpenAI(
        # A replay reaches no server, and a local server may want no key: the SDK wants one.
        api_key=settings["api_key"] or "not-needed-without-a-key",
        base_url=settings["base_url"],
        max_retries=0,  # the orchestrator owns retries: one attempt, one HTTP request
        timeout=timeout_s,
        http_client=layers.http_client(),
    )
    return OpenAIEngine(
        client,
        layers=layers,
        settings=HttpSettings(
            model=settings["model"],
            max_tokens=settings["max_tokens"],
            stream=settings["stream"],
            timeout_s=timeout_s,
        ),
        provider=settings["provider"],
        prices=load_prices(settings["prices"], "engines.openai.prices"),
        engine_id="openai-step",
        engine_short="openai",
    )
