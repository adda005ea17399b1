"""Where a scenario's golden run lives, by mode family (no syrupy needed to know it)."""

from __future__ import annotations

REPLAY_SUFFIX = ".replay"
"""Goldens of recorded runs live beside the stub's: ``golden/<scenario>.replay/``."""


def golden_scenario(scenario: str, mode: str) -> str:
    """Where a scenario's golden lives in ``mode``: one golden per mode family.

    A stub run and a recorded run of the same flows differ (mode, model, tokens,
    cassettes), so each family has its own; live modes have none (see ``SwarmGolden``).
    """
    return scenario + REPLAY_SUFFIX if mode in ("replay", "record") else scenario
