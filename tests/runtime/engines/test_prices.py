"""Prices: every model the project defaults to has one; a user adds theirs in runtime.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm_runtime.config import resolve_settings
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.engines.cli import DEFAULT_GEMINI_MODEL
from swarm_runtime.engines.options import options_for
from swarm_runtime.engines.prices import estimate_cost, load_prices
from swarm_runtime.engines.sdk import DEFAULT_MODEL
from swarm_runtime.engines.settings import claude_config
from swarm_runtime.errors import ConfigError


@pytest.mark.parametrize("model", [DEFAULT_MODEL, DEFAULT_GEMINI_MODEL])
def test_every_model_the_project_defaults_to_has_a_price(model: str) -> None:
    assert estimate_cost(load_prices(), model, TokenUsage(1000, 1000)) is not None


@pytest.mark.parametrize(
    ("model", "usd"),
    [("gpt-4o", 7.5), ("gpt-4.1-mini", 1.2), ("o4-mini", 3.3), ("gpt-5-nano", 0.25)],
)
def test_common_openai_models_have_a_price_and_an_unknown_one_none(model: str, usd: float) -> None:
    prices = load_prices()
    assert estimate_cost(prices, model, TokenUsage(1_000_000, 500_000)) == usd
    assert estimate_cost(prices, "gpt-unreleased-9", TokenUsage(1_000_000, 500_000)) is None


def _config(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "swarm" / "config" / "runtime.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return claude_config(options_for(resolve_settings(env={}, cwd=tmp_path), {}, "claude"))


def test_prices_in_runtime_yaml_add_to_the_shipped_table(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "engines:\n  claude:\n    prices:\n      my-model: {input: 2, output: 8}\n",
    )
    prices = load_prices(config["prices"])  # type: ignore[arg-type]
    assert estimate_cost(prices, "my-model", TokenUsage(1_000_000, 500_000)) == 6.0
    assert DEFAULT_MODEL in prices  # the shipped ones stay
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"other": {"input": 1, "output": 1}}))
    config = _config(tmp_path, f"engines:\n  claude:\n    prices: {table}\n")
    assert "other" in load_prices(config["prices"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "entry",
    ["my-model: 3", "my-model: {input: -1, output: 2}", "my-model: {input: 1}"],
)
def test_a_price_that_is_not_one_is_a_config_error_naming_the_model(
    tmp_path: Path, entry: str
) -> None:
    config = _config(tmp_path, f"engines:\n  claude:\n    prices:\n      {entry}\n")
    with pytest.raises(ConfigError, match="my-model"):
        load_prices(config["prices"])  # type: ignore[arg-type]
