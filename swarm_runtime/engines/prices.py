"""What a call costs: the price table shipped as data, with the user's prices on top.

``swarm_runtime/data/prices.json`` lists USD per million input and output tokens by model.
A user adds or overrides models with the engine's ``prices`` in ``runtime.yaml``
(``engines.claude.prices``, ``engines.openai.prices``): a
mapping ``{model: {input: USD, output: USD}}`` or the path of a JSON file of that shape.
A model in neither gets no estimate (None), never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.errors import ConfigError

Prices = dict[str, dict[str, float]]
"""USD per million tokens by model: ``{model: {"input": …, "output": …}}``."""

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "prices.json"


def load_prices(
    user: Mapping[str, Any] | str | Path | None = None, where: str = "engines.claude.prices"
) -> Prices:
    """The shipped table, with ``user``'s prices (a mapping, or a JSON file) on top.

    ``where`` names a mapping's place in runtime.yaml, for messages.
    """
    table = _entries(_read(SHIPPED), str(SHIPPED))
    if user is None:
        return table
    if isinstance(user, Mapping):
        table.update(_entries(user, where))
    else:
        table.update(_entries(_read(Path(user)), str(user)))
    return table


def _read(source: Path) -> Any:
    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.json_input import load_json

    try:
        return load_json(read_text_limited(source))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"price table {source}: cannot read: {exc}") from None


def _entries(raw: Any, where: str) -> Prices:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: prices must map model names to {{input, output}}")
    table: Prices = {}
    for model, price in raw.items():
        if str(model).startswith("_"):
            continue  # a note, not a model
        if not isinstance(price, Mapping) or set(price) != {"input", "output"}:
            raise ConfigError(
                f"{where}: the price of {model!r} must be {{input: USD, output: USD}} per "
                f"million tokens, got {price!r}"
            )
        for side in ("input", "output"):
            value = price[side]
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not (math.isfinite(value) and value >= 0)
            ):
                raise ConfigError(
                    f"{where}: {model}.{side} must be a number of USD >= 0, got {value!r}"
                )
        table[str(model)] = {"input": float(price["input"]), "output": float(price["output"])}
    return table


def estimate_cost(prices: Prices, model: str, tokens: TokenUsage) -> float | None:
    """USD for ``tokens`` of ``model``; None when the model is not in the table."""
    price = prices.get(model)
    if price is None:
        return None
    return round((tokens.prompt * price["input"] + tokens.completion * price["output"]) / 1e6, 8)
