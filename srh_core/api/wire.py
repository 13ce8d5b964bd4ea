"""Provider replies as plain data, before any tool-call parsing.

The wire decoders (Chat Completions, Responses API) read plain dicts (SDK
objects are converted with :func:`plain`), so the same code handles the
official client's objects and raw JSON, and unknown provider fields
(``reasoning_content``...) survive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from srh_core.api.response import Usage


@dataclass(slots=True)
class RawSample:
    """One choice as it came off the wire.

    Attributes:
        content: Reply text.
        native_calls: Provider-native tool calls (Chat or Responses shape).
        finish_reason: Normalised to Chat Completions names (``length`` = cut).
        reasoning: Hidden-reasoning text, when the provider sends it.
    """

    content: str = ""
    native_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    reasoning: str = ""


@dataclass(slots=True)
class RawReply:
    """One HTTP reply: its samples (by choice index) and its usage.

    Attributes:
        samples: Samples ordered by choice index.
        usage: Token usage of this reply (unpriced).
        error: A failure the provider reported inside a 200 reply, if any.
    """

    samples: list[RawSample]
    usage: Usage
    error: str | None = None


def plain(value: Any) -> Any:
    """An SDK object (pydantic model) as a JSON-shaped dict; other values unchanged."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, Mapping):
        return to_dict(mode="json", warnings=False)
    return value


def as_int(value: Any) -> int:
    """An integer count from a provider field (None and junk count as 0)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (providers omit fields)."""
    return value if isinstance(value, Mapping) else {}


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content
                       if isinstance(part, Mapping))
    return ""
