"""A run's events as server-sent events, within bounds per client and in all.

Each open stream holds at most one chunk of the log (``chunk_bytes``, read and sent before
the next is read), at most ``max_streams`` streams are open at once (more are answered 503
with ``Retry-After``), and a client that takes nothing for ``slow_client_seconds`` is
dropped: its page reconnects with ``Last-Event-ID`` and goes on from there. So a studio's
memory does not grow with a slow or stalled client, nor with how long a run's log is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from swarm_runtime.record import Record
from swarm_runtime.studio.tail import EventTail


class StreamLimits(Record):
    """How much the event streams of one studio may hold."""

    max_streams: int = 32
    chunk_bytes: int = 256 * 1024
    slow_client_seconds: float = 30.0
    poll_seconds: float = 0.25
    keepalive_seconds: float = 15.0


class StreamSlots:
    """Counts the open streams; ``on_drop`` hears of each client dropped as too slow."""

    def __init__(self, limits: StreamLimits, on_drop: Callable[[str], None] | None) -> None:
        self.limits = limits
        self.open = 0
        self.on_drop = on_drop

    def full(self) -> bool:
        """Whether another stream would be one too many."""
        return self.open >= self.limits.max_streams


class _EventStream(StreamingResponse):
    """A streaming response that counts itself open and drops a client that takes nothing."""

    def __init__(self, body: AsyncIterator[str], slots: StreamSlots, run_id: str) -> None:
        super().__init__(
            body,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        self.slots = slots
        self.run_id = run_id
        slots.open += 1

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        timeout = self.slots.limits.slow_client_seconds
        async for chunk in self.body_iterator:
            data = chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8")
            message = {"type": "http.response.body", "body": data, "more_body": True}
            try:
                # A send waits while the client's buffer is full: one that never drains
                # would hold this stream (and what it read) for ever.
                await asyncio.wait_for(send(message), timeout)
            except TimeoutError:
                if self.slots.on_drop is not None:
                    self.slots.on_drop(self.run_id)
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slots.open -= 1
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()


def event_stream(
    slots: StreamSlots,
    run_id: str,
    tail: EventTail,
    *,
    live: Callable[[], bool],
    closing: Callable[[], bool],
    disconnected: Callable[[], Any],
) -> StreamingResponse:
    """The SSE response of one run's events from ``tail`` on (the caller checked a slot)."""
    return _EventStream(_events(slots.limits, tail, live, closing, disconnected), slots, run_id)


async def _events(
    limits: StreamLimits,
    tail: EventTail,
    live: Callable[[], bool],
    closing: Callable[[], bool],
    disconnected: Callable[[], Any],
) -> AsyncIterator[str]:
    yield f"retry: {int(limits.poll_seconds * 4000)}\n\n"
    quiet = 0.0
    while not closing():
        events = await run_in_threadpool(tail.poll, max_bytes=limits.chunk_bytes)
        for event in events:
            yield f"id: {event['seq']}\ndata: {json.dumps(event)}\n\n"
        if tail.pending:
            continue  # more of the log is there already: the next chunk, without waiting
        if not events and tail.last_kind == "run_completed" and not live():
            yield f"event: end\ndata: {json.dumps({'last_seq': tail.last_seq})}\n\n"
            return
        quiet = 0.0 if events else quiet + limits.poll_seconds
        if quiet >= limits.keepalive_seconds:
            quiet = 0.0
            yield ": keep-alive\n\n"
        if await disconnected():
            return
        await asyncio.sleep(limits.poll_seconds)
