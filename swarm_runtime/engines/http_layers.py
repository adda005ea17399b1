"""Record, replay, faults and the secret scrub, as layers over HTTP, for any provider.

An engine whose SDK sends its requests through an httpx2 client (the anthropic and openai
SDKs both take one as ``http_client=``) gets every mode by taking the client
:meth:`HttpLayers.http_client` hands it and wrapping each call in :meth:`HttpLayers.call`:

- ``replay``: the client's transport answers from the step's cassette (no server, no patched
  library); a request no recording matches fails the step naming the part that changed;
- ``record``: vcrpy records the call to the step's cassette, scrubbed of credentials;
- a fault plan: the armed fault is answered in the provider's own shapes (its :class:`Wire`)
  before any of that;
- ``sdk``: the network, with a deadline on the whole call.

One cassette format (vcrpy YAML), one strict matcher, one scrub, one fault injector for
every engine; the layers never import a provider SDK.

See docs/engines.md#engines-over-http.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from swarm_runtime.credentials import Credentials

if TYPE_CHECKING:
    from swarm_runtime.engines.base import StepContext
    from swarm_runtime.engines.cassette import Recorder
    from swarm_runtime.engines.fault_http import Wire
    from swarm_runtime.engines.options import EngineOptions
    from swarm_runtime.engines.replay import Replayer


class HttpLayers:
    """What sits between one engine's SDK and the network, for the run's mode."""

    def __init__(self, options: EngineOptions, wire: Wire, engine_id: str = "") -> None:
        self.options = options
        self.wire = wire
        self.credentials: Credentials = options.credentials
        cassettes = options.cassettes
        self.cassettes = cassettes
        self._layer: Recorder | Replayer | None = None
        if cassettes is not None:
            cassettes.needs.add(wire.needs)
        if cassettes is not None and cassettes.record:
            from swarm_runtime.engines.cassette import Recorder

            self._layer = Recorder(cassettes, self.credentials, wire.needs, engine_id)
        elif cassettes is not None:
            from swarm_runtime.engines.cassette import require_vcrpy
            from swarm_runtime.engines.replay import Replayer

            require_vcrpy()  # say what to install before the first step, not at it
            self._layer = Replayer(cassettes, self.credentials, wire.needs)

    @property
    def replays(self) -> bool:
        """Answered from cassettes: no server is reached, no key is needed."""
        return self.cassettes is not None and not self.cassettes.record

    def http_client(self) -> Any:
        """An httpx2 client for the engine's SDK, with the mode's layers under it."""
        import httpx2

        from swarm_runtime.engines.deadline import deadline_hooks
        from swarm_runtime.engines.replay import Replayer

        kwargs: dict[str, Any] = {**deadline_hooks(), "follow_redirects": True}
        if isinstance(self._layer, Replayer):
            kwargs["transport"] = self._layer.transport()
        client = httpx2.Client(**kwargs)
        if self.options.faults is not None:  # a fault plan: its faults come from here
            from swarm_runtime.engines.fault_http import wrap_client

            wrap_client(client, self.options.faults, self.wire)
        return client

    @contextlib.contextmanager
    def call(self, ctx: StepContext) -> Iterator[None]:
        """One call of the step in ``ctx``: recorded to, or answered from, its cassette."""
        if self._layer is None:
            yield
            return
        with self._layer.call(ctx):
            yield

    def tape(self) -> Recorder | Replayer | None:
        """Where the step's tool calls are recorded to or replayed from (None: not at all)."""
        return self._layer

    def recorded_host(self) -> str | None:
        """In a replay, the host the call played last was recorded against; else None."""
        from urllib.parse import urlsplit

        from swarm_runtime.engines.replay import Replayer

        if not isinstance(self._layer, Replayer) or self._layer.last_uri is None:
            return None
        return urlsplit(self._layer.last_uri).hostname

    def cassette_for(self, ctx: StepContext) -> str | None:
        """The cassette a recorded or replayed call goes through, as receipts name it."""
        if self.cassettes is None:
            return None
        return self.cassettes.label(self.cassettes.path(ctx))

    def close(self) -> None:
        """Write what was recorded, note what a replay never played."""
        layer, self._layer = self._layer, None
        if layer is not None:
            layer.close()
