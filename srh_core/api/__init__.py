"""Model adapters: from a conversation to K parsed :class:`ModelResponse` samples.

``BaseAPI.create("deepseek:deepseek-chat", tool_list=tools, tool_parser_name="openai")``
builds an adapter; ``api(messages, n=K, **options)`` returns an
:class:`APICallResult` that streams ``(content_delta, tool_calls_or_None)``
pairs and exposes ``responses``, ``contents``, ``tool_calls`` and ``usage``.
All OpenAI-compatible providers share :class:`OpenAIAPI`; :class:`ManualAPI`
lets a human type the responses. (The offline proposer lives elsewhere.)
"""

from __future__ import annotations

from srh_core.api.base import BaseAPI
from srh_core.api.call_result import APICallResult, SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.manual import ManualAPI
from srh_core.api.offline import OfflineAPI
from srh_core.api.openai_api import ApiStyle, EndpointConfig, OpenAIAPI
from srh_core.api.options import RequestOptions
from srh_core.api.presets import DeepSeekAPI, GeminiAPI, LMStudioAPI, OpenRouterAPI, SiliconFlowAPI
from srh_core.api.providers import ProviderPreset, normalize_lmstudio_base_url
from srh_core.api.response import CallSummary, ModelPrice, ModelResponse, Usage
from srh_core.api.retry import RetryPolicy
from srh_core.api.router import ModelRoute, ModelRouter
from srh_core.errors import (
    ModelAPIError,
    ModelRequestCancelledError,
    ModelRequestError,
    ModelResponseTruncatedError,
)
from srh_core.parsers import ToolParserName

__all__ = [
    "APICallResult",
    "ApiStyle",
    "BaseAPI",
    "CallSummary",
    "CancelToken",
    "DeepSeekAPI",
    "EndpointConfig",
    "GeminiAPI",
    "LMStudioAPI",
    "ManualAPI",
    "ModelAPIError",
    "ModelPrice",
    "ModelRequestCancelledError",
    "ModelRequestError",
    "ModelResponse",
    "ModelResponseTruncatedError",
    "ModelRoute",
    "ModelRouter",
    "OfflineAPI",
    "OpenAIAPI",
    "OpenRouterAPI",
    "ProviderPreset",
    "RequestOptions",
    "RetryPolicy",
    "SampleDelta",
    "SiliconFlowAPI",
    "ToolParserName",
    "Usage",
    "normalize_lmstudio_base_url",
]
