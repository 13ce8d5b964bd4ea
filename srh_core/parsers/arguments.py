"""Decoding a call's arguments, shared by every parser.

Arguments arrive as a mapping, as JSON text (native function calling always
sends text; weak models sometimes put a JSON string inside their JSON), or
not at all. The result is either a ``dict`` or a :class:`ParseIssue`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from srh_core.parsers.base import ParseIssue, clip
from srh_core.parsers.lenient_json import loads_lenient

_NAME_RE = re.compile(r"[\"']?(?:name|tool|tool_name)[\"']?\s*:\s*[\"']([^\"'\n]{1,100})[\"']")


def decode_arguments(
    value: Any, *, tool_name: str, raw: str, call_id: str | None = None
) -> dict[str, Any] | ParseIssue:
    """Turn a call's ``arguments`` value into a dict.

    Args:
        value: A mapping, JSON text, or None (no arguments).
        tool_name: The tool the call names (for the issue message).
        raw: The call's raw text, kept on the issue.
        call_id: The provider's call id, kept on the issue.

    Returns:
        The arguments, or an issue saying why they cannot be used.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = loads_lenient(value)
        except ValueError as error:
            return ParseIssue(
                "invalid_json",
                f"The arguments of your call to {tool_name!r} are not valid JSON ({error}); "
                "the call was not executed.",
                raw=clip(raw), tool_name=tool_name, call_id=call_id,
            )
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    return ParseIssue(
        "invalid_arguments",
        f"The arguments of your call to {tool_name!r} must be a JSON object of name: value "
        f"pairs; got a {type(value).__name__} instead.",
        raw=clip(raw), tool_name=tool_name, call_id=call_id,
    )


def guess_tool_name(text: str) -> str | None:
    """The tool name an unreadable call seems to name, if any (for messages only)."""
    match = _NAME_RE.search(text[:500])
    return match.group(1) if match else None
