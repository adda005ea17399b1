"""YAML composed within limits: no recursion, bounded nesting and alias expansion."""

from __future__ import annotations

from typing import Any

from swarm_runtime.inputs.limits import MAX_DEPTH, MAX_NODES, too_deep


def compose_yaml(
    text: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    unique_keys: bool = False,
) -> Any:
    """Compose one YAML document into nodes, as ``yaml.compose`` does, within the limits.

    Returns the root ``yaml.Node``, or None for an empty document. The C parser yields
    events; nodes are built here from a stack, so no nesting reaches a recursive composer.
    Aliases share their anchor's node (as PyYAML does) and count its expanded size against
    ``max_nodes``; an alias to a node still being composed (a recursive document) is
    refused. With ``unique_keys``, a key twice in one mapping is refused too (PyYAML
    would keep the last one silently).

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
        return _compose(text, loader, max_depth, max_nodes, unique_keys=unique_keys)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if loader is yaml.SafeLoader or is_limit_refusal(exc) or mark is None:
            raise
        if text.count("[", 0, mark.index) + text.count("{", 0, mark.index) <= max_depth and (
            mark.column <= max_depth
        ):
            raise  # neither enough brackets nor enough indentation to be nested too deep
        try:
            _compose(
                text,
                yaml.SafeLoader,
                max_depth,
                max_nodes,
                unique_keys=unique_keys,
                stop_at=mark.index,
            )
        except yaml.YAMLError as ours:
            if is_limit_refusal(ours):
                raise ours from None
        raise


def _compose(
    text: str,
    loader: Any,
    max_depth: int,
    max_nodes: int,
    *,
    unique_keys: bool,
    stop_at: int | None = None,
) -> Any:
    """Feed the events of ``loader``'s parser to a composer; stop at ``stop_at`` if given."""
    import yaml

    composer = _Composer(max_depth, max_nodes, unique_keys=unique_keys)
    for event in yaml.parse(text, Loader=loader):
        if stop_at is not None and event.start_mark and event.start_mark.index >= stop_at:
            break
        composer.feed(event)
    return composer.root


class _Composer:
    """Builds nodes from parser events with an explicit stack (see compose_yaml)."""

    def __init__(self, max_depth: int, max_nodes: int, *, unique_keys: bool = False) -> None:
        import yaml
        from yaml import events, nodes

        self.unique_keys = unique_keys
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.root: Any = None
        self.documents = 0
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.aliased = False
        """Whether an alias was met: then a document too big is one its aliases blew up."""
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
            if self.unique_keys:
                self.refuse_repeated(children[::2])
            node.value = list(zip(children[::2], children[1::2], strict=True))
        else:
            node.value = children
        self.add(node, total[0], anchor, event.start_mark)

    def refuse_repeated(self, keys: list[Any]) -> None:
        seen: set[str] = set()
        for key in keys:
            if isinstance(key, self.scalar_node):
                if key.value in seen:
                    raise self.refuse(
                        f"the key {key.value!r} appears twice in one mapping; refusing a "
                        "document that means two things (keep one)",
                        key.start_mark,
                    )
                seen.add(key.value)

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
        self.aliased = True
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
            if self.aliased:
                problem = (
                    f"the document expands to more than {self.max_nodes} nodes through its "
                    "aliases; refusing to read it (an alias repeats what it names)"
                )
            else:
                problem = (
                    f"the document holds more than {self.max_nodes} nodes (values, lists and "
                    "mappings), the most read from one file; split it into smaller files"
                )
            raise self.refuse(problem, mark)


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
    """The Python value of one YAML document (safe tags only), within the limits.

    A key twice in one mapping is refused (see :func:`compose_yaml`).
    """
    import yaml

    node = compose_yaml(text, max_depth=max_depth, max_nodes=max_nodes, unique_keys=True)
    if node is None:
        return None
    constructor = yaml.SafeLoader("")
    return constructor.construct_document(node)
