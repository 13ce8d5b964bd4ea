"""Named providers that share :class:`OpenAIAPI`: only their preset differs.

``BaseAPI.create("deepseek:deepseek-chat")`` and ``DeepSeekAPI()`` are the
same thing; see :mod:`srh_core.api.providers` for the URLs and setting names.
"""

from __future__ import annotations

from typing import ClassVar

from srh_core.api.base import BaseAPI
from srh_core.api.openai_api import OpenAIAPI
from srh_core.api.providers import (
    DEEPSEEK,
    GEMINI,
    LMSTUDIO,
    OPENROUTER,
    SILICONFLOW,
    ProviderPreset,
    normalize_lmstudio_base_url,
)


@BaseAPI.register("deepseek")
class DeepSeekAPI(OpenAIAPI):
    """DeepSeek (``DEEPSEEK_API_KEY``, https://api.deepseek.com/v1)."""

    preset: ClassVar[ProviderPreset] = DEEPSEEK


@BaseAPI.register("openrouter")
class OpenRouterAPI(OpenAIAPI):
    """OpenRouter (``OPENROUTER_API_KEY``, https://openrouter.ai/api/v1)."""

    preset: ClassVar[ProviderPreset] = OPENROUTER


@BaseAPI.register("siliconflow")
class SiliconFlowAPI(OpenAIAPI):
    """SiliconFlow (``SILICONFLOW_API_KEY``, https://api.siliconflow.cn/v1)."""

    preset: ClassVar[ProviderPreset] = SILICONFLOW


@BaseAPI.register("gemini")
class GeminiAPI(OpenAIAPI):
    """Google Gemini's OpenAI-compatible endpoint (``GEMINI_API_KEY``)."""

    preset: ClassVar[ProviderPreset] = GEMINI


@BaseAPI.register("lmstudio")
class LMStudioAPI(OpenAIAPI):
    """A local LM Studio server (``LMSTUDIO_BASE_URL``, default http://localhost:1234/v1).

    No key is needed. The URL may name LM Studio's native ``/api/v1/chat``
    (or ``/api/v0/...``) endpoint; requests still go to the OpenAI-compatible
    ``/v1/chat/completions``, the one that takes multi-turn messages and
    custom function tools.
    """

    preset: ClassVar[ProviderPreset] = LMSTUDIO

    def normalize_base_url(self, url: str) -> str:
        return normalize_lmstudio_base_url(url)
