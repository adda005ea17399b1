"""The docs' generated regions say what the code says now, and name everything it declares.

``scripts/generate-docs`` writes each ``<!-- generated: NAME -->`` region of the docs from
the declarations (documents, event kinds, argparse parsers, the plugin's options, markers
and fixtures); ``--check`` names every region that is stale, missing or unknown. These
tests run that check on the checkout, show that it catches an edited or unknown region on
a copy, and hold the docs against the code's own lists, read without the generator.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO, load_script

DOCS = REPO / "docs"


def _generator() -> ModuleType:
    return load_script("generate-docs")


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _generator()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the docs, to break on purpose."""
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path


def test_every_generated_region_is_what_the_code_generates_now(generator: ModuleType) -> None:
    found = generator.problems(REPO)
    assert not found, "generated docs are stale; run scripts/generate-docs:\n" + "\n".join(found)


def test_an_edited_region_is_named_with_its_page_and_the_command_that_mends_it(
    generator: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = checkout / "docs" / "contract" / "receipt.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("| `run_id` | string | yes |", "| `run_id` | integer | yes |"))

    assert generator.main(["--check", "--root", str(checkout)]) == 1
    said = capsys.readouterr().err
    assert "docs/contract/receipt.md: region 'receipt-fields' is stale" in said
    assert "run scripts/generate-docs" in said
    assert said.count("\n") == 1  # the other pages are current

    assert generator.main(["--root", str(checkout)]) == 0
    assert page.read_text(encoding="utf-8") == text
    assert generator.main(["--check", "--root", str(checkout)]) == 0


def test_a_region_the_generator_does_not_know_or_a_missing_one_is_named(
    generator: ModuleType, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = checkout / "docs" / "contract" / "events.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(
        text.replace("<!-- generated: stands -->", "<!-- generated: standing -->")
        + "\n<!-- generated: flows -->\n<!-- end generated -->\n",
        encoding="utf-8",
    )
    (checkout / "docs" / "budgets.md").write_text(
        "# Budgets\n\n<!-- generated: budgets -->\n<!-- end generated -->\n", encoding="utf-8"
    )

    assert generator.main(["--check", "--root", str(checkout)]) == 1
    said = capsys.readouterr().err.splitlines()
    assert sorted(said) == [
        "docs/budgets.md: region 'budgets' is not one scripts/generate-docs knows",
        "docs/contract/events.md: region 'flows' is not one scripts/generate-docs knows",
        "docs/contract/events.md: region 'standing' is not one scripts/generate-docs knows",
        "docs/contract/events.md: region 'stands' is missing (add <!-- generated: stands -->)",
    ]


def test_the_generated_text_does_not_depend_on_the_terminal(
    generator: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = generator.generate("docs/reference/cli.md", "commands")
    monkeypatch.setenv("COLUMNS", "40")
    assert _generator().generate("docs/reference/cli.md", "commands") == wide
    assert str(REPO) not in wide


def test_a_pipe_in_a_table_cell_is_escaped(generator: ModuleType) -> None:
    row = generator.table(("a", "b"), [("`x|y` or z", "p|q")]).splitlines()[-1]
    assert row == "| <code>x&#124;y</code> or z | p\\|q |"


# -- Everything the code declares is in the docs -------------------------------------------


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_event_kind_has_its_section_in_the_events_page() -> None:
    from swarm_runtime.documents.events import KINDS

    headings = set(re.findall(r"^### (\S+)$", _page("contract/events.md"), re.M))
    assert set(KINDS) <= headings, sorted(set(KINDS) - headings)
    assert len(KINDS) > 20


def _commands(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(f"{prefix} {name}")
                found += _commands(sub, f"{prefix} {name}")
    return found


def test_every_swarm_command_and_subcommand_has_its_section_in_the_cli_reference() -> None:
    from swarm_runtime.cli.main import build_parser

    commands = _commands(build_parser(), "swarm")
    headings = set(re.findall(r"^#{2,3} (swarm .+)$", _page("reference/cli.md"), re.M))
    assert set(commands) <= headings, sorted(set(commands) - headings)
    assert {"swarm run", "swarm runs validate", "swarm plan run"} <= set(commands)


def test_every_swarm_option_of_pytest_is_in_the_options_table(
    pytestconfig: pytest.Config,
) -> None:
    from pytest_swarm.options import OPTIONS

    flags = {
        "--" + dest.replace("_", "-")
        for dest in vars(pytestconfig.option)
        if dest.startswith("swarm_")
    }
    text = _page("pytest.md")
    missing = sorted(flag for flag in flags if f"| `{flag}` |" not in text)
    assert not missing, missing
    for option in OPTIONS:
        assert f"| `{option.flag}` | `{option.env}` | `{option.ini}` |" in text
    assert "--swarm-coverage-min" in flags


def test_every_swarm_marker_is_in_the_markers_table(pytestconfig: pytest.Config) -> None:
    names = [
        re.split(r"[(:]", line, maxsplit=1)[0]
        for line in pytestconfig.getini("markers")
        if line.startswith("swarm_")
    ]
    text = _page("pytest.md")
    assert names and all(f"`@pytest.mark.{name}(" in text for name in names), names


def test_a_docs_reference_in_a_docstring_becomes_a_link_from_the_page(
    generator: ModuleType,
) -> None:
    said = generator.prose(
        "Who chose (docs/flows.md#decisions); see docs/budgets.md, not ``docs/index.md``.",
        "docs/contract/events.md",
    )
    assert said == (
        "Who chose ([decisions](../flows.md#decisions)); "
        "see [budgets](../budgets.md), not `docs/index.md`."
    )


def test_every_argument_of_every_command_says_what_it_is() -> None:
    """The command-line reference has no empty meaning: each argument has its help text."""
    import argparse

    from swarm_runtime.cli.main import build_parser

    silent: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not action.help and not isinstance(action, argparse._HelpAction):
                silent.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "swarm")
    assert not silent, f"arguments with no help text: {silent}"
