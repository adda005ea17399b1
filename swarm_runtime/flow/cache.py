"""A cache of validated flows, so that a run whose flows have not changed reads no YAML.

Parsing and validating the flow files (and importing the YAML library to do it) is most of
what ``swarm run`` does besides its steps. A flow file that loaded without an error is
kept as JSON in the user's cache dir (``$SWARM_CACHE_DIR``, else
``$XDG_CACHE_HOME/swarm-stepwise``, else ``~/.cache/swarm-stepwise``), never beside the
flows. An entry is found by the file's path as given, a SHA-256 of its bytes, and a stamp
of the code that loads flows (the package version and the size and mtime of the loader's
modules), so an edited flow or an upgraded loader is never served from the cache. Only
valid flows are cached: a file with an error is read again each time, and its errors are
reported from the YAML with their lines. ``flows.yaml``'s order is cached the same way,
keyed also by the flow files present. The dir holds at most about ``MAX_ENTRIES`` entries.

The cache is an optimisation only. ``SWARM_NO_CACHE=1`` turns it off; an entry that
cannot be read or decoded is a miss (and is written again), and a cache dir that cannot be
written is ignored: a run never fails because of it. Entries are plain JSON that ``msgspec``
decodes into the flow records by their declared types, never pickles.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import msgspec
import msgspec.json

from swarm_runtime.digest import sha256
from swarm_runtime.flow.spec import FlowSpec
from swarm_runtime.versions import PACKAGE_VERSION

FORMAT = 3
"""Bumped whenever the encoding below changes."""

MAX_ENTRY_BYTES = 8 * 1024 * 1024
MAX_ENTRIES = 1000
"""When a new entry makes more than this, the older half is removed (flows in temporary
dirs, a test suite's say, would otherwise pile up)."""

_LOADER_MODULES = (
    "budget_input.py",
    "cache.py",
    "cel.py",
    "conditions.py",
    "detour_reader.py",
    "judge_reader.py",
    "kinds.py",
    "loader.py",
    "references.py",
    "registry.py",
    "spec.py",
    "step_reader.py",
    "validate.py",
    "yaml_reader.py",
    "../inputs/__init__.py",
    "../inputs/files.py",
    "../inputs/json_input.py",
    "../inputs/limits.py",
    "../inputs/yaml_input.py",
    "../record.py",
)


class Uncacheable(Exception):
    """A value the JSON encoding cannot give back exactly."""


def cache_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path | None:
    """The cache dir, or None when caching is off (``SWARM_NO_CACHE=1``)."""
    env = os.environ if environ is None else environ
    if env.get("SWARM_NO_CACHE", "") not in ("", "0"):
        return None
    explicit = env.get("SWARM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = env.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "swarm-stepwise"
    home = env.get("HOME") or os.path.expanduser("~")
    if not home or home == "~":
        return None
    return Path(home) / ".cache" / "swarm-stepwise"


def _enc_hook(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise Uncacheable(type(value).__name__)


def _dec_hook(kind: type, value: Any) -> Any:
    if kind is Path and isinstance(value, str):
        return Path(value)
    raise TypeError(f"cannot decode {type(value).__name__} as {kind.__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)
_DECODER: msgspec.json.Decoder[FlowSpec] | None = None


def encode_flow(flow: FlowSpec) -> bytes:
    """``flow`` as JSON that :func:`decode_flow` turns back into the same records.

    ``msgspec`` writes each record as an object of its fields, and reads it back by the
    types its class declares (a tuple as a tuple, a path as a path), building each record
    as it parses: a big flow never lives in memory twice. Raises :class:`Uncacheable` for
    a value JSON cannot give back exactly (a type it has no form for; ``msgspec`` would
    write a NaN as null, so the entry is decoded and compared before it is kept).
    """
    data = _ENCODER.encode(flow)
    try:
        same = decode_flow(data) == flow
    except ValueError:
        same = False
    if not same:
        raise Uncacheable("a value that does not come back the same from JSON")
    return data


def decode_flow(text: str | bytes) -> FlowSpec:
    """The flow :func:`encode_flow` encoded, from its JSON text.

    ValueError when malformed.
    """
    global _DECODER
    if _DECODER is None:  # built on first use: it resolves the records' field types
        _DECODER = msgspec.json.Decoder(FlowSpec, dec_hook=_dec_hook)
    try:
        return _DECODER.decode(text)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


class FlowCache:
    """Validated flows and order lists kept across runs (see the module docstring)."""

    def __init__(self, root: Path | None) -> None:
        self.directory = root / "flows" if root is not None else None
        self._stamp: str | None = None

    @classmethod
    def default(cls) -> FlowCache:
        """The cache in the user's cache dir (off with ``SWARM_NO_CACHE=1``)."""
        return cls(cache_root())

    def stamp(self) -> str:
        """The version and the loader modules' sizes and mtimes: what the entries depend on."""
        if self._stamp is None:
            here = Path(__file__).resolve().parent
            parts = [f"{PACKAGE_VERSION}/{FORMAT}"]
            for name in _LOADER_MODULES:
                try:
                    info = os.stat(here / name)
                except OSError:
                    parts.append(f"{name}:-")
                    continue
                parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
            self._stamp = "|".join(parts)
        return self._stamp

    def _entry(self, kind: str, *parts: str | bytes) -> Path | None:
        if self.directory is None:
            return None
        digest = sha256()
        for part in (kind, self.stamp(), *parts):
            data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
        return self.directory / f"{kind}-{digest.hexdigest()[:40]}.json"

    def _read(self, entry: Path | None) -> bytes | None:
        if entry is None:
            return None
        try:
            fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:  # no bigger buffer than the entry: reading is what a big flow's peak is made of
            size = min(os.fstat(fd).st_size, MAX_ENTRY_BYTES) + 1
            data = os.read(fd, size)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) > MAX_ENTRY_BYTES:
            return None
        return data

    def _write(self, entry: Path | None, data: bytes) -> None:
        if entry is None:
            return
        temp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
        try:
            entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temp.write_bytes(data)
            os.replace(temp, entry)  # readers see a whole entry or none
            self._prune(entry.parent)
        except Exception:  # a cache that cannot be written is no cache
            with contextlib.suppress(OSError):
                temp.unlink()

    @staticmethod
    def _prune(directory: Path) -> None:
        with os.scandir(directory) as found:
            entries = [item for item in found if item.name.endswith(".json")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda item: item.stat().st_mtime_ns)
        for item in entries[: len(entries) // 2]:
            os.unlink(item.path)

    def flow(self, path: Path, raw: bytes) -> FlowSpec | None:
        """The cached flow for ``path`` whose bytes are ``raw``, or None."""
        entry = self._entry("flow", str(path), raw)
        data = self._read(entry)
        if data is None:
            return None
        try:
            return decode_flow(data)
        except (ValueError, TypeError, RecursionError):  # __post_init__ may refuse too
            return None

    def keep_flow(self, path: Path, raw: bytes, flow: FlowSpec) -> None:
        """Cache ``flow``, loaded without errors from ``path`` whose bytes are ``raw``."""
        try:
            data = encode_flow(flow)
        except Uncacheable:
            return
        self._write(self._entry("flow", str(path), raw), data)

    def order(self, path: Path, raw: bytes, keys: list[str]) -> list[str] | None:
        """The cached order of ``flows.yaml`` at ``path`` with bytes ``raw``, or None."""
        data = self._read(self._entry("order", str(path), raw, "\0".join(keys)))
        if data is None:
            return None
        try:
            return msgspec.json.decode(data, type=list[str])
        except msgspec.DecodeError:
            return None

    def keep_order(self, path: Path, raw: bytes, keys: list[str], order: list[str]) -> None:
        """Cache a valid order read from ``path`` (``keys``: the flow files present)."""
        self._write(self._entry("order", str(path), raw, "\0".join(keys)), _ENCODER.encode(order))
