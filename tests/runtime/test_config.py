"""runtime.yaml: engine settings reach the engines, and a wrong value names the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from swarm_runtime.config import Settings, resolve_settings
from swarm_runtime.engines.options import options_for
from swarm_runtime.engines.settings import claude_config, gemini_config
from swarm_runtime.errors import ConfigError


def _config(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "runtime.yaml"
    path.write_text(text)
    return claude_config(
        options_for(resolve_settings(env={}, config_path=path, cwd=tmp_path), {}, "claude")
    )


def _engine(settings: Settings, env: dict[str, str], name: str) -> dict[str, object]:
    """What the engine whose section is ``engines.<name>`` reads of ``settings`` and ``env``."""
    read = {"claude": claude_config, "gemini": gemini_config}[name]
    return read(options_for(settings, env, name))


def test_streaming_is_on_unless_runtime_yaml_turns_it_off(tmp_path: Path) -> None:
    assert "stream" not in _config(tmp_path, "engines:\n  claude:\n    model: m\n")
    assert _config(tmp_path, "engines:\n  claude:\n    stream: false\n")["stream"] is False


def test_a_stream_setting_that_is_not_true_or_false_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"engines.claude.stream must be true or false"):
        _config(tmp_path, "engines:\n  claude:\n    stream: sometimes\n")


def _yaml_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "runtime.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("env", "yaml", "argument", "mode"),
    [
        ({}, "", None, "stub"),  # the default
        ({"SWARM_GEMINI_STUB": "0"}, "", None, "cli"),
        ({"SWARM_GEMINI_STUB": "1"}, "engines: {gemini: {mode: cli}}\n", None, "stub"),
        ({}, "engines: {gemini: {mode: cli}}\n", None, "cli"),
        ({"SWARM_GEMINI_STUB": "0"}, "", "stub", "stub"),  # --gemini-mode
    ],
)
def test_gemini_mode_comes_from_argument_env_file_then_default(
    tmp_path: Path, env: dict[str, str], yaml: str, argument: str | None, mode: str
) -> None:
    settings = resolve_settings(
        env=env,
        config_path=_yaml_file(tmp_path, yaml),
        engine_given={"gemini": {"mode": argument}},
        cwd=tmp_path,
    )
    assert _engine(settings, env, "gemini")["mode"] == mode


@pytest.mark.parametrize(
    ("env", "yaml", "given", "message"),
    [
        (
            {"SWARM_GEMINI_STUB": "yes"},
            "",
            {},
            "SWARM_GEMINI_STUB: 'yes' is not one of 1 (stub, the default), 0 (run the Gemini CLI)",
        ),
        ({}, "engines: {gemini: {mode: sdk}}\n", {}, "engines.gemini.mode: 'sdk' is not one of"),
        ({}, "", {"gemini": {"mode": "warp"}}, "--gemini-mode: 'warp' is not one of stub, cli"),
        ({"SWARM_RECORD_VIA": "http"}, "", {}, "SWARM_RECORD_VIA: 'http' is not one of sdk, cli"),
        ({}, "engines: {claude: {record_via: tape}}\n", {}, "engines.claude.record_via: 'tape'"),
        ({}, "", {"claude": {"record_via": "tape"}}, "--record-via: 'tape' is not one of sdk, cli"),
    ],
)
def test_a_bad_engine_setting_names_where_it_came_from(
    tmp_path: Path,
    env: dict[str, str],
    yaml: str,
    given: dict[str, dict[str, str]],
    message: str,
) -> None:
    settings = resolve_settings(
        env=env, config_path=_yaml_file(tmp_path, yaml), engine_given=given, cwd=tmp_path
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        _engine(settings, env, "gemini")
        _engine(settings, env, "claude")


def test_a_bad_durable_variable_names_where_it_came_from(tmp_path: Path) -> None:
    message = "SWARM_DURABLE: 'yes' is not one of 1 (fsync every write), 0 (the default)"
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_settings(
            env={"SWARM_DURABLE": "yes"}, config_path=_yaml_file(tmp_path, ""), cwd=tmp_path
        )


def test_cli_executables_come_from_the_environment_before_runtime_yaml(tmp_path: Path) -> None:
    path = _yaml_file(
        tmp_path, "engines: {claude: {cli: /opt/claude, timeout_s: 20}, gemini: {cli: g}}\n"
    )
    env = {"SWARM_GEMINI_CLI": "/usr/local/bin/gemini"}
    settings = resolve_settings(env=env, config_path=path, cwd=tmp_path)
    assert _engine(settings, env, "claude")["claude_cli"] == {
        "executable": "/opt/claude",
        "timeout_s": 20.0,
    }
    assert _engine(settings, env, "gemini")["gemini"] == {"executable": "/usr/local/bin/gemini"}


def test_a_cli_timeout_out_of_range_is_refused(tmp_path: Path) -> None:
    path = _yaml_file(tmp_path, "engines: {claude: {timeout_s: 0}}\n")
    settings = resolve_settings(env={}, config_path=path, cwd=tmp_path)
    with pytest.raises(ConfigError, match=r"engines.claude.timeout_s must be a number of seconds"):
        _engine(settings, {}, "claude")


@pytest.mark.parametrize(
    ("env", "yaml", "argument", "mode", "source"),
    [
        ({}, "", None, "llm", "default"),
        ({}, "navigator: {mode: deterministic}\n", None, "deterministic", "navigator.mode"),
        (
            {"SWARM_NAVIGATOR": "llm"},
            "navigator: {mode: deterministic}\n",
            None,
            "llm",
            "SWARM_NAVIGATOR",
        ),
        ({"SWARM_NAVIGATOR": "llm"}, "", "deterministic", "deterministic", "--navigator"),
    ],
)
def test_the_navigator_mode_comes_from_flag_env_file_then_default(
    tmp_path: Path, env: dict[str, str], yaml: str, argument: str | None, mode: str, source: str
) -> None:
    settings = resolve_settings(
        env=env, config_path=_yaml_file(tmp_path, yaml), navigator=argument, cwd=tmp_path
    )
    assert (settings.navigator, settings.sources["navigator"].endswith(source)) == (mode, True)


@pytest.mark.parametrize(
    ("env", "yaml", "message"),
    [
        ({"SWARM_NAVIGATOR": "smart"}, "", "SWARM_NAVIGATOR: 'smart' is not one of llm, determ"),
        ({}, "navigator: {mode: always}\n", "navigator.mode: 'always' is not one of llm, determ"),
        ({}, "navigator: {depth: 3}\n", "'navigator' must be a mapping with 'mode'"),
        ({}, "navigator: {max_depth: 0}\n", "navigator.max_depth must be a whole number from 1"),
        ({}, "navigator: {max_depth: '3'}\n", "navigator.max_depth must be a whole number from 1"),
    ],
)
def test_a_bad_navigator_mode_names_where_it_came_from(
    tmp_path: Path, env: dict[str, str], yaml: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_settings(env=env, config_path=_yaml_file(tmp_path, yaml), cwd=tmp_path)


def test_the_stack_depth_comes_from_runtime_yaml_and_reaches_the_run(tmp_path: Path) -> None:
    from swarm_runtime.orchestrator.assembly import build_orchestrator

    settings = resolve_settings(
        env={}, config_path=_yaml_file(tmp_path, "navigator: {max_depth: 2}\n"), cwd=tmp_path
    )
    assert settings.max_depth == 2
    default = resolve_settings(env={}, config_path=_yaml_file(tmp_path, ""), cwd=tmp_path)
    assert default.max_depth == 4
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "a.yaml").write_text(
        'key: a\ntitle: "A"\ndescription: "A."\nsteps:\n  - id: s\n    agents: [w]\n'
        '    role: "R."\n    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], '
        "constraints: [c]}\n"
    )
    from swarm_runtime.flow.registry import FlowRegistry

    orchestrator = build_orchestrator(settings, FlowRegistry(tmp_path / "flows"), env={})
    assert orchestrator.limits.max_depth == 2
    assert orchestrator.origin_document()["max_depth"] == 2  # what swarm resume reads


@pytest.mark.parametrize(
    ("env", "yaml", "argument", "value", "source"),
    [
        ({}, "", None, 30.0, "default"),
        ({}, "max_retry_after_s: 120\n", None, 120.0, "runtime.yaml"),
        ({"SWARM_MAX_RETRY_AFTER_S": "2.5"}, "max_retry_after_s: 120\n", None, 2.5, "SWARM_"),
        ({"SWARM_MAX_RETRY_AFTER_S": "2.5"}, "", 0.0, 0.0, "max_retry_after_s"),
    ],
)
def test_the_retry_after_cap_comes_from_argument_env_file_then_default(
    tmp_path: Path,
    env: dict[str, str],
    yaml: str,
    argument: float | None,
    value: float,
    source: str,
) -> None:
    settings = resolve_settings(
        env=env, config_path=_yaml_file(tmp_path, yaml), max_retry_after_s=argument, cwd=tmp_path
    )
    assert settings.max_retry_after_s == value
    assert source in settings.sources["max_retry_after_s"]


@pytest.mark.parametrize(
    ("env", "yaml", "message"),
    [
        ({"SWARM_MAX_RETRY_AFTER_S": "soon"}, "", "SWARM_MAX_RETRY_AFTER_S: 'soon' is not a"),
        ({"SWARM_MAX_RETRY_AFTER_S": "nan"}, "", "SWARM_MAX_RETRY_AFTER_S: 'nan' is not a"),
        ({}, "max_retry_after_s: -1\n", "runtime.yaml: max_retry_after_s: -1 is not a number"),
        ({}, "max_retry_after_s: true\n", "max_retry_after_s: True is not a number of seconds"),
        ({}, "max_retry_after_s: [1]\n", "max_retry_after_s: [1] is not a number of seconds"),
        ({}, "max_retry_after_s: 1e9\n", "from 0 to 86400"),
    ],
)
def test_a_retry_after_cap_that_is_no_number_of_seconds_is_refused(
    tmp_path: Path, env: dict[str, str], yaml: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_settings(env=env, config_path=_yaml_file(tmp_path, yaml), cwd=tmp_path)


@pytest.mark.parametrize(
    ("name", "in_file", "env", "argument", "expected"),
    [
        ("mode", "replay", "sdk", "record", ("replay", "sdk", "record")),
        ("runs_dir", "b", "a", Path("/c"), (Path("b"), Path("a"), Path("/c"))),
        (
            "navigator",
            "deterministic",
            "llm",
            "deterministic",
            ("deterministic", "llm", "deterministic"),
        ),
        ("max_retry_after_s", 9, "7", 5.0, (9.0, 7.0, 5.0)),
    ],
)
def test_every_setting_takes_the_argument_then_the_environment_then_the_file(
    tmp_path: Path,
    name: str,
    in_file: object,
    env: str,
    argument: object,
    expected: tuple[object, ...],
) -> None:
    from swarm_runtime.config import SETTINGS

    setting = SETTINGS[name]
    *sections, key = setting.key.split(".")
    yaml = "".join(f"{'  ' * n}{part}:\n" for n, part in enumerate(sections))
    path = _yaml_file(tmp_path, yaml + f"{'  ' * len(sections)}{key}: {in_file!r}\n")

    def resolved(environ: dict[str, str], **explicit: object) -> tuple[object, str]:
        settings = resolve_settings(env=environ, config_path=path, cwd=tmp_path, **explicit)
        value = getattr(settings, name)
        if name == "runs_dir" and value.is_relative_to(tmp_path):
            value = value.relative_to(tmp_path)  # a relative runs dir is under the project
        return value, settings.sources[name]

    assert resolved({}) == (expected[0], f"{path}: {setting.key}")
    assert resolved({setting.env: env}) == (expected[1], setting.env)
    assert resolved({setting.env: env}, **{name: argument}) == (expected[2], setting.flag)
    default = resolve_settings(env={}, cwd=tmp_path)
    assert default.sources[name] == "default"


@pytest.mark.parametrize(
    ("section", "key", "variable", "in_file", "env", "argument", "expected"),
    [
        ("gemini", "mode", "SWARM_GEMINI_STUB", "cli", "1", "cli", ("cli", "stub", "cli")),
        ("claude", "record_via", "SWARM_RECORD_VIA", "cli", "sdk", "cli", ("cli", "sdk", "cli")),
    ],
)
def test_every_engine_setting_takes_the_flag_then_the_environment_then_the_file(
    tmp_path: Path,
    section: str,
    key: str,
    variable: str,
    in_file: str,
    env: str,
    argument: str,
    expected: tuple[str, str, str],
) -> None:
    path = _yaml_file(tmp_path, f"engines:\n  {section}:\n    {key}: {in_file}\n")

    def resolved(environ: dict[str, str], given: str | None = None) -> object:
        settings = resolve_settings(
            env=environ, config_path=path, cwd=tmp_path, engine_given={section: {key: given}}
        )
        return _engine(settings, environ, section)[key]

    assert resolved({}) == expected[0]
    assert resolved({variable: env}) == expected[1]
    assert resolved({variable: env}, argument) == expected[2]
    default = resolve_settings(env={}, config_path=_yaml_file(tmp_path, ""), cwd=tmp_path)
    assert _engine(default, {}, section)[key] == {"mode": "stub", "record_via": "sdk"}[key]


def test_the_old_engines_claude_mode_is_the_runs_mode_and_says_to_write_mode(
    tmp_path: Path,
) -> None:
    path = _yaml_file(tmp_path, "engines: {claude: {mode: sdk}}\n")
    settings = resolve_settings(env={}, config_path=path, cwd=tmp_path)
    assert settings.mode == "sdk"
    assert settings.sources["mode"] == f"{path}: engines.claude.mode"
    (notice,) = settings.notices
    assert str(path) in notice and "write 'mode: sdk' at the top of the file" in notice
    # The new key wins, and the old one is named as not read.
    path.write_text("mode: replay\nengines: {claude: {mode: sdk}}\n", encoding="utf-8")
    settings = resolve_settings(env={}, config_path=path, cwd=tmp_path)
    assert settings.mode == "replay"
    (notice,) = settings.notices
    assert "engines.claude.mode is not read" in notice
    # Written where it goes now, there is nothing to say.
    path.write_text("mode: sdk\n", encoding="utf-8")
    assert resolve_settings(env={}, config_path=path, cwd=tmp_path).notices == ()


@pytest.mark.parametrize(
    ("yaml", "argument", "message"),
    [
        ("", {"mode": "warp"}, "--mode: 'warp' is not one of stub, replay, record, sdk, cli"),
        ("engines: {claude: {mode: live}}\n", {}, "runtime.yaml: engines.claude.mode: 'live' is"),
        ("runs_dir: ''\n", {}, "runtime.yaml: runs_dir: '' is not a path: name a directory"),
    ],
)
def test_a_bad_setting_names_the_flag_or_the_file_and_key(
    tmp_path: Path, yaml: str, argument: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_settings(env={}, config_path=_yaml_file(tmp_path, yaml), cwd=tmp_path, **argument)
