"""The documents a run writes, each declared once: events, receipts, spec, meta.

Every document is a frozen ``msgspec`` struct (:mod:`.base`): the run builds it and writes
it, readers read it back through the same class, ``swarm schema`` prints its JSON Schema.
Event kinds are declared in :mod:`.run_events` and :mod:`.route_events`
(:mod:`.payload` says how and why), the receipt in :mod:`.receipt`, ``spec.json`` and
``meta.json`` in :mod:`.run`. The receipt, ``spec.json`` and ``meta.json`` carry
``schema_version``, the version of the contracts they follow (an event line does not).
Nothing here imports pydantic: the run path pays only msgspec.

See docs/contract/index.md.
"""
