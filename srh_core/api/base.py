"""``BaseAPI``: the provider-independent half of every model adapter.

An adapter turns a conversation into K :class:`ModelResponse` samples.
This base class owns what all providers share: the registry and the
``"provider:model"`` factory, session-scoped settings, the tool-call parser,
tool descriptions (native schema or system-prompt text), request option
validation and cancellation. Subclasses implement :meth:`BaseAPI._generate`.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, ClassVar, TypeAlias, TypeVar

from srh_core.api.call_result import APICallResult, SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.options import RequestOptions
from srh_core.api.response import CallSummary
from srh_core.errors import ConfigurationError
from srh_core.parsers import BaseParser, ToolLike, ToolParserName
from srh_core.registry import Registry
from srh_core.types import ToolCall

#: What ``tool_list`` takes (the reference's name): tool objects, tool classes, their
#: metadata, or mappings with at least a ``name``.
ToolList: TypeAlias = list[ToolLike]

Messages = list[dict[str, Any]]
_ApiT = TypeVar("_ApiT", bound="type[BaseAPI]")


def _unknown_provider(message: str) -> ConfigurationError:
    return ConfigurationError(message, setting="provider")


def _load_builtin_providers() -> None:
    """Import the modules that register the built-in providers (on the first lookup)."""
    for module in ("openai_api", "presets", "manual", "offline"):
        importlib.import_module(f"srh_core.api.{module}")


PROVIDERS: Registry[type[BaseAPI]] = Registry(
    "model provider", "Available providers", attribute="provider", error=_unknown_provider,
    loader=_load_builtin_providers)


class BaseAPI(ABC):
    """Common request, parser and tool-call behaviour of model providers.

    Args:
        model: Model name; None lets the adapter resolve it (setting or default).
        tool_list: Tools the model may call (metadata or tool objects); None for none.
        tool_parser_name: How calls are exchanged: ``openai`` (native function
            calling) or the prompt-based ``text``, ``json``, ``xml``.
        environment: Session settings, read before ``os.environ``.
    """

    provider: ClassVar[str] = ""

    def __init__(
        self,
        model: str | None = None,
        tool_list: Sequence[ToolLike] | None = None,
        tool_parser_name: ToolParserName = "text",
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.model = model
        self.tool_list = list(tool_list) if tool_list is not None else None
        self.tool_parser_name = tool_parser_name
        self.environment = dict(environment or {})
        self.parser = self.build_parser()
        self._native_parser = BaseParser.create("openai", self.tool_list)
        self._tokens: weakref.WeakSet[CancelToken] = weakref.WeakSet()
        self._tokens_lock = threading.Lock()

    # -- registry ---------------------------------------------------------------------------

    @classmethod
    def register(cls, name: str) -> Callable[[_ApiT], _ApiT]:
        """Class decorator registering an adapter under a provider name."""
        return PROVIDERS.register(name)

    @classmethod
    def available(cls) -> list[str]:
        """Registered provider names, sorted."""
        return PROVIDERS.names()

    @classmethod
    def create(cls, spec: str, **kwargs: Any) -> BaseAPI:
        """Build an adapter from ``"provider"`` or ``"provider:model"``.

        The model part may itself contain colons (``openrouter:vendor/model:free``).

        Raises:
            ConfigurationError: Unknown provider, or two different models given.
        """
        provider, colon, model = spec.partition(":")
        api_cls = PROVIDERS.get(provider.strip())
        if colon and model:
            if kwargs.get("model") not in (None, model):
                raise ConfigurationError(
                    f"The model is given twice: {model!r} in {spec!r} and "
                    f"{kwargs['model']!r} as model=. Give it once.", setting="model")
            kwargs["model"] = model
        return api_cls(**kwargs)

    # -- settings ---------------------------------------------------------------------------

    def getenv(self, name: str, default: str | None = None) -> str | None:
        """Read a setting from the session environment, then ``os.environ``."""
        if name in self.environment:
            return self.environment[name]
        return os.environ.get(name, default)

    def require_env(self, name: str) -> str:
        """Read a required setting.

        Raises:
            ConfigurationError: Naming the setting and the provider, when unset or empty.
        """
        value = self.getenv(name)
        if not value:
            raise ConfigurationError(
                f"The {self.provider or type(self).__name__} model provider needs the setting "
                f"{name}: export {name}=... or pass environment={{{name!r}: ...}}.",
                setting=name)
        return value

    # -- tools ------------------------------------------------------------------------------

    def build_parser(self) -> BaseParser:
        """The parser of ``tool_parser_name`` over ``tool_list`` (names checked when known).

        Raises:
            ConfigurationError: When the parser name is unknown.
        """
        return BaseParser.create(self.tool_parser_name, self.tool_list)

    @property
    def native_tools(self) -> bool:
        """Whether tools travel as a native ``tools=`` schema (``openai`` parser)."""
        return self.parser.name == "openai"

    def tool_description_text(self) -> str:
        """The tool documentation for the system prompt ("" in native mode or without tools)."""
        if self.native_tools or not self.tool_list:
            return ""
        return str(self.parser.format_tools())

    def tool_description_json(self) -> list[dict[str, Any]]:
        """Native function-tool descriptions (``[{"type": "function", ...}]``)."""
        return self._native_parser.format_tools()

    def add_tool_description(self, messages: Sequence[Mapping[str, Any]]) -> Messages:
        """Put the tool docs into the leading system message (prompt modes only).

        A system (or developer) message is created when the conversation has
        none; docs already present are not added twice. The caller's list and
        messages are never mutated.
        """
        copied = [dict(message) for message in messages]
        docs = self.tool_description_text()
        if not docs:
            return copied
        if not copied or copied[0].get("role") not in ("system", "developer"):
            return [{"role": "system", "content": docs}, *copied]
        copied[0]["content"] = _with_docs(copied[0].get("content"), docs)
        return copied

    def normalize_openai_tool_calls(self, tool_calls: Sequence[Any]) -> list[ToolCall]:
        """Provider-native calls to :class:`ToolCall` (unreadable ones are dropped)."""
        return self._native_parser.parse_response(list(tool_calls))

    # -- requests ---------------------------------------------------------------------------

    def __call__(self, messages: str | Sequence[Mapping[str, Any]], n: int = 1,
                 **options: Any) -> APICallResult:
        """Request ``n`` samples for a conversation.

        Args:
            messages: Chat-shaped messages, or one user prompt as a string.
            n: Number of samples K (>= 1).
            **options: Fields of :class:`RequestOptions` (``max_tokens``, ``temperature``,
                ``top_p``, ``stream``, ``stop``, ``seed``, ``extra_body``).

        Returns:
            A lazy, iterable :class:`APICallResult`.

        Raises:
            ConfigurationError: Bad ``n``, unknown option or bad messages.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(f"n must be an int >= 1. Got {n!r} instead.", setting="n")
        conversation = _conversation(messages)
        request = RequestOptions.from_kwargs(options)
        token = CancelToken()
        with self._tokens_lock:
            self._tokens.add(token)
        events = self._generate(conversation, n, request, token)
        return APICallResult(self._released(events, token), self.parser)

    def _released(self, events: Generator[SampleDelta, None, CallSummary],
                  token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        try:
            return (yield from events)
        finally:
            with self._tokens_lock:
                self._tokens.discard(token)

    def cancel(self) -> None:
        """Cancel every call in flight (thread-safe); they raise ``ModelRequestCancelledError``.

        Calls made after ``cancel()`` are not affected.
        """
        with self._tokens_lock:
            tokens = list(self._tokens)
        for token in tokens:
            token.cancel()

    @abstractmethod
    def _generate(self, messages: Messages, n: int, options: RequestOptions,
                  token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        """Yield deltas of the K samples and return the call summary."""


def _conversation(messages: str | Sequence[Mapping[str, Any]]) -> Messages:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    conversation = [dict(message) for message in messages if isinstance(message, Mapping)]
    if len(conversation) != len(messages) or not all("role" in m for m in conversation):
        raise ConfigurationError(
            "messages must be a string or a list of mappings with a 'role'. Got "
            f"{[type(m).__name__ for m in messages]!r} instead.", setting="messages")
    return conversation


def _with_docs(content: Any, docs: str) -> Any:
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return content if docs in texts else [*content, {"type": "text", "text": docs}]
    text = str(content or "")
    if docs in text:
        return text
    return f"{text}\n\n{docs}" if text else docs
