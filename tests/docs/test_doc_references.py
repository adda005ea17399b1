"""Every docs page the code cites exists, with the heading its anchor names.

The code, tests, scripts and other files outside ``docs/`` point a reader at the page that
explains them, written as a repository path: ``docs/flows.md#navigator``. A page that moves
or a heading that is renamed breaks those pointers silently, so every one is checked here
against the page's headings, with their anchors made as MkDocs makes them (python-markdown's
``toc`` slugs, ``{#id}`` attributes honoured, headings in fenced code blocks not headings).
The old contract text the docs replaced is not in the repository, so no file may cite it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import markdown
import pytest
from markdown.extensions.toc import slugify

from tests.conftest import REPO

REFERENCE = re.compile(r"(?<![\w./'\"-])docs/((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
"""``docs/<path>.md`` with an optional ``#anchor``, not part of a longer path.

A path that opens a quoted string (``read_blocks(text, "docs/a.md")``) is a value a test
or a tool works with, not a pointer to the site, so it is not a reference.
"""

OLD_CONTRACT = ("SPEC" + " §", "SPEC" + ".md")
"""How a file would cite the old contract text (split here so this file does not)."""

SKIPPED_DIRS = {".git", "site", "node_modules", "__pycache__"}
"""Directories a walk of a tree without git leaves out, besides ``.venv*`` and caches."""

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
ATTRIBUTES = re.compile(r"[ \t]*\{:?([^}]*)\}[ \t]*$")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
NUMBERED = re.compile(r"^(.*)_(\d+)$")


def repository_files(root: Path) -> list[Path]:
    """The repository's files: git's tracked ones, or, with no git, every file of the tree."""
    if (root / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout.decode()
        return [root / name for name in sorted(listed.split("\0")) if (root / name).is_file()]
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_DIRS and not d.startswith(".venv") and not d.endswith("_cache")
        )
        files += [Path(folder) / name for name in sorted(names)]
    return files


def text_of(path: Path) -> str | None:
    """A file's text, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def heading_lines(markdown: str) -> list[tuple[str, bool]]:
    """The text of each heading line of a page, in order, and whether it is a setext one.

    Lines inside fenced code blocks are not headings, and neither is front matter.
    """
    lines = markdown.splitlines()
    if lines and lines[0].strip() == "---" and "---" in (line.strip() for line in lines[1:]):
        end = 1 + [line.strip() for line in lines[1:]].index("---")
        lines = [""] * (end + 1) + lines[end + 1 :]
    headings: list[tuple[str, bool]] = []
    fence: str | None = None
    previous = ""
    for line in lines:
        opened = FENCE.match(line)
        if fence is not None:
            closes = opened is not None and opened.group(1).startswith(fence)
            if closes and not line.strip().lstrip(fence[0]):
                fence = None
            previous = ""
            continue
        if opened:
            fence = opened.group(1)
            previous = ""
            continue
        atx = ATX.match(line)
        if atx:
            headings.append((atx.group(2) or "", False))
            previous = ""
            continue
        if SETEXT.match(line) and previous.strip() and not previous.startswith((" " * 4, "\t")):
            headings.append((previous.strip(), True))
            previous = ""
            continue
        previous = line
    return headings


def page_anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings, as MkDocs makes them."""
    anchors: set[str] = set()
    for text, _setext in heading_lines(markdown):
        explicit = None
        attributes = ATTRIBUTES.search(text)
        if attributes:
            text = text[: attributes.start()]
            for token in attributes.group(1).split():
                if token.startswith("#"):
                    explicit = token[1:]
        if explicit is not None:
            anchors.add(explicit)
            continue
        anchor = slugify(LINK.sub(r"\1", text), "-")
        while anchor in anchors or not anchor:
            numbered = NUMBERED.match(anchor)
            if numbered:
                anchor = f"{numbered.group(1)}_{int(numbered.group(2)) + 1}"
            else:
                anchor = f"{anchor}_1"
        anchors.add(anchor)
    return anchors


def broken_references(root: Path) -> list[str]:
    """``file:line: reference: why`` for each docs reference outside docs/ that leads nowhere."""
    anchors: dict[str, set[str] | None] = {}
    found = []
    for path in repository_files(root):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("docs/"):
            continue
        text = text_of(path)
        if text is None or "docs/" not in text:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for reference in REFERENCE.finditer(line):
                page, anchor = reference.groups()
                if page not in anchors:
                    target = root / "docs" / page
                    anchors[page] = (
                        page_anchors(target.read_text(encoding="utf-8"))
                        if target.is_file()
                        else None
                    )
                known = anchors[page]
                if known is None:
                    why = "no such page"
                elif anchor is not None and anchor not in known:
                    why = f"no heading of docs/{page} has the anchor #{anchor}"
                else:
                    continue
                found.append(f"{relative}:{number}: {reference.group(0)}: {why}")
    return found


def old_contract_mentions(root: Path) -> list[str]:
    """``file:line: text`` for each line of any file, docs/ too, that cites the old contract."""
    found = []
    for path in repository_files(root):
        text = text_of(path)
        if text is None or not any(mention in text for mention in OLD_CONTRACT):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(mention in line for mention in OLD_CONTRACT):
                found.append(f"{path.relative_to(root).as_posix()}:{number}: {line.strip()}")
    return found


# -- the repository ---------------------------------------------------------------------


def test_every_docs_reference_leads_to_a_page_and_its_heading() -> None:
    broken = broken_references(REPO)
    assert not broken, "docs references that lead nowhere:\n" + "\n".join(broken)


def test_no_file_cites_the_old_contract_text() -> None:
    mentions = old_contract_mentions(REPO)
    assert not mentions, "cite the docs page instead:\n" + "\n".join(mentions)


def test_the_repository_cites_its_docs() -> None:
    # The check above passes vacuously if the references stop being found at all.
    cited = [
        line
        for path in repository_files(REPO)
        if path.suffix == ".py" and "docs/" in (path.read_text(encoding="utf-8"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if REFERENCE.search(line)
    ]
    assert len(cited) > 100


# -- the checker, on trees made here ----------------------------------------------------

PAGE = """\
# Writing flows

## Files

```yaml
# not a heading
```

~~~~
## Not a heading either
~~~~

## Pause, stop and resume

### The `swarm` command

## Files

## Routing kinds {#kinds}

Runs across machines
--------------------
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def ref(target: str) -> str:
    """A docs reference, assembled so that this file's own text cites no page."""
    return "docs" + "/" + target


def test_anchors_are_mkdocs_slugs_of_headings_outside_code_blocks() -> None:
    expected = {
        "writing-flows",
        "files",
        "pause-stop-and-resume",
        "the-swarm-command",
        "files_1",
        "kinds",
        "runs-across-machines",
    }
    assert page_anchors(PAGE) == expected
    # The ids python-markdown gives the page's headings, with the site's extensions.
    rendered = markdown.markdown(
        PAGE, extensions=["toc", "attr_list", "pymdownx.superfences", "admonition", "tables"]
    )
    assert set(re.findall(r'<h[1-6] id="([^"]+)"', rendered)) == expected


def test_a_missing_page_and_a_missing_heading_are_named_with_file_and_line(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "docs/flows.md": PAGE,
            "docs/contract/events.md": "# Events\n\n## Where events may stand\n",
            "pkg/mod.py": (
                f'"""Routing ({ref("flows.md#kinds")}), see {ref("flows.md")}."""\n'
                f"# Stack rules: {ref('contract/events.md#where-events-may-stand')}.\n"
                f"# Facts ({ref('flows.md#facts')}) and steps ({ref('contract/steps.md')}).\n"
                f"# {ref('flows.md#not-a-heading-either')} and {ref('flows.md#routing-kinds')}\n"
            ),
            "pyproject.toml": f"# ({ref('flows.md#runs-across-machines')})\n",
            "docs/index.md": f"[x]({ref('nowhere.md')}) pages link each other their own way\n",
            "nested/mydocs/page.md": "not a reference: mydocs/flows.md#facts\n",
            "tests/test_pages.py": "read('" + ref("made-up.md") + "', \"" + ref("a.md#b") + '")\n',
        },
    )
    assert broken_references(tmp_path) == [
        f"pkg/mod.py:3: {ref('flows.md#facts')}: no heading of docs/flows.md has the anchor #facts",
        f"pkg/mod.py:3: {ref('contract/steps.md')}: no such page",
        f"pkg/mod.py:4: {ref('flows.md#not-a-heading-either')}: no heading of docs/flows.md has "
        "the anchor #not-a-heading-either",
        f"pkg/mod.py:4: {ref('flows.md#routing-kinds')}: no heading of docs/flows.md has the "
        "anchor #routing-kinds",
    ]


def test_a_mention_of_the_old_contract_is_named_in_docs_too(tmp_path: Path) -> None:
    spec = "SPEC" + " §4.5"
    write(
        tmp_path,
        {
            "docs/flows.md": f"# Flows\n\nAs {spec} says.\n",
            "pkg/mod.py": f"x = 1\n# Navigator ({spec}).\n",
            "scripts/notes.txt": "read " + "SPEC" + ".md first\n",
            "pkg/ok.py": "SPEC = RunSpec()  # a name, not a citation\n",
            ".venv/lib/site.py": f"# {spec}\n",
            "site/flows/index.html": f"<p>{spec}</p>\n",
        },
    )
    assert old_contract_mentions(tmp_path) == [
        f"docs/flows.md:3: As {spec} says.",
        f"pkg/mod.py:2: # Navigator ({spec}).",
        "scripts/notes.txt:1: read " + "SPEC" + ".md first",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_in_a_git_checkout_only_tracked_files_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "docs/flows.md": PAGE,
            "tracked.py": f"# {ref('flows.md#facts')}\n",
            "untracked.py": f"# {ref('flows.md#navigator')}\n",
        },
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "docs", "tracked.py"], cwd=tmp_path, check=True)
    assert broken_references(tmp_path) == [
        f"tracked.py:1: {ref('flows.md#facts')}: no heading of docs/flows.md has the anchor #facts"
    ]
