"""Exact SEARCH/REPLACE blocks: the edit format of ``edit_skill`` (and of tool edits).

A patch is one or more blocks::

    <<<<<<< SEARCH
    text copied exactly from the file
    =======
    the replacement
    >>>>>>> REPLACE

Blocks apply in order, each to the text the previous ones left; each SEARCH
text must occur exactly once there (an empty SEARCH is refused). Anything
between blocks is ignored. The whole patch applies or nothing does: a block
that does not match reports which block and why, and the file stays as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from srh_core.skills.errors import SkillError

_BLOCK = re.compile(r"^<<<<<<< SEARCH[ \t]*\n(.*?)^=======[ \t]*\n(.*?)^>>>>>>> REPLACE[ \t]*$",
                    re.DOTALL | re.MULTILINE)
#: The most blocks one patch may hold.
MAX_BLOCKS = 50


@dataclass(frozen=True, slots=True)
class Block:
    search: str
    replace: str


def parse_patch(patch: str) -> list[Block]:
    """The blocks of ``patch``, in order.

    Raises:
        SkillError: No block, too many, an empty SEARCH, or a marker outside a block.
    """
    if not isinstance(patch, str) or not patch.strip():
        raise SkillError("The patch is empty; give one or more blocks: '<<<<<<< SEARCH', the "
                         "exact old text, '=======', the new text, '>>>>>>> REPLACE'.")
    text = patch.replace("\r\n", "\n")
    if not text.endswith("\n"):
        text += "\n"
    blocks = [Block(_without_last_newline(m.group(1)), _without_last_newline(m.group(2)))
              for m in _BLOCK.finditer(text)]
    leftover = _BLOCK.sub("", text)
    for marker in ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"):
        if re.search(rf"^{re.escape(marker)}[ \t]*$", leftover, re.MULTILINE):
            raise SkillError(f"The patch has a {marker!r} line outside a complete block; each "
                             "block is SEARCH marker, old text, '=======', new text, REPLACE "
                             "marker, each marker on its own line.")
    if not blocks:
        raise SkillError("The patch has no '<<<<<<< SEARCH' ... '>>>>>>> REPLACE' block.")
    if len(blocks) > MAX_BLOCKS:
        raise SkillError(f"The patch has {len(blocks)} blocks; at most {MAX_BLOCKS}.")
    for number, block in enumerate(blocks, 1):
        if not block.search.strip():
            raise SkillError(f"Block {number} has an empty SEARCH text; copy the lines to "
                             "replace from the file.")
    return blocks


def apply_patch(text: str, patch: str, shown: str) -> tuple[str, int]:
    """``text`` with every block of ``patch`` applied, and the number of blocks.

    Args:
        text: The file's text.
        patch: The blocks.
        shown: The file's name in messages.

    Raises:
        SkillError: The patch is malformed, or a SEARCH text is missing or not unique
            (nothing is applied).
    """
    blocks = parse_patch(patch)
    result = text
    for number, block in enumerate(blocks, 1):
        count = result.count(block.search)
        if count != 1:
            head = block.search.strip().splitlines()[0][:80]
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise SkillError(f"Block {number} of {len(blocks)}: its SEARCH text (starting "
                             f"{head!r}) {where} in {shown}"
                             + (" after the blocks before it" if number > 1 else "")
                             + "; copy it exactly (spaces and line breaks too), with enough "
                             "lines to be unique. Nothing was changed.", path=shown)
        result = result.replace(block.search, block.replace, 1)
    return result, len(blocks)


def _without_last_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text
