"""Checking a run's artifacts: re-hash every local pointer a receipt lists.

A local pointer's ``uri`` is a path relative to the run directory, so a run dir that was
moved, copied or archived verifies where it is now. An older run's absolute ``file://``
URI is read as the part of its path below the run's id, looked up in the run dir as it is
now (never the original place, which a copy must not lean on).

See docs/contract/steps.md#artifacts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import unquote, urlparse

from swarm_runtime.inputs.files import read_bytes_limited, read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import MAX_RUN_FILE_BYTES
from swarm_runtime.record import Record


class ArtifactCheck(Record):
    """How one artifact pointer compares with the file it names."""

    receipt: str
    """The receipt listing it, relative to the run."""
    name: str
    state: str
    """ok | changed | missing | outside | not local."""
    detail: str = ""

    @property
    def ok(self) -> bool:
        """The file is there and matches (or it is not a file this can check)."""
        return self.state in ("ok", "not local")

    def __str__(self) -> str:
        extra = f": {self.detail}" if self.detail else ""
        return f"{self.receipt}: {self.name}: {self.state}{extra}"


def _local_path(uri: str, root: Path) -> Path | None:
    if "://" not in uri:
        return root / uri  # relative to the run dir (checked to stay inside it below)
    path = Path(unquote(urlparse(uri).path))
    parts = path.parts
    if root.name in parts:  # below the run's id, wherever the run dir is now
        return root.joinpath(*parts[parts.index(root.name) + 1 :])
    return path


def verify_run_artifacts(root: Path) -> list[ArtifactCheck]:
    """Check every artifact pointer of every receipt of the run at ``root``."""
    root = root.resolve()
    checks: list[ArtifactCheck] = []
    for receipt_path in sorted(root.glob("*/receipts/*.json")):
        rel = str(receipt_path.relative_to(root))
        try:
            receipt = load_json(read_run_text(receipt_path))
        except (OSError, ValueError) as exc:
            checks.append(ArtifactCheck(rel, "-", "missing", f"unreadable receipt: {exc}"))
            continue
        for ref in receipt.get("artifacts") or [] if isinstance(receipt, dict) else []:
            checks.append(_check(rel, ref, root))
    return checks


def _check(rel: str, ref: object, root: Path) -> ArtifactCheck:
    if not isinstance(ref, dict):
        return ArtifactCheck(rel, "?", "missing", "not an artifact reference")
    name = str(ref.get("name", "?"))
    uri = ref.get("uri")
    if ref.get("kind") != "pointer" or not isinstance(uri, str):
        return ArtifactCheck(rel, name, "ok", "inline")
    if "://" in uri and not uri.startswith("file://"):
        return ArtifactCheck(rel, name, "not local", uri.split("/", 3)[2])
    path = _local_path(uri, root)
    if path is None or not path.resolve().is_relative_to(root):
        return ArtifactCheck(rel, name, "outside", f"{uri} is not inside the run dir")
    try:
        data = read_bytes_limited(path, MAX_RUN_FILE_BYTES, nofollow=True)
    except (OSError, ValueError):
        return ArtifactCheck(rel, name, "missing", str(path.relative_to(root)))
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.get("sha256") or len(data) != ref.get("sizeBytes"):
        return ArtifactCheck(
            rel,
            name,
            "changed",
            f"sha256 {digest[:12]}… ({len(data)} bytes), the receipt says "
            f"{str(ref.get('sha256'))[:12]}… ({ref.get('sizeBytes')} bytes)",
        )
    return ArtifactCheck(rel, name, "ok")
