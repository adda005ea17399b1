"""The built-in handlers that read the repository: ``RepoScan`` and ``ContextSelect``.

Paths in payloads are relative to the repository root the runtime was given (absolute
ones are taken as they are for ``repoPath``); a context source must stay inside the
root. Symlinks are not followed, and files are read within bounds, so a plan cannot make
the runtime read a device, a FIFO or a file outside the tree it names.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from swarm_runtime.digest import sha256
from swarm_runtime.plan.handlers import HandlerError, StepCall
from swarm_runtime.plan.memory_store import search_terms
from swarm_runtime.plan.refs import payload_fields

MAX_SOURCE_FILES = 500
"""Files a ContextSelect reads at most, over all its sources."""
MAX_FILE_BYTES = 256 * 1024
"""A file larger than this is skipped as context."""
MAX_SELECTED = 8
EXCERPT_CHARS = 400


def repo_scan(call: StepCall) -> dict[str, Any]:
    """``{repoPath}`` → ``{versionId, fileCount}``: git HEAD, else a hash of the contents."""
    payload = payload_fields(call, {"repoPath": str})
    path = Path(payload["repoPath"])
    if not path.is_absolute():
        path = call.repo_root / path
    if not path.is_dir():
        raise HandlerError(f"payload.repoPath {payload['repoPath']!r}: {path} is not a directory")
    head = _git(path, "rev-parse", "--verify", "HEAD")
    if head is not None:
        listed = _git(path, "ls-files", "-z") or ""
        return {"versionId": f"git:{head.strip()}", "fileCount": listed.count("\0")}
    digest, count = _content_hash(path, call)
    return {"versionId": f"sha256:{digest}", "fileCount": count}


def _git(path: Path, *args: str) -> str | None:
    """The output of git in ``path``, or None when git is missing or this is no work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _files(root: Path) -> list[str]:
    """Every regular file under ``root`` (relative, sorted), ``.git`` and symlinks left out."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in files:
            full = os.path.join(directory, name)
            if os.path.isfile(full) and not os.path.islink(full):
                found.append(os.path.relpath(full, root))
    return sorted(found)


def _content_hash(root: Path, call: StepCall) -> tuple[str, int]:
    hasher = sha256()
    files = _files(root)
    for name in files:
        if call.cancelled.is_set():
            raise HandlerError("given up: the scan ran out of time")
        hasher.update(name.encode("utf-8", "surrogateescape") + b"\0")
        file_hash = sha256()
        try:
            with open(root / name, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    file_hash.update(chunk)
        except OSError as exc:
            raise HandlerError(f"cannot read {root / name}: {exc.strerror or exc}") from None
        hasher.update(file_hash.digest())
    return str(hasher.hexdigest()), len(files)


def context_select(call: StepCall) -> dict[str, Any]:
    """``{input, sources[]}`` → the files of the sources that share words with the input.

    Best first (most shared words), at most 8, each ``{source, score, excerpt}``.
    """
    payload = payload_fields(call, {"input": str, "sources": list})
    root = call.repo_root.resolve()
    terms = search_terms(payload["input"])
    candidates: list[str] = []
    for number, source in enumerate(payload["sources"]):
        if not isinstance(source, str) or not source:
            raise HandlerError(f"payload.sources[{number}] must be a path, got {source!r:.80}")
        candidates.extend(_source_files(root, source, number))
    selected: list[dict[str, Any]] = []
    for name in dict.fromkeys(candidates[:MAX_SOURCE_FILES]):
        if call.cancelled.is_set():
            raise HandlerError("given up: the selection ran out of time")
        text = _read(root / name)
        if text is None:
            continue
        lowered = text.lower()
        hits = [term for term in terms if term in lowered]
        if hits:
            selected.append({"source": name, "score": len(hits), "excerpt": _excerpt(text, hits)})
    selected.sort(key=lambda item: (-item["score"], item["source"]))
    return {"selectedContext": selected[:MAX_SELECTED]}


def _source_files(root: Path, source: str, number: int) -> list[str]:
    target = Path(os.path.normpath(root / source))
    if target != root and root not in target.parents:
        raise HandlerError(f"payload.sources[{number}] {source!r} leaves the repository {root}")
    if os.path.islink(target):
        raise HandlerError(f"payload.sources[{number}] {source!r} is a symlink; name its target")
    if target.is_dir():
        return [os.path.relpath(target / name, root) for name in _files(target)]
    if target.is_file():
        return [os.path.relpath(target, root)]
    raise HandlerError(f"payload.sources[{number}] {source!r}: no such file or directory in {root}")


def _read(path: Path) -> str | None:
    """A text file's content; None for one too big, unreadable or not UTF-8."""
    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.limits import InputRefused

    try:
        return read_text_limited(path, MAX_FILE_BYTES, nofollow=True)
    except (OSError, InputRefused, UnicodeDecodeError):
        return None


def _excerpt(text: str, hits: list[str]) -> str:
    at = text.lower().find(hits[0])
    start = max(0, at - EXCERPT_CHARS // 4)
    return " ".join(text[start : start + EXCERPT_CHARS].split())
