"""The small YAML-like front matter of a ``SKILL.md`` file, parsed without PyYAML.

Accepted form (the subset skills use)::

    ---
    name: discover-symbolic-laws
    description: One line, or continued on
      more indented lines; "quoted" or 'quoted' values are unquoted.
    summary: >
      Block values after ">" are folded into one line,
    notes: |
      after "|" they keep their line breaks.
    ---
    Markdown body ...

Keys are ``[A-Za-z_][A-Za-z0-9_-]*``; ``#`` lines are comments. Anything else
(a missing fence, a line without ``key:``, a repeated key) is a
:class:`FrontMatterError` naming the line.
"""

from __future__ import annotations

import re

FENCE = "---"
KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$")
BLOCK_MARKERS = {">": " ", ">-": " ", "|": "\n", "|-": "\n"}


class FrontMatterError(ValueError):
    """Malformed front matter; the message names the line."""


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Return ``(fields, body)`` of a skill file.

    Raises:
        FrontMatterError: The file does not start with a well-formed front matter block.
    """
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise FrontMatterError("SKILL.md must start with a '---' line opening the front matter.")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise FrontMatterError("The front matter has no closing '---' line.") from None
    return parse_fields(lines[1:end]), "\n".join(lines[end + 1:]).strip("\n")


def parse_fields(lines: list[str]) -> dict[str, str]:
    """Parse ``key: value`` lines with indented continuations (see the module docstring)."""
    fields: dict[str, list[str]] = {}
    joiners: dict[str, str] = {}
    current: str | None = None
    for number, line in enumerate(lines, start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t" and current is not None:
            fields[current].append(line.strip())
            continue
        match = KEY_LINE.match(line)
        if match is None:
            raise FrontMatterError(f"Front matter line {number} is not 'key: value': {line!r:.80}")
        current, value = match.group(1), match.group(2).strip()
        if current in fields:
            raise FrontMatterError(f"Front matter line {number} repeats the key {current!r}.")
        joiners[current] = BLOCK_MARKERS.get(value, " ")
        fields[current] = [] if value in BLOCK_MARKERS else [value]
    return {key: _unquote(joiners[key].join(parts)) for key, parts in fields.items()}


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
