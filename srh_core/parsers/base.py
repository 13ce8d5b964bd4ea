"""The tool-call parser contract: tools -> model format, model output -> calls, results -> messages.

A parser never raises on model output. Anything it cannot read (malformed
JSON, a reply cut mid-call, an unknown tool name) is dropped from the calls
and recorded as a :class:`ParseIssue`, which :meth:`BaseParser.format_parse_issues`
turns into a message the model can act on. Calls that survive get a
deterministic id (``call_<n>``, 1-based within one response) when the
provider gave none.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.parsers.tool_docs import ToolLike, tool_metadata
from srh_core.registry import Registry
from srh_core.types import ToolCall, ToolCallResult, ToolMetadata, json_value

ToolParserName = Literal["openai", "json", "text", "xml"]
ParseIssueKind = Literal[
    "invalid_json", "truncated", "unknown_tool", "invalid_arguments", "malformed"
]

MAX_RESPONSE_CHARS = 200_000
"""Text beyond this length is not searched for calls (an issue says so)."""
MAX_RAW_CHARS = 2_000
"""Longest raw snippet kept on a call or an issue."""
ISSUE_SNIPPET_CHARS = 300
"""Longest raw snippet quoted back to the model for one issue."""

_ParserT = TypeVar("_ParserT", bound="type[BaseParser]")


def _unknown_parser(message: str) -> ConfigurationError:
    return ConfigurationError(message, setting="tool_parser_name")


PARSERS: Registry[type[BaseParser]] = Registry(
    "tool parser", "Available parsers", attribute="name", error=_unknown_parser)


@dataclass(frozen=True, slots=True)
class ParseIssue:
    """One tool call that could not be read, kept so the model can be told.

    Attributes:
        kind: What went wrong.
        message: A sentence for the model: what was expected and what came.
        raw: The offending text (bounded), kept verbatim.
        tool_name: The tool the call named, when it got that far.
        call_id: The provider's call id, when there was one.
    """

    kind: ParseIssueKind
    message: str
    raw: str = ""
    tool_name: str | None = None
    call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "raw": self.raw,
                "tool_name": self.tool_name, "call_id": self.call_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParseIssue:
        return cls(kind=data["kind"], message=str(data["message"]), raw=str(data.get("raw", "")),
                   tool_name=data.get("tool_name"), call_id=data.get("call_id"))


@dataclass(frozen=True)
class ParseOutcome:
    """Everything a parser read from one response.

    Attributes:
        calls: Readable calls, in the order they appeared.
        errors: Calls that were dropped, each with the reason.
    """

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[ParseIssue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"calls": [call.to_dict() for call in self.calls],
                "errors": [issue.to_dict() for issue in self.errors]}


def clip(text: str, limit: int = MAX_RAW_CHARS) -> str:
    """Return ``text`` cut to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


class BaseParser(ABC):
    """Converts between tool metadata / tool calls / tool results and one model format.

    Subclasses register under a name (``@BaseParser.register("json")``) and
    implement :meth:`format_tools` and :meth:`_extract`.

    Args:
        tools: Tools the model may call (metadata, tool objects or mappings).
        tool_names: Names accepted by :meth:`parse_response`. Defaults to the
            names of ``tools``; when both are None, any name passes through.
    """

    name: ClassVar[str] = ""
    resend_hint: ClassVar[str] = (
        "Resend the calls you still need, using the calling format described in the system "
        "message."
    )

    def __init__(
        self,
        tools: Iterable[ToolLike] | None = None,
        *,
        tool_names: Iterable[str] | None = None,
    ) -> None:
        self._tools = tuple(tool_metadata(tool) for tool in tools or ())
        if tool_names is None and tools is not None:
            tool_names = (metadata.name for metadata in self._tools)
        self._tool_names = frozenset(tool_names) if tool_names is not None else None
        self._last_outcome = ParseOutcome()

    @classmethod
    def register(cls, name: str) -> Callable[[_ParserT], _ParserT]:
        """Class decorator registering a parser class under ``name``."""
        return PARSERS.register(name)

    @classmethod
    def available(cls) -> list[str]:
        """Registered parser names, sorted."""
        return PARSERS.names()

    @classmethod
    def create(
        cls,
        name: str,
        tools: Iterable[ToolLike] | None = None,
        *,
        tool_names: Iterable[str] | None = None,
    ) -> BaseParser:
        """Build the parser registered as ``name``.

        Raises:
            ConfigurationError: When no parser has that name.
        """
        return PARSERS.get(name)(tools, tool_names=tool_names)

    @property
    def tools(self) -> tuple[ToolMetadata, ...]:
        return self._tools

    @property
    def tool_names(self) -> frozenset[str] | None:
        """Accepted tool names, or None when any name passes through."""
        return self._tool_names

    @property
    def last_outcome(self) -> ParseOutcome:
        """The outcome of the most recent parse (informational; not synchronised)."""
        return self._last_outcome

    @property
    def last_errors(self) -> list[ParseIssue]:
        return list(self._last_outcome.errors)

    @abstractmethod
    def format_tools(self, tools: Sequence[ToolLike] | None = None) -> Any:
        """Describe ``tools`` (default: the parser's own) in this parser's model format."""

    @abstractmethod
    def _extract(self, response: Any) -> Iterable[ToolCall | ParseIssue]:
        """Yield calls (id may be None) and issues in the order they appear."""

    def parse_response(self, response: Any) -> list[ToolCall]:
        """Return the readable tool calls of ``response``; ``[]`` when there are none."""
        return self.parse_response_detailed(response).calls

    def parse_response_detailed(self, response: Any) -> ParseOutcome:
        """Read every call of ``response``, keeping the unreadable ones as issues.

        Args:
            response: Model text, or (``openai`` mode) native tool calls / a message.

        Returns:
            The calls and the issues; never raises on model output.
        """
        items: list[ToolCall | ParseIssue] = []
        try:
            for item in self._extract(response):
                items.append(item)
        except Exception as error:  # parse boundary: model output must never raise
            items.append(ParseIssue(
                "malformed", f"The reply could not be read ({type(error).__name__}: {error}).",
                raw=clip(str(response)),
            ))
        self._last_outcome = self._finalize(items)
        return self._last_outcome

    def _finalize(self, items: Iterable[ToolCall | ParseIssue]) -> ParseOutcome:
        calls: list[ToolCall] = []
        errors: list[ParseIssue] = []
        for item in items:
            issue = item if isinstance(item, ParseIssue) else self._check_name(item)
            if issue is not None:
                errors.append(issue)
            elif isinstance(item, ToolCall):
                item.id = item.id or f"call_{len(calls) + 1}"
                calls.append(item)
        return ParseOutcome(calls, errors)

    def _check_name(self, call: ToolCall) -> ParseIssue | None:
        names = self._tool_names
        if names is None or call.name in names:
            return None
        return ParseIssue(
            "unknown_tool",
            f"Unknown tool {call.name!r}.{did_you_mean(call.name, names)} "
            f"Available tools: {', '.join(sorted(names)) or '(none)'}.",
            raw=call.raw_str or "", tool_name=call.name, call_id=call.id,
        )

    def response_text(self, response: Any) -> str:
        """The text part of a response: a string, a message's ``content``, or ``""``."""
        if isinstance(response, str):
            return response
        content = response.get("content") if isinstance(response, Mapping) else getattr(
            response, "content", None)
        return content if isinstance(content, str) else ""

    def bounded_text(self, response: Any) -> tuple[str, list[ParseIssue]]:
        """The response text cut to :data:`MAX_RESPONSE_CHARS`, with an issue when cut."""
        text = self.response_text(response)
        if len(text) <= MAX_RESPONSE_CHARS:
            return text, []
        issue = ParseIssue("malformed", f"The reply is {len(text)} characters long; only the "
                           f"first {MAX_RESPONSE_CHARS} were searched for tool calls.")
        return text[:MAX_RESPONSE_CHARS], [issue]

    def assistant_message(self, content: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
        """The assistant message to append to the conversation for this reply."""
        return {"role": "assistant", "content": content}

    def format_tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolCallResult]
    ) -> list[dict[str, Any]]:
        """One user message summarising every result in call order (prompt-based modes)."""
        check_pairs(calls, results)
        if not calls:
            return []
        blocks = [f"[{i}] {call.name} ({call.id}) -> {'ok' if result.ok else 'error'}\n"
                  f"{result.result_str}"
                  for i, (call, result) in enumerate(zip(calls, results, strict=True), start=1)]
        header = "Results of your tool calls, in the order you made them:"
        return [{"role": "user", "content": header + "\n\n" + "\n\n".join(blocks)}]

    def format_parse_issues(self, issues: Sequence[ParseIssue]) -> dict[str, Any] | None:
        """A user message telling the model which calls were not run and why; None if none."""
        if not issues:
            return None
        lines = ["These tool calls in your last message were NOT executed because they could "
                 "not be read:"]
        for number, issue in enumerate(issues, start=1):
            lines.append(f"{number}. {issue.message}")
            if issue.raw:
                lines.append(f"   Your text: {clip(issue.raw, ISSUE_SNIPPET_CHARS)}")
        lines.append(self.resend_hint)
        return {"role": "user", "content": "\n".join(lines)}


def check_pairs(calls: Sequence[ToolCall], results: Sequence[ToolCallResult]) -> None:
    """Raise when calls and results do not pair up one to one."""
    if len(calls) != len(results):
        raise ConfigurationError(
            f"format_tool_result_messages needs one result per call; got {len(calls)} calls "
            f"and {len(results)} results.",
            setting="results",
        )


def dumps_arguments(params: Mapping[str, Any]) -> str:
    """Serialise call arguments the way they are echoed back to a model."""
    return json.dumps(json_value(dict(params)), ensure_ascii=False)
