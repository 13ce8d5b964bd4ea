"""The price table and the pure cost of token counts."""

from __future__ import annotations

import pytest

from srh_core.api.pricing import FREE, PRICES, price_of, price_overrides, token_cost
from srh_core.api.providers import OPENAI
from srh_core.api.response import ModelPrice
from srh_core.errors import ConfigurationError


def test_cost_counts_cached_input_at_its_own_rate():
    price = ModelPrice(1.0, 4.0, 0.1)
    assert token_cost(price, input_tokens=1_000_000, output_tokens=0) == pytest.approx(1.0)
    assert token_cost(price, input_tokens=2_000_000, output_tokens=500_000,
                      cached_tokens=1_000_000) == pytest.approx(1.0 + 0.1 + 2.0)
    no_cache_rate = ModelPrice(1.0, 4.0)
    assert token_cost(no_cache_rate, input_tokens=10, output_tokens=0, cached_tokens=10) == (
        pytest.approx(1e-5))


@pytest.mark.parametrize(("counts", "message"), [
    ({"input_tokens": -1, "output_tokens": 0}, "input_tokens"),
    ({"input_tokens": 1, "output_tokens": 2.5}, "output_tokens"),
    ({"input_tokens": 1, "output_tokens": 0, "cached_tokens": 2}, "exceeds"),
], ids=["negative", "not-int", "cached-above-input"])
def test_bad_counts_are_errors(counts, message):
    with pytest.raises(ConfigurationError, match=message):
        token_cost(ModelPrice(1.0, 1.0), **counts)


def test_every_listed_price_has_a_dated_source_and_sane_rates():
    for key, price in PRICES.items():
        provider, _, model = key.partition(":")
        assert provider and model, key
        assert "20" in price.source, key  # a date
        assert 0 <= price.cached_input_per_million <= price.input_per_million, key
        assert price.input_per_million <= price.output_per_million, key


def test_the_table_agrees_with_the_preset_prices():
    for model, price in OPENAI.prices.items():
        listed = PRICES[f"openai:{model}"]
        assert (listed.input_per_million, listed.output_per_million,
                listed.cached_input_per_million) == (
            price.input_per_million, price.output_per_million, price.cached_input_per_million)


def test_lookup_order_overrides_then_table_then_free_or_unknown():
    overrides = price_overrides({"openai:gpt-5-mini": {"input": 1, "output": 2},
                                 "my-model": {"input": 0.5, "output": 0.5,
                                              "cached_input": 0.1}})
    assert price_of("openai", "gpt-5-mini", overrides).input_per_million == 1.0
    assert price_of("openai", "gpt-5-mini").input_per_million == 0.25
    assert price_of("openrouter", "my-model", overrides).cached_input_per_million == 0.1
    assert price_of("deepseek", "deepseek-chat").output_per_million == 1.68
    assert price_of("lmstudio", "anything") is FREE and price_of("offline", None) is FREE
    assert price_of("openrouter", "qwen/qwen3.6-plus") is None
    assert price_of("openai", None) is None


@pytest.mark.parametrize(("settings", "message"), [
    ({"m": {"input": 1}}, "'input' and 'output'"),
    ({"m": {"input": 1, "output": -2}}, "finite number >= 0"),
    ({"m": {"input": 1, "output": 2, "cache": 1}}, "unknown field"),
    ({"m": {"input": True, "output": 2}}, "finite number"),
    ({":": {"input": 1, "output": 2}}, "price key"),
], ids=["missing-output", "negative", "unknown-field", "bool", "empty-key"])
def test_malformed_overrides_are_errors(settings, message):
    with pytest.raises(ConfigurationError, match=message):
        price_overrides(settings)
