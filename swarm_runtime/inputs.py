"""Reading what a user or a run dir hands us, within limits: size, file type, nesting, aliases.

Every YAML and JSON input (flows, ``flows.yaml``, scenarios, ``runtime.yaml``, handoff
blocks, run files) is read through here, so a hostile file is refused with a message
instead of crashing the process:

* a file is read only when it is a regular file (never a FIFO or a device, which could
  block or never end) and at most ``limit`` bytes are read;
* YAML is composed from the C parser's events without recursion, refusing nesting deeper
  than :data:`MAX_DEPTH` before anything recurses (libyaml's own composer overflows the C
  stack on a 25 000-level file), and refusing a document whose aliases would expand to
  more than :data:`MAX_NODES` nodes (a "billion laughs" is a few hundred bytes);
* JSON nested past Python's recursion limit is refused rather than raising
  ``RecursionError``.

Errors are ``ValueError``s (``UnicodeDecodeError`` is one too) or ``yaml.YAMLError``s
whose message says what was refused; callers add the file name and their own error type.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_NODES",
    "MAX_RUN_FILE_BYTES",
    "InputRefused",
    "check_json_depth",
    "compose_yaml",
    "decode_utf8",
    "describe_yaml_error",
    "is_limit_refusal",
    "load_json",
    "load_yaml",
    "read_bytes_limited",
    "read_prefix",
    "read_run_text",
    "read_text_limited",
    "too_deep",
]

MAX_INPUT_BYTES = 8 << 20
"""The largest YAML input read (flows, scenarios, runtime.yaml): 8 MiB."""

MAX_RUN_FILE_BYTES = 256 << 20
"""The largest run file read back (an event log, a transcript, a document): 256 MiB."""

MAX_DEPTH = 100
"""The deepest nesting of mappings and sequences accepted in a YAML or JSON input."""

MAX_NODES = 200_000
"""The most nodes a YAML document may hold once its aliases are expanded."""


class InputRefused(ValueError):
    """An input is too big, too deep, or not a regular file; the message says which.

    ``line`` is the 1-based line the refusal is about, when there is one.
    """

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def located(self, source: object) -> str:
        """``source:line: message`` (or ``source: message`` with no line), for an error."""
        where = f"{source}:{self.line}" if self.line is not None else str(source)
        return f"{where}: {self}"


def read_bytes_limited(
    path: str | os.PathLike[str], limit: int, *, nofollow: bool = False
) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    ``nofollow`` refuses a symlink (for files inside a run dir). Raises ``OSError`` when
    the file cannot be opened and :class:`InputRefused` when it is not a regular file or is
    bigger than ``limit``.
    """
    fd = _open_regular(path, nofollow=nofollow)
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise InputRefused(f"is {info.st_size} bytes; at most {limit} are read")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise InputRefused(f"is more than {limit} bytes; at most {limit} are read")
        return data
    finally:
        os.close(fd)


def _open_regular(path: str | os.PathLike[str], *, nofollow: bool) -> int:
    """A read descriptor of a regular file; InputRefused for anything else.

    A FIFO would block the reader and a device might never end; with ``nofollow`` a
    symlink is refused too.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if nofollow and os.path.islink(path):
            raise InputRefused("is a symlink; files inside a run dir are never followed") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputRefused("is not a regular file")
    return fd


def read_prefix(path: str | os.PathLike[str], size: int) -> bytes:
    """Up to the first ``size`` bytes of a regular file (see :func:`read_bytes_limited`)."""
    fd = _open_regular(path, nofollow=False)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_text_limited(
    path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, nofollow: bool = False
) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (see read_bytes_limited).

    Bytes that are not UTF-8 are an :class:`InputRefused` naming the byte, offset and line.
    """
    return decode_utf8(read_bytes_limited(path, limit, nofollow=nofollow))


def read_run_text(path: str | os.PathLike[str], limit: int = MAX_RUN_FILE_BYTES) -> str:
    """The text of a file inside a run dir: never through a symlink, never unbounded."""
    return decode_utf8(read_bytes_limited(path, limit, nofollow=True))


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text; an :class:`InputRefused` naming the first bad byte if not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputRefused(
            f"is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8",
            line=line,
        ) from None


def load_json(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` within the nesting limit: deeper input is refused before decoding.

    Raises :class:`InputRefused` (with the line of the first level too deep) for nesting
    deeper than ``max_depth``, ``json.JSONDecodeError`` for text that is not JSON.
    """
    check_json_depth(text, max_depth)
    try:
        return json.loads(text)
    except RecursionError:  # only reachable with a max_depth above the recursion limit
        raise InputRefused(too_deep(max_depth)) from None


def too_deep(max_depth: int = MAX_DEPTH) -> str:
    """The one wording of a nesting refusal, for YAML and JSON alike."""
    return (
        f"nesting deeper than {max_depth} levels; refusing to read further "
        f"(keep mappings and lists at most {max_depth} deep)"
    )


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""A JSON string (skipped whole, brackets and all) or one bracket."""


def check_json_depth(text: str | bytes, max_depth: int) -> None:
    """Refuse JSON nested deeper than ``max_depth``, naming the line of the first level too deep."""
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= max_depth:
            return
        text = text.decode("utf-8", "replace")
    elif text.count("[") + text.count("{") <= max_depth:
        return  # too few brackets to nest too deep: the common case costs two counts
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > max_depth:
                line = text.count("\n", 0, match.start()) + 1
                raise InputRefused(too_deep(max_depth), line=line)
        elif char != '"':
            depth -= 1


def compose_yaml(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """Compose one YAML document into nodes, as ``yaml.compose`` does, within the limits.

    Returns the root ``yaml.Node``, or None for an empty document. The C parser yields
    events; nodes are built here from a stack, so no nesting reaches a recursive composer.
    Aliases share their anchor's node (as PyYAML does) and count its expanded size against
    ``max_nodes``; an alias to a node still being composed (a recursive document) is
    refused.

    The refusal of deep nesting is ours whatever PyYAML is installed. From 6.0.4, libyaml's
    scanner has a nesting limit of its own (1000 levels) and reads up to a line ahead of
    the events, so ``[[[[…`` on one line can reach its limit before our composer sees
    level 101. When the C parser fails where that could be the cause, the text is composed
    again, up to the place it failed, with PyYAML's pure-Python parser (no limit of its
    own): if our limit is met first, ours is the error; otherwise the C parser's stands.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _compose(text, loader, max_depth, max_nodes)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if loader is yaml.SafeLoader or is_limit_refusal(exc) or mark is None:
            raise
        if text.count("[", 0, mark.index) + text.count("{", 0, mark.index) <= max_depth and (
            mark.column <= max_depth
        ):
            raise  # neither enough brackets nor enough indentation to be nested too deep
        try:
            _compose(text, yaml.SafeLoader, max_depth, max_nodes, stop_at=mark.index)
        except yaml.YAMLError as ours:
            if is_limit_refusal(ours):
                raise ours from None
        raise


def _compose(
    text: str, loader: Any, max_depth: int, max_nodes: int, *, stop_at: int | None = None
) -> Any:
    """Feed the events of ``loader``'s parser to a composer; stop at ``stop_at`` if given."""
    import yaml

    composer = _Composer(max_depth, max_nodes)
    for event in yaml.parse(text, Loader=loader):
        if stop_at is not None and event.start_mark and event.start_mark.index >= stop_at:
            break
        composer.feed(event)
    return composer.root


class _Composer:
    """Builds nodes from parser events with an explicit stack (see compose_yaml)."""

    def __init__(self, max_depth: int, max_nodes: int) -> None:
        import yaml
        from yaml import events, nodes

        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.root: Any = None
        self.documents = 0
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        # A frame: the collection node, its children, its expanded size, its anchor.
        self.stack: list[tuple[Any, list[Any], list[int], str | None]] = []
        resolver = yaml.resolver.Resolver
        self.implicit = resolver.yaml_implicit_resolvers
        self.wildcard = self.implicit.get(None, [])
        self.str_tag = resolver.DEFAULT_SCALAR_TAG
        self.collections: dict[type, tuple[Any, str]] = {
            events.MappingStartEvent: (nodes.MappingNode, resolver.DEFAULT_MAPPING_TAG),
            events.SequenceStartEvent: (nodes.SequenceNode, resolver.DEFAULT_SEQUENCE_TAG),
        }
        self.handlers: dict[type, Any] = {
            events.ScalarEvent: self.scalar,
            events.MappingStartEvent: self.start,
            events.SequenceStartEvent: self.start,
            events.MappingEndEvent: self.end,
            events.SequenceEndEvent: self.end,
            events.AliasEvent: self.alias,
            events.DocumentStartEvent: self.document,
        }
        self.scalar_node = nodes.ScalarNode
        self.mapping_node = nodes.MappingNode

    def feed(self, event: Any) -> None:
        """Take the next event (stream and document ends need nothing)."""
        handler = self.handlers.get(event.__class__)
        if handler is not None:
            handler(event)

    @staticmethod
    def refuse(problem: str, mark: Any) -> Exception:
        import yaml

        refusal = yaml.MarkedYAMLError(problem=problem, problem_mark=mark)
        refusal.refused_by_us = True  # type: ignore[attr-defined]  # a limit, not a syntax error
        return refusal

    def scalar(self, event: Any) -> None:
        tag = event.tag
        if tag is None or tag == "!":
            # What Resolver.resolve does, inlined: only a plain scalar can be other than a
            # string, and only when its first character starts one of the patterns.
            tag = self.str_tag
            value = event.value
            if event.implicit[0]:
                for candidate, pattern in self.implicit.get(value[:1], []) + self.wildcard:
                    if pattern.match(value):
                        tag = candidate
                        break
        node = self.scalar_node(tag, event.value, event.start_mark, event.end_mark, event.style)
        self.add(node, 1, event.anchor, event.start_mark)

    def start(self, event: Any) -> None:
        if len(self.stack) >= self.max_depth:
            raise self.refuse(too_deep(self.max_depth), event.start_mark)
        node_class, default_tag = self.collections[event.__class__]
        tag = event.tag if event.tag not in (None, "!") else default_tag
        node = node_class(tag, [], event.start_mark, None, flow_style=event.flow_style)
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        self.stack.append((node, [], [1], event.anchor))

    def end(self, event: Any) -> None:
        node, children, total, anchor = self.stack.pop()
        node.end_mark = event.end_mark
        if isinstance(node, self.mapping_node):
            node.value = list(zip(children[::2], children[1::2], strict=True))
        else:
            node.value = children
        self.add(node, total[0], anchor, event.start_mark)

    def alias(self, event: Any) -> None:
        if event.anchor in self.open_anchors:
            raise self.refuse(
                f"alias *{event.anchor} refers to a node that contains it; recursive "
                "documents are not read",
                event.start_mark,
            )
        found = self.anchors.get(event.anchor)
        if found is None:
            raise self.refuse(f"found undefined alias *{event.anchor}", event.start_mark)
        self.add(found[0], found[1], None, event.start_mark)

    def document(self, event: Any) -> None:
        self.documents += 1
        if self.documents > 1:
            raise self.refuse(
                "expected a single document in the stream, but found another document",
                event.start_mark,
            )

    def add(self, node: Any, size: int, anchor: str | None, mark: Any) -> None:
        """Attach a finished node to its parent (or make it the root)."""
        if anchor is not None:
            self.anchors[anchor] = (node, size)
            self.open_anchors.discard(anchor)
        if not self.stack:
            self.root = node
            return
        _, children, total, _ = self.stack[-1]
        children.append(node)
        total[0] += size
        if total[0] > self.max_nodes:
            raise self.refuse(
                f"the document expands to more than {self.max_nodes} nodes (through its "
                "aliases); refusing to read it",
                mark,
            )


def is_limit_refusal(exc: BaseException) -> bool:
    """Whether a YAML error is one of our limits (nesting, expansion), not a syntax error."""
    return bool(getattr(exc, "refused_by_us", False))


def describe_yaml_error(exc: Exception) -> tuple[str, int | None]:
    """One line for a YAML error, and the 1-based line it is about (if known).

    An unclosed bracket or quote is best found where it was opened (the context); the
    problem mark is where the parser gave up, said in the message too.
    """
    import yaml

    if not isinstance(exc, yaml.MarkedYAMLError):
        return " ".join(str(exc).split()), None
    mark = exc.context_mark or exc.problem_mark
    line = int(mark.line) + 1 if mark is not None else None
    message = str(exc.problem or exc.context or "invalid YAML")
    if exc.context and exc.problem_mark is not None:
        message = f"{message} ({exc.context} at line {line}; noticed at line "
        message += f"{exc.problem_mark.line + 1})"
    return " ".join(message.split()), line


def load_yaml(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """The Python value of one YAML document (safe tags only), within the limits."""
    import yaml

    node = compose_yaml(text, max_depth=max_depth, max_nodes=max_nodes)
    if node is None:
        return None
    constructor = yaml.SafeLoader("")
    return constructor.construct_document(node)
