"""The code blocks of README.md and docs/: read them, and run a page's in a fresh project.

A fence's language is ``text`` (or ``handoff``, ``jsonl``: output and illustrations, never
run) or one of ``RUN_LANGUAGES``; those carry ``id="..."`` and run, in page order, in one
fresh project directory per page:

- ``yaml``/``json``/``toml``/``ini``/``python`` with ``title="path"``: written to that file;
- ``python`` without a title: run as a script, exit 0;
- ``bash``: run by ``bash -eo pipefail``, exit 0 or ``exit="N"``; ``serves="TEXT"`` starts it
  in the background until the page ends, once a line of its output holds TEXT;
  ``network="none"`` runs it with no network at all, where the machine allows;
- ``setup="install"``: the block makes the environment (a fresh virtual environment from a
  checkout); ``scripts/check-install`` runs those, the docs test does not.

Every command runs with the project's ``.venv/bin`` first on ``PATH``. This module is
stdlib only: ``scripts/check-install`` imports it under the system's Python.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

RUN_LANGUAGES = frozenset({"python", "bash", "yaml", "json", "toml", "ini"})
SHOWN_LANGUAGES = frozenset({"text", "handoff", "jsonl"})
FILE_LANGUAGES = RUN_LANGUAGES - {"bash"}
ATTRIBUTES = frozenset({"id", "title", "exit", "serves", "network", "setup"})

_FENCE = re.compile(
    r"^(?P<indent>[ ]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)(?P=ticks)[ ]*$",
    re.M | re.S,
)
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

SERVE_DEADLINE_S = 180.0
"""How long a serving block may take to print its line before the page fails (a hang guard,
not a measure: on a busy machine a start takes a few seconds)."""


class BlockError(AssertionError):
    """A page's block is marked wrongly, or did not do what the page says."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    body: str
    attributes: Mapping[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.attributes.get("id", "")

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} (block {self.id or '<no id>'})"

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES


def read_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of ``text``, its body dedented to its fence."""
    blocks = []
    for match in _FENCE.finditer(text):
        info = match["info"].strip()
        language, _, rest = info.partition(" ")
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(page, line, language, body, dict(_ATTRIBUTE.findall(rest))))
    return blocks


def problems(blocks: list[Block]) -> list[str]:
    """What is wrong with the marking of a page's blocks (empty when nothing is)."""
    found = []
    seen: set[str] = set()
    for block in blocks:
        if block.language not in RUN_LANGUAGES | SHOWN_LANGUAGES:
            allowed = ", ".join(sorted(RUN_LANGUAGES | SHOWN_LANGUAGES))
            found.append(f"{block.where}: language {block.language!r}; allowed: {allowed}")
            continue
        unknown = set(block.attributes) - ATTRIBUTES
        if unknown:
            found.append(f"{block.where}: unknown attribute(s) {sorted(unknown)}")
        if not block.runs:
            if block.attributes:
                found.append(f"{block.where}: a {block.language} block is shown, not run")
            continue
        if not _ID.fullmatch(block.id):
            found.append(f'{block.where}: needs id="lowercase-with-dashes"')
        elif block.id in seen:
            found.append(f"{block.where}: id {block.id!r} is used twice in the page")
        seen.add(block.id)
        title = block.attributes.get("title")
        if block.language in FILE_LANGUAGES - {"python"} and not title:
            found.append(f'{block.where}: a {block.language} block needs title="its path"')
        if title and (block.language == "bash" or not _relative(title)):
            found.append(f"{block.where}: title {title!r} is no file of the project")
        for key in ("exit", "serves", "network"):
            if key in block.attributes and block.language != "bash":
                found.append(f"{block.where}: {key}= is for bash blocks")
        if block.attributes.get("network", "none") != "none":
            found.append(f'{block.where}: network= takes only "none"')
        if not block.attributes.get("exit", "0").isdigit():
            found.append(f"{block.where}: exit= takes an exit code")
        if block.attributes.get("setup", "install") != "install":
            found.append(f'{block.where}: setup= takes only "install"')
    return found


def _relative(title: str) -> bool:
    path = Path(title)
    return bool(title) and not path.is_absolute() and ".." not in path.parts


def page_blocks(path: Path, root: Path) -> list[Block]:
    return read_blocks(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())


def pages(root: Path) -> list[Path]:
    """README.md and every page of docs/ (the changelog holds no code)."""
    found = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [path for path in found if path.name != "changelog.md"]


def block_env(project: Path, servers: Mapping[str, str], base: Mapping[str, str]) -> dict[str, str]:
    """``base`` less our own and the providers' settings, with the project's ``.venv`` first
    on ``PATH`` and the providers pointed at ``servers`` with obviously fake keys."""
    env = {
        k: v
        for k, v in base.items()
        if k == "SWARM_CACHE_DIR"
        or not k.startswith(
            ("SWARM_", "ANTHROPIC_", "OPENAI_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH")
        )
    }
    venv = project / ".venv"
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "100"
    if "anthropic" in servers:
        env["ANTHROPIC_BASE_URL"] = servers["anthropic"]
        env["ANTHROPIC_API_KEY"] = FAKE_KEYS["anthropic"]
    if "openai" in servers:
        env["OPENAI_BASE_URL"] = servers["openai"]
        env["OPENAI_API_KEY"] = FAKE_KEYS["openai"]
    return env


FAKE_KEYS = {"anthropic": "sk-ant-docs-fake-key-000000", "openai": "sk-docs-fake-key-000000"}


def no_network() -> list[str]:
    """The prefix that runs a command with no network at all, where the machine allows."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
        except OSError:
            return []
        if probe.returncode == 0:
            return prefix
    return []


@dataclass
class PageRun:
    """One page's blocks, run in order in ``project``."""

    project: Path
    env: dict[str, str]
    setup: bool = False
    """Run ``setup="install"`` blocks too (the fresh-environment check)."""
    replace: Mapping[str, str] = field(default_factory=dict)
    """Text replaced in a setup block before it runs (a placeholder path)."""
    log: list[str] = field(default_factory=list)
    _serving: list[tuple[subprocess.Popen[str], threading.Thread]] = field(default_factory=list)

    def run(self, blocks: list[Block]) -> None:
        try:
            for block in blocks:
                self.one(block)
        finally:
            self.stop()

    def one(self, block: Block) -> None:
        if not block.runs:
            return
        if "setup" in block.attributes and not self.setup:
            return
        title = block.attributes.get("title")
        if title:
            target = self.project / title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
            return
        if block.language == "python":
            self._command(block, ["python", "-"], block.body)
            return
        body = block.body
        if "setup" in block.attributes:
            for old, new in self.replace.items():
                body = body.replace(old, new)
        if "serves" in block.attributes:
            self._serve(block, body)
            return
        prefix = no_network() if block.attributes.get("network") == "none" else []
        self._command(block, [*prefix, "bash", "-eo", "pipefail", "-c", body], None)

    def _command(self, block: Block, argv: list[str], stdin: str | None) -> None:
        self.log.append(f"$ {block.where}")
        done = subprocess.run(
            argv,
            cwd=self.project,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        wanted = int(block.attributes.get("exit", "0"))
        self.log.append(done.stdout + done.stderr)
        if done.returncode != wanted:
            raise BlockError(
                f"{block.where} exited {done.returncode}, the page expects {wanted}:\n"
                f"{block.body}\n--- output ---\n{_tail(done.stdout)}\n--- stderr ---\n"
                f"{_tail(done.stderr)}"
            )

    def _serve(self, block: Block, body: str) -> None:
        self.log.append(f"$ {block.where} (serving)")
        process = subprocess.Popen(
            ["bash", "-eo", "pipefail", "-c", f"exec {body.strip()}"],
            cwd=self.project,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wanted = block.attributes["serves"]
        seen: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                seen.append(line)
                if wanted in line:
                    ready.set()
            ready.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        self._serving.append((process, reader))
        ready.wait(SERVE_DEADLINE_S)
        if not any(wanted in line for line in seen):
            raise BlockError(
                f"{block.where} never printed {wanted!r} (exit {process.poll()}):\n"
                f"{_tail(''.join(seen))}"
            )

    def stop(self) -> None:
        for process, reader in reversed(self._serving):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            reader.join()
            if process.stdout is not None:
                process.stdout.close()
        self._serving.clear()


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def linked_venv(project: Path) -> None:
    """``project/.venv``: this interpreter's environment, as a user's own would be."""
    (project / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)


def iter_pages(root: Path) -> Iterator[tuple[str, list[Block]]]:
    for path in pages(root):
        yield path.relative_to(root).as_posix(), page_blocks(path, root)
