"""Strict JSON within the nesting limit (see :func:`load_json`)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from swarm_runtime.inputs.files import decode_utf8
from swarm_runtime.inputs.limits import MAX_DEPTH, InputRefused, too_deep


def load_json(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON within the nesting limit: what ``json.loads`` reads, less what is ambiguous.

    Refused with an :class:`InputRefused`: nesting deeper than ``max_depth`` (before
    decoding, naming the line), a key twice in one object (which one would count?),
    ``NaN``, ``Infinity`` and numbers too big for a float (not JSON, and strict readers
    reject them), integers of more than 4300 digits. ``json.JSONDecodeError`` for text
    that is not JSON.
    """
    if isinstance(text, bytes):
        text = decode_utf8(text)
    check_json_depth(text, max_depth)
    try:
        return _STRICT.decode(text)
    except (json.JSONDecodeError, InputRefused):
        raise
    except RecursionError:  # only reachable with a max_depth above the recursion limit
        raise InputRefused(too_deep(max_depth)) from None
    except ValueError:  # int() refused a number past its digit limit
        raise InputRefused("holds an integer of more than 4300 digits") from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        twice = ""
        for key, _ in pairs:
            if key in seen:
                twice = key
                break
            seen.add(key)
        raise InputRefused(
            f"has the key {twice!r} twice in one object; refusing a document that means two "
            "things (keep one)"
        )
    return value


def _constant(name: str) -> Any:
    raise InputRefused(f"holds {name}, which is not a JSON number (give a finite number)")


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise InputRefused(f"holds {text}, a number too big for a float (give a finite number)")
    return value


_STRICT = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)


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
