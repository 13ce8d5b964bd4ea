"""``OpenAIAPI``: any OpenAI-compatible endpoint, through the official ``openai`` client.

Chat Completions (default) or the Responses API (``api_style="responses"``),
K samples (``n`` when the endpoint honours it, parallel single requests
otherwise or when ``emulate_n=True``; the Responses API has no ``n``),
optional streaming, native tool calls (``openai`` parser) or prompt-based
ones (tool docs in the system message, no ``tools=`` sent). The client runs
with ``max_retries=0``: retries, backoff and the final error are ours
(:mod:`srh_core.api.retry`).

Settings resolve lazily, at the first request (or :meth:`OpenAIAPI.resolve`):
argument, then session environment, then process environment, then the
provider preset.
"""

from __future__ import annotations

import ipaddress
import random
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit

from srh_core.api.base import BaseAPI, Messages
from srh_core.api.call_result import SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.chat_wire import ChatStreamAssembler, chat_request, decode_chat_completion
from srh_core.api.gate import RequestGate, gated, reserved_tokens
from srh_core.api.options import RequestOptions
from srh_core.api.providers import OPENAI, ProviderPreset
from srh_core.api.response import CallSummary, ModelPrice, ModelResponse, Usage
from srh_core.api.responses_wire import (
    ResponsesStreamAssembler,
    decode_response,
    responses_request,
)
from srh_core.api.retry import RetryContext, RetryPolicy, Sleep, run_with_retries
from srh_core.api.sampling import Emit, SamplingPlan, collect_samples
from srh_core.api.wire import RawReply, RawSample, plain
from srh_core.errors import ConfigurationError, ModelRequestError
from srh_core.parsers import ToolLike, ToolParserName

if TYPE_CHECKING:
    import openai

ApiStyle = Literal["chat", "responses"]
API_STYLES: tuple[str, ...] = ("chat", "responses")


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """Resolved connection settings of one adapter.

    Attributes:
        provider: Provider name.
        base_url: OpenAI-compatible base URL.
        api_key: Key sent as a bearer token (a placeholder for keyless local servers).
        model: Model name.
        price: Tariff used for usage prices, when known.
    """

    provider: str
    base_url: str
    api_key: str
    model: str
    price: ModelPrice | None

    def __repr__(self) -> str:  # never print the key
        return (f"EndpointConfig(provider={self.provider!r}, base_url={self.base_url!r}, "
                f"model={self.model!r})")


@BaseAPI.register("openai")
class OpenAIAPI(BaseAPI):
    """OpenAI-compatible provider adapter.

    Args:
        model: Model name (default: setting ``<PROVIDER>_MODEL``, then the preset's).
        tool_list: Tools the model may call.
        tool_parser_name: ``openai`` for native calls, or ``text``/``json``/``xml``.
        environment: Session settings, read before ``os.environ``.
        base_url: Endpoint base URL (default: setting ``<PROVIDER>_BASE_URL``, then preset).
        api_key: API key (default: setting ``<PROVIDER>_API_KEY``).
        api_style: ``chat`` (Chat Completions) or ``responses`` (Responses API).
        stream: Stream replies unless a call says otherwise.
        emulate_n: Request every sample separately, never sending ``n``.
        max_tokens: Default length limit; None leaves the provider default.
        temperature: Default temperature; None leaves the provider default.
        top_p: Default nucleus mass; None leaves the provider default.
        timeout: Seconds per HTTP request.
        max_retries: Retries after the first attempt for transient failures.
        retry_base_delay: Backoff scale in seconds.
        retry_max_delay: Largest computed backoff.
        retry_after_max: Largest honoured ``Retry-After``.
        max_parallel: Most single-sample requests in flight.
        price: Tariff overriding the preset's (None: preset's, if any).
        isolated: Send only what is given here: ``api_key`` is required (never read
            from the environment) and no organization or project id is sent. Set when
            the endpoint was chosen by someone other than this process's operator.
        sleep: Retry sleep (tests inject a fake); default sleeps interruptibly.
        rng: Jitter source (seed it for reproducible delays).
        gate: Asked before every HTTP attempt and told its outcome (a cluster's shared
            quota and metrics, :mod:`srh_core.api.gate`); None sends directly.
    """

    preset: ClassVar[ProviderPreset] = OPENAI

    def __init__(
        self,
        model: str | None = None,
        tool_list: Sequence[ToolLike] | None = None,
        tool_parser_name: ToolParserName = "text",
        environment: Mapping[str, str] | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_style: ApiStyle = "chat",
        stream: bool = False,
        emulate_n: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 30.0,
        retry_after_max: float = 60.0,
        max_parallel: int = 8,
        price: ModelPrice | None = None,
        isolated: bool = False,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        gate: RequestGate | None = None,
    ) -> None:
        super().__init__(model, tool_list, tool_parser_name, environment)
        self.base_url, self.api_key, self.api_style = base_url, api_key, api_style
        self.emulate_n, self.timeout, self.max_parallel = emulate_n, timeout, max_parallel
        self.price, self.sleep, self.rng = price, sleep, rng or random.Random()
        self.isolated, self.gate = isolated, gate
        self.defaults = RequestOptions(max_tokens=max_tokens, temperature=temperature,
                                       top_p=top_p, stream=stream)
        self.retry_policy = RetryPolicy(max_retries, retry_base_delay, retry_max_delay,
                                        retry_after_max)
        self._check_settings()
        self._client: openai.OpenAI | None = None
        self._client_config: EndpointConfig | None = None
        self._client_lock = threading.Lock()

    def _check_settings(self) -> None:
        if self.api_style not in API_STYLES:
            raise ConfigurationError(
                f"api_style must be one of {API_STYLES}. Got {self.api_style!r} instead.",
                setting="api_style")
        for name, value in (("timeout", self.timeout), ("max_parallel", self.max_parallel)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigurationError(f"{name} must be a number > 0. Got {value!r} instead.",
                                         setting=name)
        self.defaults.validate()

    # -- settings ---------------------------------------------------------------------------

    def resolve(self) -> EndpointConfig:
        """Resolve base URL, key, model and price (call early to fail fast).

        Raises:
            ConfigurationError: A required setting (the API key) is missing.
        """
        preset = self.preset
        base_url = self.base_url or self._first_setting(preset.base_url_envs) or preset.base_url
        api_key = self.api_key or (None if self.isolated
                                   else self._first_setting(preset.api_key_envs))
        if not api_key and self.isolated:
            raise ConfigurationError(f"The {self.provider} adapter is isolated from this "
                                     "process's keys and was given none.", setting="api_key")
        if not api_key:
            api_key = (self.require_env(preset.api_key_envs[0]) if preset.api_key_required
                       else "not-needed")
        model = self.model or self._first_setting(preset.model_envs) or preset.default_model
        price = self.price or preset.price_for(model)
        return EndpointConfig(self.provider, self.normalize_base_url(base_url), api_key, model,
                              price)

    def _first_setting(self, names: Sequence[str]) -> str | None:
        return next((value for name in names if (value := self.getenv(name))), None)

    def normalize_base_url(self, url: str) -> str:
        """The base URL as sent to the client (presets may rewrite it)."""
        return url.strip()

    def client(self, config: EndpointConfig) -> openai.OpenAI:
        """The ``openai`` client for ``config`` (built once, thread-safe)."""
        import openai  # 0.4-0.9 s of imports: when a model is asked, not by offline runs

        with self._client_lock:
            if self._client is None or self._client_config != config:
                http_client = (openai.DefaultHttpx2Client(trust_env=False)
                               if _is_loopback(config.base_url) else None)
                self._client = openai.OpenAI(
                    base_url=config.base_url, api_key=config.api_key, timeout=self.timeout,
                    max_retries=0, http_client=http_client)
                if config.provider != "openai" or self.isolated:
                    # the client reads OPENAI_ORG_ID/OPENAI_PROJECT_ID from the environment;
                    # those identifiers must not be sent to other providers
                    self._client.organization = self._client.project = None
                self._client_config = config
            return self._client

    # -- requests ---------------------------------------------------------------------------

    def _generate(self, messages: Messages, n: int, options: RequestOptions,
                  token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        """Resolve settings now (errors surface at call time); stream the samples lazily."""
        config = self.resolve()
        options = options.over(self.defaults)
        conversation = self.add_tool_description(messages)
        plan = SamplingPlan(n=n, ask_n_first=self.api_style == "chat" and not self.emulate_n,
                            max_parallel=int(self.max_parallel), provider=config.provider,
                            model=config.model, price=config.price)

        requests = {asked: self._request_kwargs(config, conversation, options, asked)
                    for asked in {1, n}}

        def send(asked: int, emit: Emit, sample_token: CancelToken) -> RawReply:
            return self._send(config, requests[asked], emit, sample_token)

        def build(sample: int, raw: RawSample, usage: Usage | None) -> ModelResponse:
            return self._build_response(sample, raw, usage, config.price)

        return collect_samples(plan, send, build, token)

    def _send(self, config: EndpointConfig, request: dict[str, Any], emit: Emit,
              token: CancelToken) -> RawReply:
        """Send one request (with retries)."""
        streamed = threading.Event()

        def tracked_emit(index: int, text: str) -> None:
            streamed.set()
            emit(index, text)

        context = RetryContext(config.provider, config.model, config.base_url, self.sleep,
                               self.rng)
        # the prompt's size is estimated once per request, and only for a gate to reserve
        reserved = reserved_tokens(request) if self.gate is not None else 0

        def attempt() -> RawReply:
            return gated(self.gate, lambda: self._send_once(config, request, tracked_emit, token),
                         reserved=reserved, timeout=self.timeout, token=token,
                         price=config.price, usage_of=lambda reply: reply.usage)

        reply = run_with_retries(
            attempt,
            self.retry_policy, context, token, may_retry=lambda: not streamed.is_set())
        if reply.error:
            raise ModelRequestError(
                f"{config.provider} model {config.model!r} at {config.base_url} reported an "
                f"error: {reply.error}.", provider=config.provider, model=config.model)
        return reply

    def _request_kwargs(self, config: EndpointConfig, messages: Messages,
                        options: RequestOptions, asked: int) -> dict[str, Any]:
        tools = self.tool_description_json() if self.native_tools and self.tool_list else None
        if self.api_style == "responses":
            return responses_request(messages, options, model=config.model, tools=tools)
        return chat_request(messages, options, model=config.model, n=asked, tools=tools,
                            token_limit_param=self.preset.token_limit_param)

    def _send_once(self, config: EndpointConfig, request: dict[str, Any], emit: Emit,
                   token: CancelToken) -> RawReply:
        client = self.client(config)
        chat = self.api_style == "chat"
        create: Callable[..., Any] = (client.chat.completions.create if chat
                                      else client.responses.create)
        if not request.get("stream"):
            body = plain(create(**request))
            return decode_chat_completion(body) if chat else decode_response(body)
        assembler = ChatStreamAssembler() if chat else ResponsesStreamAssembler()
        stream = create(**request)
        try:
            for event in stream:
                token.raise_if_cancelled(config.provider, config.model)
                for index, text in assembler.add(plain(event)):
                    emit(index, text)
        finally:
            stream.close()
        return assembler.reply()

    def _build_response(self, sample: int, raw: RawSample, usage: Usage | None,
                        price: ModelPrice | None) -> ModelResponse:
        outcome = self.parser.parse_response_detailed(
            raw.native_calls if self.native_tools else raw.content)
        return ModelResponse(
            content=raw.content,
            tool_calls=tuple(outcome.calls),
            message=self.parser.assistant_message(raw.content, outcome.calls),
            finish_reason=raw.finish_reason,
            parse_issues=tuple(outcome.errors),
            sample=sample,
            usage=None if usage is None else usage.priced(price),
            reasoning=raw.reasoning,
        )


def _is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (shell proxies must not intercept it)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
