"""List prices of the presets' common models, and the cost of token counts.

Prices are USD per one million tokens: uncached input, output (reasoning
included) and cached input. **Prices change**: each entry says where it was
read and when, and a settings mapping overrides any entry or adds models
(:func:`price_overrides`). A model that is in neither has no price (None):
its usage is counted in tokens only, never guessed. OpenRouter and
SiliconFlow price per routed model and change often, so none of theirs are
listed; a local LM Studio server costs nothing.

Sources (read for this table; verify before relying on a cost):

- DeepSeek: api-docs.deepseek.com/quick_start/pricing, the price list in
  effect from 2025-09-05 16:00 UTC (deepseek-chat and deepseek-reasoner,
  DeepSeek-V3.1, one price; no night discount).
- OpenAI: openai.com/api/pricing, standard tier, as of 2025-08 (the GPT-5
  launch list; the same list as the two prices in ``providers.OPENAI``).
- Gemini: ai.google.dev/gemini-api/docs/pricing, paid tier, prompts up to
  200k tokens, as of 2025-08.

The functions are pure; the run accounting (:mod:`srh_core.agent.accounting`)
prices every step with them, the ``prices`` setting passed as overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from srh_core.api.response import ModelPrice, Usage
from srh_core.errors import ConfigurationError

_DEEPSEEK = "api-docs.deepseek.com/quick_start/pricing, in effect from 2025-09-05"
_OPENAI = "openai.com/api/pricing, standard tier, as of 2025-08"
_GEMINI = "ai.google.dev/gemini-api/docs/pricing, paid tier, prompts <= 200k, as of 2025-08"
FREE = ModelPrice(0.0, 0.0, 0.0, source="local inference")
FREE_PROVIDERS = frozenset({"lmstudio", "offline"})


def _price(input_per_million: float, output_per_million: float, cached: float,
           source: str) -> ModelPrice:
    return ModelPrice(input_per_million, output_per_million, cached, source=source)


PRICES: Mapping[str, ModelPrice] = MappingProxyType({
    "deepseek:deepseek-chat": _price(0.56, 1.68, 0.07, _DEEPSEEK),
    "deepseek:deepseek-reasoner": _price(0.56, 1.68, 0.07, _DEEPSEEK),
    "openai:gpt-5": _price(1.25, 10.00, 0.125, _OPENAI),
    "openai:gpt-5-mini": _price(0.25, 2.00, 0.025, _OPENAI),
    "openai:gpt-5-nano": _price(0.05, 0.40, 0.005, _OPENAI),
    "openai:gpt-4.1": _price(2.00, 8.00, 0.50, _OPENAI),
    "openai:gpt-4.1-mini": _price(0.40, 1.60, 0.10, _OPENAI),
    "openai:gpt-4.1-nano": _price(0.10, 0.40, 0.025, _OPENAI),
    "openai:gpt-4o": _price(2.50, 10.00, 1.25, _OPENAI),
    "openai:gpt-4o-mini": _price(0.15, 0.60, 0.075, _OPENAI),
    "openai:o4-mini": _price(1.10, 4.40, 0.275, _OPENAI),
    "gemini:gemini-2.5-pro": _price(1.25, 10.00, 0.31, _GEMINI),
    "gemini:gemini-2.5-flash": _price(0.30, 2.50, 0.075, _GEMINI),
    "gemini:gemini-2.5-flash-lite": _price(0.10, 0.40, 0.025, _GEMINI),
})
"""``"provider:model"`` -> list price."""

_RATE_KEYS = {"input": "input_per_million", "output": "output_per_million",
              "cached_input": "cached_input_per_million"}


def token_cost(price: ModelPrice, *, input_tokens: int, output_tokens: int,
               cached_tokens: int = 0) -> float:
    """USD cost of one response's tokens under ``price``.

    Args:
        price: The tariff.
        input_tokens: Prompt tokens, cached ones included (as providers report them).
        output_tokens: Completion tokens, reasoning included.
        cached_tokens: Prompt tokens served from the provider's cache.

    Raises:
        ConfigurationError: A count is negative, or more tokens are cached than sent.
    """
    counts = {"input_tokens": input_tokens, "output_tokens": output_tokens,
              "cached_tokens": cached_tokens}
    for name, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigurationError(f"{name} must be a non-negative int; got {count!r}.",
                                     setting=name)
    if cached_tokens > input_tokens:
        raise ConfigurationError(f"cached_tokens ({cached_tokens}) exceeds input_tokens "
                                 f"({input_tokens}).", setting="cached_tokens")
    usage = Usage(prompt_tokens=input_tokens, completion_tokens=output_tokens,
                  total_tokens=input_tokens + output_tokens, cached_tokens=cached_tokens)
    return price.cost(usage)


def price_of(provider: str, model: str | None,
             overrides: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model`` on ``provider``: an override, the table, free, or None.

    Args:
        provider: Provider name ("openai", "deepseek", ...).
        model: Model name as sent to the provider.
        overrides: From :func:`price_overrides`; ``"provider:model"`` keys win
            over bare ``"model"`` keys, and both over the table.
    """
    if provider in FREE_PROVIDERS:
        return FREE
    if model is None:
        return None
    for table in (overrides or {}, PRICES):
        for key in (f"{provider}:{model}", model):
            if key in table:
                return table[key]
    return None


def price_overrides(settings: Mapping[str, Any] | None) -> dict[str, ModelPrice]:
    """Validated prices from a settings mapping.

    ``{"openai:gpt-5-mini": {"input": 0.25, "output": 2.0, "cached_input": 0.025}}``
    (USD per million tokens; ``cached_input`` optional, defaulting to ``input``;
    a key without ``provider:`` applies to that model name on any provider).

    Raises:
        ConfigurationError: A key or rate is malformed (the error names it).
    """
    overrides = {}
    for key, rates in (settings or {}).items():
        if not isinstance(key, str) or not key.strip(":"):
            raise ConfigurationError(f"A price key must be 'provider:model' or 'model'; got "
                                     f"{key!r}.", setting="prices")
        overrides[key] = _parsed_rates(key, rates)
    return overrides


def _parsed_rates(key: str, rates: Any) -> ModelPrice:
    if not isinstance(rates, Mapping) or not {"input", "output"} <= set(rates):
        raise ConfigurationError(f"The price of {key!r} must be a mapping with 'input' and "
                                 f"'output' (and optional 'cached_input'), USD per million "
                                 f"tokens; got {rates!r}.", setting="prices")
    unknown = set(rates) - set(_RATE_KEYS)
    if unknown:
        raise ConfigurationError(f"The price of {key!r} has unknown field(s) "
                                 f"{sorted(unknown)}; use input, output, cached_input.",
                                 setting="prices")
    values = {}
    for name, field in _RATE_KEYS.items():
        value = rates.get(name)
        if value is None and name == "cached_input":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0 <= value < float("inf")):
            raise ConfigurationError(f"The {name!r} price of {key!r} must be a finite number "
                                     f">= 0 (USD per million tokens); got {value!r}.",
                                     setting="prices")
        values[field] = float(value)
    return ModelPrice(**values, source="settings")
