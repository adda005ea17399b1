"""``claude-step`` and ``gemini-step`` in ``cli`` mode: one CLI process per step call.

The argv is a list (never a shell), the prompt goes on stdin, and the process gets an
environment that keeps it quiet and non-interactive: no telemetry, no update checks, no
side traffic, no retries of its own (the orchestrator owns retries,
docs/contract/steps.md#result-codes). Its ``stream-json`` output is read line by line as it is
written (:mod:`.streams`). A missing executable, a non-zero exit, a timeout, a malformed line and a
stream without a result line each end the call with a clear error; the process group is always
ended. A step's tools reach the CLI as :mod:`.cli_tools` says: the CLI's own by name, MCP servers'
and the run's Python tools through an MCP config written for the call.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import (
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    truncate_output,
)
from swarm_runtime.engines.cli_settings import CliSettings, cli_settings
from swarm_runtime.engines.cli_tools import (
    CliTools,
    McpName,
    claude_mcp_name,
    cli_tools,
    gemini_mcp_name,
    private_file,
)
from swarm_runtime.engines.prices import estimate_cost, load_prices
from swarm_runtime.engines.process import ProcessEnd, run_process
from swarm_runtime.engines.streams import ClaudeStream, GeminiStream, StreamReport
from swarm_runtime.errors import ConfigError

if TYPE_CHECKING:
    from swarm_runtime.tools.box import ToolBox

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
MAX_ARG_BYTES = 100_000
"""A system prompt longer than this goes through a file (one argv string is limited)."""
_STDERR_LINES = 3


def _stderr_tail(end: ProcessEnd) -> str:
    lines = [line.strip() for line in end.stderr.splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:])[-600:]


class CliEngine(StepEngine):
    """What both CLI engines share: the process, its end, the outcome."""

    mode = "cli"
    cli_name = "the CLI"
    provider = "none"
    setting = ""
    """The variable that names the executable (in messages)."""
    install = ""
    """How to install the CLI (in messages)."""
    fault_kinds: frozenset[str] = frozenset({"cli_exit"})
    """The fault kinds of a plan this engine serves (docs/faults.md); the others are refused."""
    mcp_name: McpName = staticmethod(claude_mcp_name)
    """How the CLI names a tool of an MCP server."""

    def __init__(
        self,
        *,
        settings: CliSettings,
        prices: dict[str, dict[str, float]] | None = None,
        engine_id: str,
        engine_short: str,
        tools: ToolBox | None = None,
    ) -> None:
        self.executable = settings.executable
        self.base_env = dict(settings.env)
        self.model = settings.model
        self.timeout_s = settings.timeout_s
        self.grace_s = settings.grace_s
        self.extra_args = settings.extra_args
        self.prices = prices if prices is not None else load_prices()
        self.engine_id = engine_id
        self.engine_short = engine_short
        self.tools = tools
        """The run's Python tools and MCP servers (None: a step's tools are the CLI's own)."""
        self._scratch: Path | None = None
        self._call = threading.local()
        """The tools of the call in progress on this thread, and its MCP config file."""

    # -- what a subclass says ------------------------------------------------------------

    def argv(self, ctx: StepContext) -> list[str]:
        """The command line of one call."""
        raise NotImplementedError

    def stdin(self, ctx: StepContext) -> str:
        """What goes on the process's stdin."""
        raise NotImplementedError

    def reader(self, names: Mapping[str, str] | None = None) -> StreamReport:
        """A fresh reader of the CLI's stream (``names``: the CLI's tool names -> the flow's)."""
        raise NotImplementedError

    def step_tools(self, ctx: StepContext) -> CliTools:
        """The step's tools as this CLI knows them (ConfigError: one cannot be served)."""
        return cli_tools(ctx.tools, self.tools, self.mcp_name)

    def call_tools(self, ctx: StepContext) -> tuple[CliTools, Path | None]:
        """The tools of the call in progress, and its MCP config file (None: no servers)."""
        current: tuple[CliTools, Path | None] | None = getattr(self._call, "tools", None)
        return current if current is not None else (self.step_tools(ctx), None)

    @contextmanager
    def tool_config(self, tools: CliTools) -> Iterator[Path]:
        """The MCP config of ``tools`` in a private file for the call, removed after it."""
        with private_file(self.scratch, tools.config(cwd_key=False)) as path:
            yield path

    def env(self, ctx: StepContext) -> dict[str, str]:
        """The process's environment."""
        return dict(self.base_env)

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """What the CLI is given: the prompt and tools, its model and extra arguments."""
        return {**super().request_body(ctx), "model": self.model, "args": list(self.extra_args)}

    def cassette_for(self, ctx: StepContext) -> str | None:
        """The cassette a recorded or replayed call goes through (a subclass says)."""
        return None

    # -- the call ------------------------------------------------------------------------

    @property
    def scratch(self) -> Path:
        """A private directory for the CLI's temporary files, removed by :meth:`close`."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"swarm-{self.engine_short}-"))
        return self._scratch

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """Run the CLI once for the step and turn what it printed into an outcome."""
        if ctx.prompt is None:
            raise ValueError(f"{type(self).__name__} needs ctx.prompt")
        try:
            tools = self.step_tools(ctx)
        except ConfigError as exc:
            return self._failed(ctx, self.reader(), f"{self.cli_name}: {exc}")
        report = self.reader(tools.names)
        timeout = ctx.timeout_s or self.timeout_s
        with ExitStack() as files:
            try:
                config = files.enter_context(self.tool_config(tools)) if tools.servers else None
            except ConfigError as exc:
                return self._failed(ctx, report, f"{self.cli_name}: {exc}")
            self._call.tools = (tools, config)
            try:
                end = self.launch(ctx, report, timeout)
            except FileNotFoundError:
                return self._failed(
                    ctx,
                    report,
                    f"{self.cli_name}: no executable {self.executable!r} (not on PATH and not "
                    f"a file); {self.install}, or set {self.setting} to its path",
                )
            except OSError as exc:
                return self._failed(
                    ctx,
                    report,
                    f"{self.cli_name}: cannot start {self.executable!r}: {exc.strerror or exc}",
                )
            finally:
                self._call.tools = None
        return self.outcome(ctx, report, end, timeout)

    def launch(self, ctx: StepContext, report: StreamReport, timeout: float) -> ProcessEnd:
        """Start the process and read it to its end (a cassette engine wraps this)."""
        return run_process(
            self.argv(ctx),
            stdin=self.stdin(ctx),
            env=self.env(ctx),
            cwd=ctx.repo_root,
            timeout_s=timeout,
            grace_s=self.grace_s,
            on_line=report.feed,
        )

    def outcome(
        self, ctx: StepContext, report: StreamReport, end: ProcessEnd, timeout: float
    ) -> StepOutcome:
        """The outcome of a call from the stream and the process's end."""
        from swarm_runtime.engines.handoff import parse_handoff
        from swarm_runtime.errors import HandoffError

        name = self.cli_name
        if end.timed_out:
            killed = "; it ignored SIGTERM and was killed" if end.killed else ""
            return self._failed(
                ctx,
                report,
                f"{name} did not finish within {timeout:g} s and was stopped{killed} "
                "(raise the step's timeout_s, or timeout_s of the engine in runtime.yaml)",
            )
        if end.broken is not None:
            return self._failed(ctx, report, f"{name}: {end.broken}; the process was stopped")
        if report.error is not None:
            return self._failed(ctx, report, report.error, report.error_code)
        tail = _stderr_tail(end)
        if report.result is None:
            how = f"exited with status {end.exit_code}" if end.exit_code else "ended its output"
            return self._failed(
                ctx, report, f"{name} {how} without a result line" + (f": {tail}" if tail else "")
            )
        if end.exit_code:
            return self._failed(
                ctx,
                report,
                f"{name} exited with status {end.exit_code} after its result"
                + (f": {tail}" if tail else ""),
            )
        text = report.text
        try:
            handoff = parse_handoff(text)
        except HandoffError as exc:
            return self._failed(ctx, report, f"the reply's handoff block is unusable: {exc}")
        model = report.model or self.model or "unknown"
        cost = report.cost_usd
        if cost is None:
            cost = estimate_cost(self.prices, model, report.tokens)
        transcript = list(report.transcript)
        if not report.texts:  # the contract wants the reply as an assistant line
            transcript.append({"role": "assistant", "content": text})
        return StepOutcome(
            result=StepResult(
                step_id=ctx.step_id, status="succeeded", output=truncate_output(text)
            ),
            events=tuple(report.events),
            text=text,
            handoff=handoff,
            tokens=report.tokens,
            model=model,
            provider=self.provider,
            mode="cli",
            transcript=tuple(transcript),
            cost_usd=cost,
            cassette=self.cassette_for(ctx),
        )

    def _failed(
        self, ctx: StepContext, report: StreamReport, error: str, code: str = "fatal"
    ) -> StepOutcome:
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="failed", error=error),
            events=tuple(report.events),
            result_code=code,  # type: ignore[arg-type]
            text=report.text,
            tokens=report.tokens,
            model=report.model or self.model or "unknown",
            provider=self.provider,
            mode="cli",
            transcript=tuple(report.transcript),
            cost_usd=self._spent(report),
            cassette=self.cassette_for(ctx),
        )

    def _spent(self, report: StreamReport) -> float | None:
        """A failed call's cost: the CLI's own, an estimate of its tokens, or unknown.

        Nothing was spent when no token was; a call that did use tokens never counts as
        free (None when its model has no price).
        """
        if report.cost_usd is not None:
            return report.cost_usd
        if not report.tokens.total:
            return 0.0
        return estimate_cost(self.prices, report.model or self.model or "unknown", report.tokens)

    def close(self) -> None:
        """Remove the scratch directory."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


CLAUDE_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
}
"""What keeps Claude Code quiet: no side traffic, updates, telemetry or retries of its own
(a broken stream is not asked again without streaming: the orchestrator retries)."""
NESTED_MARKERS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT")
"""Set when swarm itself runs inside Claude Code; a child CLI must not inherit them."""


class ClaudeCliEngine(CliEngine):
    """``claude -p --output-format stream-json --verbose``, prompt on stdin."""

    cli_name = "Claude Code CLI"
    setting = "SWARM_CLAUDE_CLI"
    install = "install it with: npm install -g @anthropic-ai/claude-code"

    def __init__(self, *, provider: str = "anthropic", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.provider = provider

    def argv(self, ctx: StepContext) -> list[str]:
        """``-p``, stream-json, the model, the system prompt and the step's tools."""
        assert ctx.prompt is not None
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if self.model:
            argv += ["--model", self.model]
        system = ctx.prompt.system
        if len(system.encode("utf-8")) > MAX_ARG_BYTES:
            path = self.scratch / f"system-{ctx.step_id}.md"
            path.write_text(system, encoding="utf-8")
            argv += ["--system-prompt-file", str(path)]
        else:
            argv += ["--system-prompt", system]
        tools, config = self.call_tools(ctx)
        # --tools is the CLI's own tools ("" none); MCP servers come only from our config.
        argv += ["--tools", ",".join(tools.native), "--strict-mcp-config"]
        if config is not None:
            argv += ["--mcp-config", str(config)]
        if tools.allowed:
            argv += ["--allowed-tools", ",".join(tools.allowed)]
        return argv + list(self.extra_args)

    def stdin(self, ctx: StepContext) -> str:
        """The user part of the prompt."""
        assert ctx.prompt is not None
        return ctx.prompt.user

    def reader(self, names: Mapping[str, str] | None = None) -> StreamReport:
        """A reader of Claude Code's stream."""
        return ClaudeStream(names=names)

    def env(self, ctx: StepContext) -> dict[str, str]:
        """The caller's environment, quietened, with a scratch dir of its own."""
        env = {k: v for k, v in self.base_env.items() if k not in NESTED_MARKERS}
        env.update(CLAUDE_QUIET)
        env["CLAUDE_CODE_TMPDIR"] = str(self.scratch)
        return env


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}
"""The settings a Gemini CLI home gets when the key comes from GEMINI_API_KEY."""


class GeminiCliEngine(CliEngine):
    """``gemini -p … --output-format stream-json -m MODEL``, prompt on stdin."""

    cli_name = "Gemini CLI"
    provider = "gemini"
    setting = "SWARM_GEMINI_CLI"
    install = "install it with: npm install -g @google/gemini-cli"
    mcp_name = staticmethod(gemini_mcp_name)

    def argv(self, ctx: StepContext) -> list[str]:
        """Headless mode (the prompt is all on stdin), stream-json, the model, the tools."""
        argv = [self.executable, "-p", "", "--output-format", "stream-json"]
        argv += ["-m", self.model or DEFAULT_GEMINI_MODEL]
        for tool in self.call_tools(ctx)[0].allowed:
            argv += ["--allowed-tools", tool]
        return argv + list(self.extra_args)

    def stdin(self, ctx: StepContext) -> str:
        """The Gemini CLI has no system prompt flag: the system part comes first."""
        assert ctx.prompt is not None
        return f"{ctx.prompt.system}\n\n---\n\n{ctx.prompt.user}"

    def reader(self, names: Mapping[str, str] | None = None) -> StreamReport:
        """A reader of the Gemini CLI's stream."""
        return GeminiStream(names=names)

    def env(self, ctx: StepContext) -> dict[str, str]:
        """The caller's environment; with an API key, a home of its own that selects it.

        Headless, the CLI takes GEMINI_API_KEY only when its settings select that kind of
        login: a scratch home (``GEMINI_CLI_HOME``) holds those settings, so the user's own
        ``~/.gemini`` is neither needed nor touched. Without a key the user's login is used.
        """
        env = dict(self.base_env)
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
        home = self._home()
        if home is not None:
            settings = home / ".gemini" / "settings.json"
            if not settings.is_file():  # a step's MCP servers may be in it (tool_config)
                settings.parent.mkdir(parents=True, exist_ok=True)
                settings.write_text(json.dumps(GEMINI_SETTINGS), encoding="utf-8")
            env["GEMINI_CLI_HOME"] = str(home)
        return env

    def _home(self) -> Path | None:
        """The CLI's scratch home, when it gets one (a key, and no GEMINI_CLI_HOME given)."""
        if self.base_env.get("GEMINI_API_KEY") and "GEMINI_CLI_HOME" not in self.base_env:
            return self.scratch / "home"
        return None

    @contextmanager
    def tool_config(self, tools: CliTools) -> Iterator[Path]:
        """The step's MCP servers in the settings of the scratch home, for this call only.

        The Gemini CLI reads MCP servers from its settings (``mcpServers``), and the user's
        own settings are never written: MCP and Python tools need the scratch home, so a
        key in GEMINI_API_KEY and no GEMINI_CLI_HOME.
        """
        home = self._home()
        if home is None:
            raise ConfigError(
                "the step's MCP and Python tools reach the Gemini CLI through the settings of "
                "a home of its own, which it gets only with GEMINI_API_KEY set and "
                "GEMINI_CLI_HOME unset"
            )
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        document = {**GEMINI_SETTINGS, **tools.config(cwd_key=True)}
        with private_file(home / ".gemini", document, "settings.json") as path:
            yield path


def build_cli_engine(
    engine_id: str,
    config: Mapping[str, Any],
    *,
    engine_class: Callable[..., CliEngine] | None = None,
    **extra: Any,
) -> CliEngine:
    """The CLI engine of ``engine_id`` from resolved settings.

    ``config`` is :func:`swarm_runtime.engines.settings.engine_config`'s: the ``claude_cli`` or
    ``gemini`` section (executable, model, timeout_s, cli_args, env), the base URL, prices;
    :func:`.cli_settings.cli_settings` reads the section.
    """
    gemini = engine_id == "gemini-step"
    cls = engine_class or (GeminiCliEngine if gemini else ClaudeCliEngine)
    kwargs: dict[str, Any] = {
        "settings": cli_settings(engine_id, config),
        "prices": load_prices(config.get("prices")),
        "engine_id": engine_id,
        "engine_short": "gemini" if gemini else "claude",
    }
    if not gemini:
        # A replay names the provider of the recordings (made against a base URL), as the
        # sdk path does.
        compat = config.get("base_url") or config.get("replays")
        kwargs["provider"] = "anthropic_compat" if compat else "anthropic"
    return cls(**kwargs, **extra)
