"""How a ``cli``-mode engine runs its CLI: the settings record, read from resolved settings.

The ``claude_cli`` or ``gemini`` section of :func:`swarm_runtime.engines.settings.engine_config`
(executable, model, timeout_s, cli_args, env) becomes one :class:`CliSettings`; the
process's environment is the caller's with the section's ``env`` on top (and, for
claude-step, the base URL).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm_runtime.engines.base import DEFAULT_TIMEOUT_S
from swarm_runtime.record import Record

DEFAULT_GRACE_S = 3.0
"""How long a process may take to end after SIGTERM before it is killed."""


class CliSettings(Record):
    """How the engine runs its CLI: the executable, its environment, model and arguments."""

    executable: str
    env: Mapping[str, str]
    """The process's environment before the engine adds its own (see ``CliEngine.env``)."""
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    """How long a call may take in all (a step's own ``timeout_s`` comes first)."""
    grace_s: float = DEFAULT_GRACE_S
    """How long the process may take to end after SIGTERM before it is killed."""
    extra_args: tuple[str, ...] = ()
    """Appended to every command line (``cli_args`` in runtime.yaml)."""


def cli_settings(engine_id: str, config: Mapping[str, Any]) -> CliSettings:
    """The settings of ``engine_id``'s CLI from ``config`` (see the module docstring)."""
    gemini = engine_id == "gemini-step"
    section = dict(config.get("gemini" if gemini else "claude_cli") or {})
    env = dict(config.get("process_env") or {})
    env.update(section.get("env") or {})
    if not gemini and config.get("base_url"):
        env["ANTHROPIC_BASE_URL"] = str(config["base_url"])
    return CliSettings(
        executable=str(section.get("executable") or ("gemini" if gemini else "claude")),
        env=env,
        model=section.get("model"),
        timeout_s=float(section.get("timeout_s") or DEFAULT_TIMEOUT_S),
        extra_args=tuple(section.get("cli_args") or ()),
    )
