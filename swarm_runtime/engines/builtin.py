"""The engines that ship: one registration each.

See docs/engines.md#engines-and-modes and docs/engines.md#engines-over-http.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.settings import CLAUDE_KEYS, GEMINI_KEYS, OPENAI_KEYS

if TYPE_CHECKING:
    from swarm_runtime.engines.base import StepEngine
    from swarm_runtime.engines.options import EngineOptions
    from swarm_runtime.engines.request_parts import Expected


def _claude(options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.claude_step import claude_step

    return claude_step(options)


def _gemini(options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.claude_step import gemini_step

    return gemini_step(options)


def _openai(options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.openai_step import openai_step

    return openai_step(options)


def _claude_missing(options: EngineOptions) -> str | None:
    from swarm_runtime.engines.claude_step import missing

    return missing(options)


def _openai_missing(options: EngineOptions) -> str | None:
    from swarm_runtime.engines.openai_step import missing

    return missing(options)


def _claude_expected(options: EngineOptions) -> Expected:
    from swarm_runtime.engines.claude_step import expected

    return expected(options)


def _openai_expected(options: EngineOptions) -> Expected:
    from swarm_runtime.engines.openai_step import expected

    return expected(options)


def register_builtin_engines(registry: Any) -> None:
    """Register ``claude-step``, ``gemini-step`` and ``openai-step`` in ``registry``.

    (An :class:`~swarm_runtime.engines.registry.EngineRegistry`, which imports this module.)
    """
    from swarm_runtime.engines.settings import claude_config, gemini_config, openai_settings

    registry.register(
        "claude-step",
        _claude,
        section="claude",
        keys=CLAUDE_KEYS,
        check=_claude_missing,
        expected=_claude_expected,
        settings=claude_config,
    )
    registry.register(
        "gemini-step", _gemini, section="gemini", keys=GEMINI_KEYS, settings=gemini_config
    )
    registry.register(
        "openai-step",
        _openai,
        section="openai",
        keys=OPENAI_KEYS,
        check=_openai_missing,
        expected=_openai_expected,
        settings=openai_settings,
    )
