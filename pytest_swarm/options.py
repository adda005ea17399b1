"""The plugin's options, and their precedence: CLI > environment > ini > default.

Every option is declared once in ``OPTIONS``; :func:`resolve` applies the precedence in
this one place and remembers where each value came from, for the report header and for
error messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.config import MODES, NAVIGATOR_MODES
from swarm_runtime.install import install_command


class Option:
    """One setting: its flag, environment variable, ini key, default and help."""

    __slots__ = ("default", "env", "flag", "help", "ini", "name")

    def __init__(self, name: str, env: str, default: str, help: str) -> None:
        self.name = name
        self.flag = "--swarm-" + name.replace("_", "-")
        self.env = env
        self.ini = "swarm_" + name
        self.default = default
        self.help = help


OPTIONS = (
    Option(
        "mode",
        "SWARM_MODE",
        "stub",
        "engine mode: stub (no network), replay (cassettes only), record, sdk, cli",
    ),
    Option("flows_dir", "SWARM_FLOWS_DIR", "flows", "flows directory"),
    Option("golden_dir", "SWARM_GOLDEN_DIR", "golden", "golden runs directory"),
    Option("cassette_dir", "SWARM_CASSETTE_DIR", "golden/cassettes", "cassettes directory"),
    Option(
        "record_mode",
        "SWARM_RECORD_MODE",
        "",
        "what record and replay do with cassettes: none (replay only), once (record the "
        "tests that have none, replay the rest), new_episodes (record the calls that "
        "changed or have none, in place of their old recording), all (record everything "
        "again); default: all in record mode, none in replay",
    ),
    Option(
        "block_network",
        "SWARM_BLOCK_NETWORK",
        "auto",
        "refuse connections off this machine during each test: yes, no, or auto (yes in "
        "replay and with --swarm-record-mode=none)",
    ),
    Option(
        "navigator",
        "SWARM_NAVIGATOR",
        "",
        "how a navigator step's move is chosen: llm (asked of the navigator) or deterministic "
        "(the first candidate that holds, no call); default: runtime.yaml's, else llm",
    ),
    Option(
        "runs_dir",
        "SWARM_PYTEST_RUNS_DIR",  # not the CLI's SWARM_RUNS_DIR: tests keep their runs apart
        "",
        "where test runs are written (default: a temporary directory per test)",
    ),
    Option(
        "results",
        "SWARM_RESULTS",
        "swarm-results.jsonl",
        "the file each session appends a line to per test that ran flows and per judgement "
        "(swarm results prints the trend); none: write nothing",
    ),
    Option(
        "repeat",
        "SWARM_REPEAT",
        "1",
        "run each test that uses flow_runner N times in sdk and cli modes (once in stub, "
        "replay and record); it fails unless every repetition passes; a swarm_repeat "
        "marker's n and min_pass_rate win for its test",
    ),
)


class SwarmOptions:
    """Resolved option values with the source of each (``cli``, ``env``, ``ini``, ``default``)."""

    __slots__ = (
        "block_network",
        "cassette_dir",
        "contract",
        "flows_dir",
        "golden_dir",
        "mode",
        "navigator",
        "record_mode",
        "repeat",
        "results",
        "runs_dir",
        "sources",
    )

    def __init__(
        self, values: Mapping[str, str], sources: Mapping[str, str], *, contract: bool
    ) -> None:
        self.mode = values["mode"]
        self.flows_dir = Path(values["flows_dir"])
        self.golden_dir = Path(values["golden_dir"])
        self.cassette_dir = Path(values["cassette_dir"])
        self.runs_dir = Path(values["runs_dir"]) if values["runs_dir"] else None
        self.record_mode = values["record_mode"]
        """none, once, new_episodes or all (set from the mode when not given)."""
        self.block_network = values["block_network"] == "yes"
        self.navigator = values["navigator"] or None
        """llm or deterministic when given; None leaves it to runtime.yaml (else llm)."""
        self.results = None if values["results"] == "none" else Path(values["results"])
        """Where the session's results lines go (None: nowhere)."""
        self.repeat = int(values["repeat"])
        """How many times a test that uses flow_runner runs in the live modes (sdk, cli)."""
        self.sources = dict(sources)
        self.contract = contract

    def describe(self) -> str:
        """One line for the pytest report header."""
        record = f", record mode {self.record_mode}" if self.mode in ("record", "replay") else ""
        blocked = ", network blocked" if self.block_network else ""
        repeat = f", repeat {self.repeat}" if self.repeat > 1 else ""
        return (
            f"swarm: mode={self.mode} ({self.sources['mode']}){record}{blocked}{repeat}, "
            f"flows={self.flows_dir}" + (", contract suite" if self.contract else "")
        )


def add_options(parser: pytest.Parser) -> None:
    """Register the ``swarm`` option group and the ini keys."""
    group = parser.getgroup("swarm", "swarm-stepwise: run and check agent flows")
    for option in OPTIONS:
        group.addoption(
            option.flag,
            dest="swarm_" + option.name,
            default=None,
            help=f"{option.help} (env {option.env}, ini {option.ini}, default "
            f"{option.default or 'none'})",
        )
        parser.addini(
            option.ini,
            f"{option.help} (overridden by {option.env} and {option.flag})",
            default=None,
        )
    group.addoption(
        "--swarm-warn-unused",
        action="store_true",
        default=False,
        help="only warn about goldens and cassette dirs no test used (else they fail the session)",
    )
    group.addoption(
        "--swarm-prune-cassettes",
        action="store_true",
        default=False,
        help="after the whole suite in record or replay mode, delete cassette dirs no test used",
    )
    group.addoption(
        "--swarm-contract",
        action="store_true",
        default=False,
        help="run the packaged contract suite against --swarm-flows-dir and your engines",
    )


def resolve(config: pytest.Config, env: Mapping[str, str] | None = None) -> SwarmOptions:
    """Apply the precedence CLI > environment > ini > default to every option."""
    environ = os.environ if env is None else env
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        cli_value: Any = config.getoption("swarm_" + option.name)
        ini_value: Any = config.getini(option.ini)
        if cli_value not in (None, ""):
            values[option.name], sources[option.name] = str(cli_value), option.flag
        elif environ.get(option.env):
            values[option.name], sources[option.name] = environ[option.env], option.env
        elif ini_value not in (None, ""):
            values[option.name], sources[option.name] = str(ini_value), f"ini {option.ini}"
        else:
            values[option.name], sources[option.name] = option.default, "default"
    if values["mode"] not in MODES:
        raise pytest.UsageError(
            f"swarm: mode {values['mode']!r} from {sources['mode']} is not one of "
            f"{', '.join(MODES)}"
        )
    if values["navigator"] not in ("", *NAVIGATOR_MODES):
        raise pytest.UsageError(
            f"swarm: navigator {values['navigator']!r} from {sources['navigator']} is not one "
            f"of {', '.join(NAVIGATOR_MODES)}"
        )
    _record_mode(values, sources)
    _block_network(values, sources)
    _repeat(values, sources)
    for name in ("flows_dir", "golden_dir", "cassette_dir", "runs_dir", "results"):
        if name == "results" and values[name] == "none":
            continue
        if values[name] and sources[name] == f"ini swarm_{name}":
            base = config.inipath.parent if config.inipath else config.rootpath
            values[name] = str(base / values[name])  # ini paths: from the ini file's dir
        elif values[name] and sources[name] == "default":
            values[name] = str(config.rootpath / values[name])  # `cd tests && pytest` works
        elif values[name] and not Path(values[name]).is_absolute():
            values[name] = str(Path(config.invocation_params.dir) / values[name])
    return SwarmOptions(values, sources, contract=bool(config.getoption("swarm_contract")))


_NEEDS = {"record": ("vcr",), "replay": ("vcr",)}
"""The packages a mode needs whatever the engine (vcrpy's module is ``vcr``); each engine
says what else it needs (its SDK, a key) through its registered check."""


RECORD_MODES = ("none", "once", "new_episodes", "all")


def _record_mode(values: dict[str, str], sources: dict[str, str]) -> None:
    """The record mode, and the mode it means: none replays, the others record."""
    record_mode = values["record_mode"]
    if not record_mode:
        values["record_mode"] = "all" if values["mode"] == "record" else "none"
        return
    if record_mode not in RECORD_MODES:
        raise pytest.UsageError(
            f"swarm: record mode {record_mode!r} from {sources['record_mode']} is not one of "
            f"{', '.join(RECORD_MODES)}"
        )
    wanted = "replay" if record_mode == "none" else "record"
    if sources["mode"] == "default":
        values["mode"], sources["mode"] = wanted, sources["record_mode"]
    elif values["mode"] != wanted:
        raise pytest.UsageError(
            f"swarm: record mode {record_mode} (from {sources['record_mode']}) goes with "
            f"--swarm-mode={wanted}, not {values['mode']} (from {sources['mode']}); give one "
            "of them alone"
        )


def _block_network(values: dict[str, str], sources: dict[str, str]) -> None:
    value = values["block_network"]
    if value not in ("auto", "yes", "no"):
        raise pytest.UsageError(
            f"swarm: block network {value!r} from {sources['block_network']} is not one of "
            "auto, yes, no"
        )
    if value == "auto":
        values["block_network"] = "yes" if values["mode"] == "replay" else "no"


def _repeat(values: dict[str, str], sources: dict[str, str]) -> None:
    value = values["repeat"].strip()
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise pytest.UsageError(
            f"swarm: repeat {values['repeat']!r} from {sources['repeat']} is not a whole "
            "number of 1 or more (how many times a test runs in sdk and cli modes)"
        )
    values["repeat"] = value


def _importable(module: str) -> bool:
    """Whether ``module`` is installed, found without importing it.

    The process that runs no test (xdist's controller) never pays for the import.
    """
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _engines_in_use(options: SwarmOptions, rootpath: Path) -> tuple[Any, set[str]]:
    """The resolved settings and every engine some step of the project's flows runs on.

    Resolved as a run resolves it (a step's ``engine:``, then runtime.yaml's
    ``engine_strategy``, else claude-step); a project whose flows or runtime.yaml do not
    load counts as using claude-step: their errors are reported by the tests that run them.
    """
    from swarm_runtime.config import Settings, resolve_settings
    from swarm_runtime.errors import SwarmError
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import engines_in_use

    try:
        settings = resolve_settings(env=os.environ, mode=options.mode, cwd=rootpath)
        registry = FlowRegistry(options.flows_dir)
        keys = registry.keys()
        flows = [registry.get(key) for key in keys]
    except (SwarmError, OSError):
        return Settings(mode=options.mode), {"claude-step"}
    return settings, engines_in_use(flows, settings.engine_strategy, "claude-step")


def check_credentials(options: SwarmOptions, rootpath: Path) -> None:
    """Stop at start-up when a mode lacks what it needs, saying what to set or install.

    Each engine some step of the project's flows runs on is asked (its registered check):
    claude-step wants a key, a server or the Claude Code CLI, openai-step its key or base
    URL; an engine of the user's own checks its own.
    """
    mode = options.mode
    missing = [name for name in _NEEDS.get(mode, ()) if not _importable(name)]
    if missing:
        names = " and ".join("vcrpy" if name == "vcr" else name for name in missing)
        raise pytest.UsageError(
            f"swarm: mode {mode} (from {options.sources['mode']}) needs {names}: "
            f"{install_command('pytest')} (everything the plugin needs to record, replay and "
            "compare goldens)"
        )
    if mode == "stub":
        return
    from swarm_runtime.engines.options import options_for
    from swarm_runtime.plugins import engine_registry

    settings, engines = _engines_in_use(options, rootpath)
    registry = engine_registry()
    for engine_id in sorted(engines):
        section = registry.section_of(engine_id) or ""
        problem = registry.missing(engine_id, options_for(settings, os.environ, section, mode=mode))
        if problem is not None:
            hint = ""
            if "live API calls" in problem:
                hint = (
                    "; set it, or use --swarm-mode=stub (no network) or --swarm-mode=replay "
                    "(cassettes)"
                )
            raise pytest.UsageError(
                f"swarm: mode {mode} (from {options.sources['mode']}) {problem}{hint}"
            )


OPTIONS_KEY = pytest.StashKey[SwarmOptions]()
"""Where the resolved options live on ``config.stash``."""
