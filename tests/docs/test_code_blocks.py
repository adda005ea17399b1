"""Every code block of README.md and docs/ runs, as a reader would run it.

Each page's blocks run in page order in a fresh project of their own (see ``blocks``): files
written where the page says, commands run in the project with the package installed, a
provider's calls going to a local fake server with a fake key. A block that makes the
environment itself (``setup="install"``) is run by ``scripts/check-install`` in a fresh
virtual environment, or is the README's test command, which ``.ci/run`` runs as written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO, load_script
from tests.docs import blocks
from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.openai_server import OpenAIServer

pytestmark = pytest.mark.swarm_modes("stub")  # a page's commands choose their own modes

PAGES = dict(blocks.iter_pages(REPO))
RUNNABLE = [page for page, found in PAGES.items() if any(b.runs for b in found)]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    anthropic, openai = AnthropicServer().start(), OpenAIServer().start()
    try:
        yield {"anthropic": anthropic.url, "openai": openai.url}
    finally:
        anthropic.stop()
        openai.stop()


def _check_install() -> ModuleType:
    return load_script("check-install")


def test_every_block_of_every_page_is_marked_to_run_or_shown_as_text() -> None:
    found = [problem for page in PAGES.values() for problem in blocks.problems(page)]
    assert not found, "\n".join(found)
    assert "README.md" in RUNNABLE and "docs/getting-started.md" in RUNNABLE


def test_a_block_marked_wrongly_is_named_with_its_page_and_line() -> None:
    text = (
        "# A page\n\n```yaml\na: 1\n```\n\n```sh\nls\n```\n\n"
        '```bash id="x"\nls\n```\n\n```bash id="x" exit="one"\nls\n```\n'
        '\n```python id="y" title="/etc/passwd"\nprint()\n```\n'
    )
    found = blocks.problems(blocks.read_blocks(text, "docs/a.md"))
    assert any(p.startswith("docs/a.md:3 ") and "needs id=" in p for p in found)
    assert any(p.startswith("docs/a.md:3 ") and "needs title=" in p for p in found)
    assert any(p.startswith("docs/a.md:7 ") and "language 'sh'" in p for p in found)
    assert any(p.startswith("docs/a.md:15 ") and "used twice" in p for p in found)
    assert any(p.startswith("docs/a.md:15 ") and "exit= takes" in p for p in found)
    assert any(p.startswith("docs/a.md:19 ") and "no file of the project" in p for p in found)


def test_every_setup_block_is_run_by_the_fresh_environment_check_or_by_ci() -> None:
    setup = {
        (page, block.id)
        for page, found in PAGES.items()
        for block in found
        if "setup" in block.attributes
    }
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    by_ci = {
        (page, block.id)
        for page, found in PAGES.items()
        for block in found
        if "setup" in block.attributes and block.body.strip() in ci
    }
    assert set(_check_install().SETUP_BLOCKS) == setup - by_ci
    assert ("README.md", "test-command") in by_ci


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_pages_blocks_run(page: str, tmp_path: Path, servers: dict[str, str]) -> None:
    blocks.linked_venv(tmp_path)
    run = blocks.PageRun(tmp_path, blocks.block_env(tmp_path, servers, os.environ))
    run.run(PAGES[page])
    for key in blocks.FAKE_KEYS.values():
        leaked = [
            path
            for path in tmp_path.rglob("*")
            if path.is_file() and ".venv" not in path.parts and key.encode() in path.read_bytes()
        ]
        assert not leaked, f"{page}: the fake key is written in {leaked}"


def test_a_page_whose_command_fails_says_which_block(tmp_path: Path) -> None:
    text = '# P\n\n```bash id="fine"\ntrue\n```\n\n```bash id="broken"\necho out; exit 3\n```\n'
    blocks.linked_venv(tmp_path)
    run = blocks.PageRun(tmp_path, blocks.block_env(tmp_path, {}, os.environ))
    with pytest.raises(blocks.BlockError) as failed:
        run.run(blocks.read_blocks(text, "docs/p.md"))
    assert "docs/p.md:7 (block broken) exited 3, the page expects 0" in str(failed.value)
    assert "out" in str(failed.value)


def test_the_site_renders_every_block_of_every_page_as_code() -> None:
    """The attributes the tests read never cost the reader a block: each fence of a page is
    one highlighted block of the page the site renders, whatever attributes it carries."""
    import markdown
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    names, settings = [], {}
    for entry in config["markdown_extensions"]:
        name, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, {})
        names.append(name)
        settings[name] = options or {}
    settings["pymdownx.snippets"] = {
        **settings.get("pymdownx.snippets", {}),
        "base_path": [str(REPO)],
    }
    hooks = load_script("docs_hooks.py")
    broken = []
    for page, found in PAGES.items():
        if page == "README.md":
            continue
        text = (REPO / page).read_text(encoding="utf-8")
        html = markdown.Markdown(extensions=names, extension_configs=settings).convert(
            hooks.on_page_markdown(text)
        )
        rendered = html.count('class="highlight"')
        if rendered != len(found):
            broken.append(f"{page}: {len(found)} blocks, {rendered} rendered as code")
    assert not broken, "\n".join(broken)
