"""Input limits: deep nesting is refused in our words, whatever parser PyYAML brings."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import MAX_DEPTH, InputRefused
from swarm_runtime.inputs.yaml_input import (
    compose_yaml,
    describe_yaml_error,
    is_limit_refusal,
    load_yaml,
)

DEEP_FLOW = "key: deep\nsteps: " + "[" * 25_000 + "]" * 25_000 + "\n"


def _refusal(text: str) -> tuple[str, int | None]:
    with pytest.raises(yaml.YAMLError) as caught:
        compose_yaml(text)
    assert is_limit_refusal(caught.value)
    return describe_yaml_error(caught.value)


class _LimitedCLoader(yaml.SafeLoader):
    """A parser with a nesting limit of its own in a scanner that reads ahead.

    PyYAML 6.0.4's libyaml refuses ``[`` past 1000 levels while scanning up to a line ahead
    of the events it has handed out: this one refuses at the first event when the text
    holds 1001 ``[`` in a row, before any event reaches the composer.
    """

    def check_event(self, *choices: Any) -> bool:
        index = self.buffer.find("[" * 1001)
        if index >= 0:
            line = self.buffer.count("\n", 0, index)
            mark = yaml.Mark("<unicode string>", index + 1000, line, 1000, None, None)
            raise yaml.scanner.ScannerError(
                "while increasing flow level", mark, "exceeded maximum nesting depth", mark
            )
        return bool(super().check_event(*choices))


def test_deep_flow_nesting_is_refused_with_our_message_and_the_line() -> None:
    message, line = _refusal(DEEP_FLOW)
    assert message.startswith(f"nesting deeper than {MAX_DEPTH} levels")
    assert line == 2


def test_the_refusal_is_the_same_when_the_c_parser_refuses_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = _refusal(DEEP_FLOW)
    monkeypatch.setattr(yaml, "CSafeLoader", _LimitedCLoader, raising=False)
    assert _refusal(DEEP_FLOW) == expected
    # Deep flow nesting that starts on a later line, and under a block mapping.
    nested = "a:\n  b:\n    c: " + "[" * 5000 + "\n"
    assert _refusal(nested)[1] == 3


def test_the_refusal_is_the_same_with_the_pure_python_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = _refusal(DEEP_FLOW)
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    assert _refusal(DEEP_FLOW) == expected


def test_a_c_parser_error_that_is_not_about_nesting_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Many brackets (in a quoted string) before a real syntax error: the pure-Python
    # parser is consulted, finds nothing too deep, and the parser's own error is kept.
    text = 'a: "' + "[" * 3000 + '"\nb: [c\n'
    with pytest.raises(yaml.YAMLError) as caught:
        compose_yaml(text)
    assert not is_limit_refusal(caught.value)
    _, line = describe_yaml_error(caught.value)
    assert line == 2  # where the unclosed bracket was opened


@pytest.mark.parametrize(
    "text",
    [
        "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 5)),
        "".join("  " * i + "-\n" for i in range(MAX_DEPTH + 5)),
        "{a: " * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1),
    ],
    ids=["block mapping", "block sequence", "flow mapping"],
)
def test_every_kind_of_nesting_is_refused_past_the_limit(text: str) -> None:
    message, _ = _refusal(text)
    assert f"nesting deeper than {MAX_DEPTH} levels" in message


def test_nesting_at_the_limit_is_read() -> None:
    depth = MAX_DEPTH - 1  # the document's mapping is a level too
    value = load_yaml("a: " + "[" * depth + "1" + "]" * depth)
    for _ in range(depth + 1):
        value = value["a"] if isinstance(value, dict) else value[0]
    assert value == 1


def test_brackets_inside_scalars_are_not_nesting() -> None:
    assert load_yaml('a: "' + "[" * 2000 + '"\nb: x' + "{" * 500) == {
        "a": "[" * 2000,
        "b": "x" + "{" * 500,
    }


def test_deep_json_is_refused_with_its_line() -> None:
    with pytest.raises(InputRefused) as caught:
        load_json("{\n" + '"a": ' + "[" * 200 + "]" * 200 + "\n}")
    assert f"nesting deeper than {MAX_DEPTH} levels" in str(caught.value)
    assert caught.value.line == 2
    assert caught.value.located("plan.json").startswith("plan.json:2: nesting deeper")
    with pytest.raises(InputRefused):
        load_json(("[" * 100_000).encode())  # bytes, and far past the recursion limit


def test_json_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"text": "[" * 500 + '\\"{' * 300, "list": [[1]]})
    assert load_json(text) == json.loads(text)
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_a_document_too_big_says_which_limit_it_met() -> None:
    from swarm_runtime.inputs.limits import MAX_NODES

    plain = "steps:\n" + "".join(f"  - {{id: s{n}, role: r}}\n" for n in range(MAX_NODES // 4))
    message, line = _refusal(plain)
    assert message.startswith(f"the document holds more than {MAX_NODES} nodes")
    assert "alias" not in message and line is not None
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True)
    )
    message, _ = _refusal(bomb)
    assert message.startswith(f"the document expands to more than {MAX_NODES} nodes through")
