"""Provider presets for OpenAI-compatible endpoints: base URL, settings names, prices.

Every preset shares :class:`srh_core.api.openai_api.OpenAIAPI`; only these
facts differ. A setting is resolved as: constructor argument, then the
session environment, then the process environment (first name listed wins),
then the preset default.

Prices are listed only where they were read from the provider's own price
page, with the date in ``source``; prices change, so pass ``price=`` to the
adapter to override. Everywhere else the price is None (unknown), and
usage reports tokens only. A local LM Studio server costs nothing per token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit, urlunsplit

from srh_core.api.chat_wire import TokenLimitParam
from srh_core.api.response import ModelPrice
from srh_core.errors import ConfigurationError

_OPENAI_PRICES_SOURCE = "openai.com/api/pricing, standard tier, as of 2025-08"


@dataclass(frozen=True, slots=True)
class ProviderPreset:
    """Connection facts of one OpenAI-compatible provider.

    Attributes:
        name: Registry name (``deepseek``).
        base_url: Default OpenAI-compatible base URL (ends before ``/chat/completions``).
        default_model: Model used when neither the caller nor the environment names one.
        api_key_envs: Settings holding the API key, in priority order.
        base_url_envs: Settings overriding the base URL.
        model_envs: Settings naming the model.
        api_key_required: False for local servers, which accept any key.
        token_limit_param: Name of the length-limit field in Chat Completions.
        prices: Known prices per model name.
        free: Every model costs nothing (local inference).
    """

    name: str
    base_url: str
    default_model: str
    api_key_envs: tuple[str, ...]
    base_url_envs: tuple[str, ...]
    model_envs: tuple[str, ...]
    api_key_required: bool = True
    token_limit_param: TokenLimitParam = "max_tokens"
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: MappingProxyType({}))
    free: bool = False

    def price_for(self, model: str) -> ModelPrice | None:
        """The known price of ``model`` on this provider, else None."""
        if self.free:
            return ModelPrice(0.0, 0.0, 0.0, source="local inference")
        return self.prices.get(model)


OPENAI = ProviderPreset(
    name="openai",
    base_url="https://api.openai.com/v1",
    default_model="gpt-5-mini",
    api_key_envs=("OPENAI_API_KEY",),
    base_url_envs=("OPENAI_BASE_URL",),
    model_envs=("OPENAI_MODEL",),
    token_limit_param="max_completion_tokens",
    prices=MappingProxyType({
        "gpt-5-mini": ModelPrice(0.25, 2.00, 0.025, source=_OPENAI_PRICES_SOURCE),
        "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075, source=_OPENAI_PRICES_SOURCE),
    }),
)
DEEPSEEK = ProviderPreset(
    name="deepseek",
    base_url="https://api.deepseek.com/v1",
    default_model="deepseek-chat",
    api_key_envs=("DEEPSEEK_API_KEY",),
    base_url_envs=("DEEPSEEK_BASE_URL",),
    model_envs=("DEEPSEEK_MODEL",),
)
OPENROUTER = ProviderPreset(
    name="openrouter",
    base_url="https://openrouter.ai/api/v1",
    default_model="qwen/qwen3.6-plus",
    api_key_envs=("OPENROUTER_API_KEY",),
    base_url_envs=("OPENROUTER_BASE_URL",),
    model_envs=("OPENROUTER_MODEL",),
)
SILICONFLOW = ProviderPreset(
    name="siliconflow",
    base_url="https://api.siliconflow.cn/v1",
    default_model="Qwen/Qwen3-8B",
    api_key_envs=("SILICONFLOW_API_KEY",),
    base_url_envs=("SILICONFLOW_BASE_URL",),
    model_envs=("SILICONFLOW_MODEL",),
)
LMSTUDIO = ProviderPreset(
    name="lmstudio",
    base_url="http://localhost:1234/v1",
    default_model="qwen_qwen3-4b-instruct-2507",
    api_key_envs=("LMSTUDIO_API_KEY",),
    base_url_envs=("LMSTUDIO_BASE_URL", "LMSTUDIO_ENDPOINT"),
    model_envs=("LMSTUDIO_MODEL",),
    api_key_required=False,
    free=True,
)
GEMINI = ProviderPreset(
    name="gemini",
    base_url="https://generativelanguage.googleapis.com/v1beta/openai/",
    default_model="gemini-2.5-pro",
    api_key_envs=("GEMINI_API_KEY",),
    base_url_envs=("GEMINI_BASE_URL",),
    model_envs=("GEMINI_MODEL",),
)

_LMSTUDIO_API_PATH = re.compile(r"/(?:api/)?v\d+(?:/.*)?$")


def normalize_lmstudio_base_url(url: str) -> str:
    """Map any LM Studio URL to its OpenAI-compatible ``/v1`` base.

    LM Studio recommends its native ``/api/v1/chat`` endpoint (and older
    builds ``/api/v0/...``), but only ``/v1/chat/completions`` takes
    multi-turn messages with custom function tools, so every variant
    (``http://host:1234``, ``.../api/v1/chat``, ``.../v1/chat/completions``)
    becomes ``http://host:1234/v1``.

    Raises:
        ConfigurationError: When ``url`` is not an http(s) URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"The LM Studio URL must look like http://host:1234/v1. Got {url!r} instead.",
            setting="LMSTUDIO_BASE_URL")
    prefix = _LMSTUDIO_API_PATH.sub("", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, prefix + "/v1", "", ""))
