"""Parsing the handoff block an agent ends its reply with.

See docs/flows.md#where-routing-values-come-from.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from swarm_runtime.errors import HandoffError

_OPEN = re.compile(r"```handoff[ \t]*\n")
_CLOSE = re.compile(r"\n[ \t]*```")


def handoff_blocks(text: str) -> list[str]:
    """The bodies of the fenced ```handoff blocks of ``text``, in order, in linear time.

    A block runs from its opening fence to the first closing fence after it. When an
    opening fence has no closing fence after it, no later one can have one either: the
    search stops there, so a reply of many unclosed fences costs one pass, not one per
    fence (a lazy ``.*?`` over the rest of the text for each is quadratic).
    """
    blocks: list[str] = []
    at = 0
    while (start := text.find("```handoff", at)) >= 0:
        opening = _OPEN.match(text, start)
        if opening is None:
            at = start + 3
            continue
        closing = _CLOSE.search(text, opening.end())
        if closing is None:
            break
        blocks.append(text[opening.end() : closing.start()])
        at = closing.end()
    return blocks


def parse_handoff(text: str) -> dict[str, Any] | None:
    """The mapping in the last ```handoff fenced block of ``text``; None if there is none."""
    blocks = handoff_blocks(text)
    if not blocks:
        return None
    body = blocks[-1].strip()
    if not body:
        return {}
    value = _parse_body(body)
    if not isinstance(value, dict):
        raise HandoffError(f"handoff block must be a mapping, got {type(value).__name__}")
    return {str(key): _plain(item) for key, item in value.items()}


def _parse_body(body: str) -> Any:
    """The value of a block's body: JSON when it reads as JSON, else YAML.

    A reply is untrusted: nesting and aliases are bounded either way.
    """
    from swarm_runtime.inputs.json_input import load_json
    from swarm_runtime.inputs.limits import InputRefused

    if body.startswith("{"):
        try:
            return load_json(body)
        except InputRefused as exc:
            raise HandoffError(f"handoff block: {exc}") from None
        except json.JSONDecodeError:
            pass  # YAML's flow mappings look like JSON and are read as YAML below
    return _parse_yaml_body(body)


def _parse_yaml_body(body: str) -> Any:
    import yaml  # only here: the stub's JSON blocks never need it

    from swarm_runtime.inputs.yaml_input import describe_yaml_error, is_limit_refusal, load_yaml

    try:
        value = load_yaml(body)
    except yaml.YAMLError as exc:
        message, _ = describe_yaml_error(exc)
        if is_limit_refusal(exc):
            raise HandoffError(f"handoff block: {message}") from None
        raise HandoffError(f"handoff block is neither JSON nor YAML: {message}") from None
    except ValueError as exc:
        raise HandoffError(f"handoff block is neither JSON nor YAML: {exc}") from None
    _refuse_non_finite(value)
    return value


def _refuse_non_finite(value: Any) -> None:
    """YAML's ``.nan`` and ``.inf`` are numbers no JSON file may hold: refused as JSON's are."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise HandoffError(
                f"handoff block holds {item}, which is not a finite number (JSON has no such "
                "number; give a finite one)"
            )
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _plain(value: Any) -> Any:
    # YAML reads yes/no as booleans; routing compares text, so keep the words.
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return value


def format_handoff(values: dict[str, Any]) -> str:
    """A handoff block for ``values`` (JSON, which is also YAML)."""
    return f"```handoff\n{json.dumps(values, sort_keys=True)}\n```"
