"""Model adapters: from a conversation to K parsed :class:`ModelResponse` samples.

``BaseAPI.create("deepseek:deepseek-chat", tool_list=tools, tool_parser_name="openai")``
builds an adapter; ``api(messages, n=K, **options)`` returns an
:class:`APICallResult` that streams ``(content_delta, tool_calls_or_None)``
pairs and exposes ``responses``, ``contents``, ``tool_calls`` and ``usage``.
All OpenAI-compatible providers share :class:`OpenAIAPI`; :class:`ManualAPI`
lets a human type the responses. (The offline proposer lives elsewhere.)
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

# name -> its module, imported on first use: the settings read the endpoint rules
# (srh_core.api.endpoints) without loading the openai client.
_LAZY = {
    "BaseAPI": "srh_core.api.base",
    "APICallResult": "srh_core.api.call_result",
    "SampleDelta": "srh_core.api.call_result",
    "CancelToken": "srh_core.api.cancel",
    "ManualAPI": "srh_core.api.manual",
    "OfflineAPI": "srh_core.api.offline",
    "ApiStyle": "srh_core.api.openai_api",
    "EndpointConfig": "srh_core.api.openai_api",
    "OpenAIAPI": "srh_core.api.openai_api",
    "RequestOptions": "srh_core.api.options",
    "DeepSeekAPI": "srh_core.api.presets",
    "GeminiAPI": "srh_core.api.presets",
    "LMStudioAPI": "srh_core.api.presets",
    "OpenRouterAPI": "srh_core.api.presets",
    "SiliconFlowAPI": "srh_core.api.presets",
    "ProviderPreset": "srh_core.api.providers",
    "normalize_lmstudio_base_url": "srh_core.api.providers",
    "CallSummary": "srh_core.api.response",
    "ModelPrice": "srh_core.api.response",
    "ModelResponse": "srh_core.api.response",
    "Usage": "srh_core.api.response",
    "RetryPolicy": "srh_core.api.retry",
    "ModelRoute": "srh_core.api.router",
    "ModelRouter": "srh_core.api.router",
    "ModelAPIError": "srh_core.errors",
    "ModelRequestCancelledError": "srh_core.errors",
    "ModelRequestError": "srh_core.errors",
    "ModelResponseTruncatedError": "srh_core.errors",
    "ToolList": "srh_core.api.base",
    "ToolParserName": "srh_core.parsers",
}

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
    "ToolList",
    "ToolParserName",
    "Usage",
    "normalize_lmstudio_base_url",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
