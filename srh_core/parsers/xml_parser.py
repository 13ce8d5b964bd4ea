"""``xml`` mode: ``<tool_call name="..."><param name="...">value</param></tool_call>``.

Model output is not well-formed XML (``x < 3`` appears unescaped, replies
are cut), so tags are matched with patterns rather than an XML parser.
Tolerated: single, double or no quotes around ``name``, any whitespace,
``<![CDATA[...]]>`` values, entity escapes (``&lt;``), and a JSON object
as the body instead of ``<param>`` tags. A parameter value that looks like
JSON (number, ``true``/``false``/``null``, list, object, quoted string) is
decoded; anything else is kept as text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from srh_core.parsers.arguments import decode_arguments
from srh_core.parsers.base import BaseParser, ParseIssue, check_pairs, clip
from srh_core.parsers.lenient_json import loads_lenient
from srh_core.parsers.prompt_parser import PromptParser
from srh_core.types import ToolCall, ToolCallResult

_OPEN_RE = re.compile(r"<tool_call\b(?P<attrs>[^>]*)>", re.IGNORECASE)
_CLOSE_RE = re.compile(r"</tool_call\s*>", re.IGNORECASE)
_NAME_ATTR_RE = re.compile(r"""\bname\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""",
                           re.IGNORECASE)
_PARAM_RE = re.compile(r"<param\b(?P<attrs>[^>]*?)(?:/>|>(?P<body>.*?)</param\s*>)",
                       re.IGNORECASE | re.DOTALL)
_PARAM_OPEN_RE = re.compile(r"<param\b", re.IGNORECASE)
_CDATA_RE = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_TOKEN_RE = re.compile(r"\x00(\d+)\x00")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


@BaseParser.register("xml")
class XMLParser(PromptParser):
    """Reads ``<tool_call>`` elements from free text."""

    def calling_convention(self) -> str:
        return (
            "To call a tool, write a <tool_call> element with one <param> element per "
            "argument:\n\n"
            '<tool_call name="<tool name>">\n<param name="<argument>">value</param>\n'
            "</tool_call>\n\n"
            "Rules:\n"
            "- Values that look like JSON (numbers, true/false/null, [lists], {objects}) are "
            "read as JSON; everything else is plain text. Wrap text containing < or & in "
            "<![CDATA[ ... ]]>.\n"
            "- Write several <tool_call> elements to make several calls; they run in order. A "
            'tool without arguments is <tool_call name="<tool name>"></tool_call>.\n'
            "- Text outside the elements is fine; only the elements are executed."
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        params = "".join(f'\n<param name="{html.escape(key)}">{_render_value(value)}</param>'
                         for key, value in arguments.items())
        return f'<tool_call name="{html.escape(name)}">{params}\n</tool_call>'

    def _extract(self, response: Any) -> Iterator[ToolCall | ParseIssue]:
        text, issues = self.bounded_text(response)
        yield from issues
        protected, sections = _protect_cdata(text)
        position = 0
        while (opening := _OPEN_RE.search(protected, position)) is not None:
            item, position = _read_element(protected, opening, sections)
            yield item
            if position >= len(protected):
                return

    def format_tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolCallResult]
    ) -> list[dict[str, Any]]:
        """One user message with a ``<tool_result>`` element per call, in call order."""
        check_pairs(calls, results)
        if not calls:
            return []
        blocks = [
            f'<tool_result name="{html.escape(call.name)}" id="{html.escape(call.id or "")}" '
            f'status="{"ok" if result.ok else "error"}">\n{result.result_str}\n</tool_result>'
            for call, result in zip(calls, results, strict=True)
        ]
        return [{"role": "user", "content": "\n".join(blocks)}]


def _read_element(text: str, opening: re.Match[str], sections: list[str]
                  ) -> tuple[ToolCall | ParseIssue, int]:
    """Read the element opened by ``opening``; return it and where scanning resumes."""
    attrs = opening.group("attrs")
    if attrs.rstrip().endswith("/"):  # <tool_call name="x"/>: a call without arguments
        return _read_call(attrs.rstrip()[:-1], "", sections, opening.group(0)), opening.end()
    closing = _CLOSE_RE.search(text, opening.end())
    following = _OPEN_RE.search(text, opening.end())
    if closing is None:
        return _unclosed(text[opening.start():], sections, at_end=True), len(text)
    if following is not None and following.start() < closing.start():
        rest = text[opening.start():following.start()]
        return _unclosed(rest, sections, at_end=False), following.start()
    raw = _restore(text[opening.start():closing.end()], sections, verbatim=True)
    body = text[opening.end():closing.start()]
    return _read_call(attrs, body, sections, raw), closing.end()


def _read_call(attrs: str, body: str, sections: list[str], raw: str) -> ToolCall | ParseIssue:
    name = _attribute_name(attrs)
    if not name:
        return ParseIssue("malformed", 'Your <tool_call> has no name attribute; write '
                          '<tool_call name="<tool name>">.', raw=clip(raw))
    params = list(_PARAM_RE.finditer(body))
    if len(params) != len(_PARAM_OPEN_RE.findall(body)):
        return ParseIssue("malformed", f"A <param> of your call to {name!r} is not closed with "
                          "</param>; the call was not executed.", raw=clip(raw), tool_name=name)
    if not params:
        return _body_call(name, _restore(body, sections).strip(), raw)
    arguments = {}
    for param in params:
        key = _attribute_name(param.group("attrs"))
        if not key:
            return ParseIssue("malformed", f'A <param> of your call to {name!r} has no name '
                              'attribute; write <param name="<argument>">.', raw=clip(raw),
                              tool_name=name)
        arguments[key] = decode_value(_restore(param.group("body") or "", sections))
    return ToolCall(name=name, params=arguments, raw_str=clip(raw))


def _body_call(name: str, body: str, raw: str) -> ToolCall | ParseIssue:
    """A call without <param> tags: empty, or a JSON object as the whole body."""
    decoded = decode_arguments(body or None, tool_name=name, raw=raw)
    if isinstance(decoded, ParseIssue):
        return ParseIssue("invalid_arguments", f"The arguments of your call to {name!r} must be "
                          '<param name="<argument>">value</param> elements.', raw=clip(raw),
                          tool_name=name)
    return ToolCall(name=name, params=decoded, raw_str=clip(raw))


def decode_value(text: str) -> Any:
    """Decode a parameter value: JSON when it looks like JSON, else the (trimmed) text."""
    value = _trim(text)
    looks_json = value[:1] in ('[', '{', '"') or value in ("true", "false", "null")
    if looks_json or _NUMBER_RE.fullmatch(value):
        try:
            return loads_lenient(value)
        except ValueError:
            return value
    return value


def _trim(text: str) -> str:
    """Strip a single-line value; keep the indentation of a multi-line one."""
    inner = text.rstrip().lstrip("\r\n")
    return inner if "\n" in inner else inner.strip()


def _attribute_name(attrs: str) -> str | None:
    match = _NAME_ATTR_RE.search(attrs)
    if match is None:
        return None
    return html.unescape(next(group for group in match.groups() if group is not None)).strip()


def _protect_cdata(text: str) -> tuple[str, list[str]]:
    """Replace CDATA sections by numbered tokens so their text cannot look like tags."""
    sections: list[str] = []

    def stash(match: re.Match[str]) -> str:
        sections.append(match.group(1))
        return f"\x00{len(sections) - 1}\x00"

    return _CDATA_RE.sub(stash, text.replace("\x00", "")), sections


def _restore(text: str, sections: list[str], *, verbatim: bool = False) -> str:
    """Undo :func:`_protect_cdata`.

    By default CDATA sections become their text and entities outside them are
    unescaped (a value); ``verbatim`` gives back the text as the model wrote it.
    """
    restored = []
    for index, part in enumerate(_TOKEN_RE.split(text)):
        if index % 2 == 0:
            restored.append(part if verbatim else html.unescape(part))
            continue
        section = sections[int(part)] if int(part) < len(sections) else ""
        restored.append(f"<![CDATA[{section}]]>" if verbatim else section)
    return "".join(restored)


def _unclosed(rest: str, sections: list[str], *, at_end: bool) -> ParseIssue:
    opening = _OPEN_RE.match(rest)
    name = _attribute_name(opening.group("attrs")) if opening else None
    message = ("Your tool call stops before </tool_call>; it was not executed." if at_end else
               "Your <tool_call> is not closed with </tool_call> before the next one starts; it "
               "was not executed.")
    raw = _restore(rest, sections, verbatim=True)
    return ParseIssue("truncated" if at_end else "malformed", message, raw=clip(raw),
                      tool_name=name)


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return f"<![CDATA[{value}]]>" if ("<" in value or "&" in value) else value
    return json.dumps(value, ensure_ascii=False)
