"""The built-in handler of each v1 step type (docs/plans.md).

Each reads its payload (``{"$ref": …}`` values resolved, see :mod:`.refs`), checks it, and
returns its type's result. The repository ones live in :mod:`.repo`. Summaries are
extractive (the reply's opening, its most frequent words as keywords), so a cycle in stub
mode stays deterministic.
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.plan.handlers import Handler, HandlerError, HandlerRegistry, StepCall
from swarm_runtime.plan.memory_store import keywords_of
from swarm_runtime.plan.refs import fill_template, payload_fields
from swarm_runtime.plan.repo import context_select, repo_scan
from swarm_runtime.plan.validate import LIMITS
from swarm_runtime.timeutil import format_ts

SUMMARY_CHARS = 280
KEYWORDS = 8


def retrieve_memory(call: StepCall) -> dict[str, Any]:
    """``{input, topK?}`` → the memories that best match the input, at most ``topK``."""
    payload = payload_fields(call, {"input": str}, {"topK": int})
    limit = int(call.metadata.get("topK") or 0)
    if "topK" in payload:
        if not 1 <= payload["topK"] <= LIMITS["topK"]:
            raise HandlerError(
                f"payload.topK must be a whole number from 1 to {LIMITS['topK']}, got "
                f"{str(payload['topK'])[:40]}"
            )
        limit = min(limit, payload["topK"]) if limit else payload["topK"]
    return {"items": call.memory().search(payload["input"], limit)}


def prompt_assemble(call: StepCall) -> dict[str, Any]:
    """``{template, vars}`` → the template with each ``{{name}}`` filled from ``vars``."""
    payload = payload_fields(call, {"template": str, "vars": dict})
    return {"prompt": fill_template(payload["template"], payload["vars"])}


def llm_call(call: StepCall) -> dict[str, Any]:
    """``{prompt, config: {system?, engine?}}`` → the model's reply."""
    payload = payload_fields(call, {"prompt": str, "config": dict})
    config = payload["config"]
    for key, value in config.items():
        if key not in ("system", "engine"):
            raise HandlerError(f"payload.config.{key} is not allowed (allowed: system, engine)")
        if not isinstance(value, str):
            raise HandlerError(f"payload.config.{key} must be text, got {value!r:.80}")
    reply = call.complete(
        payload["prompt"], system=config.get("system"), engine=config.get("engine")
    )
    return {"response": reply.text}


def summarize_memory(call: StepCall) -> dict[str, Any]:
    """``{response}`` → its opening as the summary, its most frequent words as keywords."""
    payload = payload_fields(call, {"response": str})
    text = " ".join(payload["response"].split())
    if not text:
        raise HandlerError("payload.response is empty: there is nothing to summarise")
    summary = text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
    return {"summary": summary, "keywords": keywords_of(text, KEYWORDS)}


def persist_memory(call: StepCall) -> dict[str, Any]:
    """``{summary, keywords, sessionRef}`` → the id of the memory stored."""
    payload = payload_fields(call, {"summary": str, "keywords": list, "sessionRef": str})
    keywords = payload["keywords"]
    if not all(isinstance(word, str) for word in keywords):
        raise HandlerError("payload.keywords must be a list of text")
    if not payload["summary"].strip():
        raise HandlerError("payload.summary is empty: there is nothing to remember")
    memory_id = call.memory().add_memory(
        summary=payload["summary"],
        keywords=keywords,
        session_ref=payload["sessionRef"],
        run_id=call.run_id,
        created_at=format_ts(call.clock()),
        cancelled=call.cancelled,
    )
    return {"id": memory_id}


def persist_session(call: StepCall) -> dict[str, Any]:
    """``{sessionRef, meta}`` → ``created`` or ``updated``: the session and this cycle."""
    payload = payload_fields(call, {"sessionRef": str, "meta": dict})
    if not payload["sessionRef"].strip():
        raise HandlerError("payload.sessionRef is empty")
    status = call.memory().save_session(
        session_ref=payload["sessionRef"],
        meta=payload["meta"],
        run_id=call.run_id,
        at=format_ts(call.clock()),
        cancelled=call.cancelled,
    )
    return {"status": status}


BUILTINS: dict[str, Handler] = {
    "RepoScan": repo_scan,
    "ContextSelect": context_select,
    "RetrieveMemory": retrieve_memory,
    "PromptAssemble": prompt_assemble,
    "LLMCall": llm_call,
    "SummarizeMemory": summarize_memory,
    "PersistMemory": persist_memory,
    "PersistSession": persist_session,
}
"""The handler of each v1 type, in canonical order."""


def default_handlers() -> HandlerRegistry:
    """A registry with the built-in handler of every v1 type, then the plugins' handlers."""
    registry = HandlerRegistry()
    for step_type, handler in BUILTINS.items():
        registry.register(step_type, handler)
    registry.load_entry_points()
    return registry
