"""--swarm-flows-dir, --swarm-golden-dir, --swarm-cassette-dir, --swarm-runs-dir: precedence
CLI > env > ini > default, and relative paths resolved from where they were given."""

from __future__ import annotations

from pathlib import Path

import pytest

SHOW = """
def test_show(swarm_options):
    for name in ("flows_dir", "golden_dir", "cassette_dir", "runs_dir"):
        print("OPT", name, getattr(swarm_options, name), swarm_options.sources[name])
"""

OPTIONS = [
    ("flows_dir", "--swarm-flows-dir", "SWARM_FLOWS_DIR", "swarm_flows_dir", "flows"),
    ("golden_dir", "--swarm-golden-dir", "SWARM_GOLDEN_DIR", "swarm_golden_dir", "golden"),
    (
        "cassette_dir",
        "--swarm-cassette-dir",
        "SWARM_CASSETTE_DIR",
        "swarm_cassette_dir",
        "golden/cassettes",
    ),
    ("runs_dir", "--swarm-runs-dir", "SWARM_PYTEST_RUNS_DIR", "swarm_runs_dir", None),
]


def _values(pytester: pytest.Pytester, *args: str) -> dict[str, tuple[str, str]]:
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    found = {}
    for line in result.outlines:
        if "OPT " in line:
            _, name, value, source = line[line.index("OPT ") :].split(" ", 3)
            found[name] = (value, source)
    return found


@pytest.mark.parametrize(("name", "flag", "env", "ini", "default"), OPTIONS)
def test_each_dir_option_precedence(
    swarm_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    flag: str,
    env: str,
    ini: str,
    default: str | None,
) -> None:
    root = swarm_pytester.path
    swarm_pytester.makepyfile(SHOW)
    value, source = _values(swarm_pytester)[name]
    if default is None:
        assert (value, source) == ("None", "default")
    else:
        assert (value, source) == (str(root / default), "default")
    swarm_pytester.makeini(f"[pytest]\n{ini} = from-ini\n")
    assert _values(swarm_pytester)[name] == (str(root / "from-ini"), f"ini {ini}")
    monkeypatch.setenv(env, str(root / "from-env"))
    assert _values(swarm_pytester)[name] == (str(root / "from-env"), env)
    assert _values(swarm_pytester, f"{flag}=from-cli")[name] == (str(root / "from-cli"), flag)


def test_flows_dir_is_what_flow_runner_runs(swarm_pytester: pytest.Pytester) -> None:
    mine = swarm_pytester.path / "mine"
    mine.mkdir()
    (mine / "solo.yaml").write_text(
        "key: solo\ntitle: Solo\ndescription: One step.\nsteps:\n"
        "  - id: only\n    agents: [worker]\n    role: Does it.\n"
        "    teaching_notes: {inputs: [a], outputs: [b], emphasizes: [c], constraints: [d]}\n"
    )
    swarm_pytester.makepyfile(
        """
        def test_runs_my_flow(flow_runner):
            record = flow_runner()
            assert record.status == "succeeded"
            assert record.steps_executed() == [("solo", "only")]
        """
    )
    swarm_pytester.runpytest(f"--swarm-flows-dir={mine}").assert_outcomes(passed=1)


def test_runs_dir_option_keeps_runs_there(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_run(flow_runner):
            assert flow_runner("stepwise-demo").status == "succeeded"
        """
    )
    target = swarm_pytester.path / "kept-runs"
    swarm_pytester.runpytest(f"--swarm-runs-dir={target}").assert_outcomes(passed=1)
    runs = [p.name for p in Path(target).iterdir()]
    assert len(runs) == 1 and runs[0].startswith("run-")


def test_a_missing_flows_dir_names_the_settings(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_run(flow_runner):
            flow_runner("signal")
        """
    )
    result = swarm_pytester.runpytest("--swarm-flows-dir=nowhere")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*flows dir */nowhere (from --swarm-flows-dir) does not exist; set --swarm-flows-dir, "
            "SWARM_FLOWS_DIR or the swarm_flows_dir ini key*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_bad_slice_names_the_argument(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_run(flow_runner):
            flow_runner("signal", start_step="nope")
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*swarm: start_step=nope: no such step*"])


def test_the_clis_runs_dir_variable_does_not_pool_test_runs(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = swarm_pytester.path / "exported"
    monkeypatch.setenv("SWARM_RUNS_DIR", str(shared))  # exported for `swarm run`, say
    swarm_pytester.makepyfile(
        """
        def test_one(flow_runner, tmp_path):
            record = flow_runner("stepwise-demo")
            assert tmp_path in record.path.parents  # the test's own runs dir

        def test_two(flow_runner, tmp_path):
            assert tmp_path in flow_runner("stepwise-demo").path.parents
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=2)
    assert not shared.exists()


def test_default_dirs_are_found_from_the_rootdir_in_a_subdirectory(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    swarm_pytester.makeini("[pytest]\n")
    tests = swarm_pytester.mkdir("tests")
    (tests / "test_demo.py").write_text(
        "def test_demo(flow_runner):\n"
        "    assert flow_runner('stepwise-demo').status == 'succeeded'\n"
    )
    monkeypatch.chdir(tests)  # `cd tests && pytest`
    swarm_pytester.runpytest().assert_outcomes(passed=1)
