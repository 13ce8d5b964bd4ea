"""Lone surrogates in formula text get their own message (issue 22, finding 3)."""

from __future__ import annotations

import pytest

from srh_engine import parse
from srh_engine.errors import ParseError
from srh_engine.parser import _syntax_tree
from srh_engine.source import PreparedSource

CASES = {
    "high": ("x1*x2 + \ud800", "'\\ud800'", (1, 9)),
    "low_first": ("\udfff", "'\\udfff'", (1, 1)),
    "second_line": ("a*x\n + b\ud83d\ude00", "'\\ud83d'", (2, 5)),
    "in_equation": ("y = x\udc80", "'\\udc80'", (1, 6)),
}


@pytest.mark.parametrize(("text", "shown", "position"), CASES.values(), ids=CASES.keys())
def test_a_lone_surrogate_is_an_invalid_character(text: str, shown: str,
                                                  position: tuple[int, int]) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    message = str(caught.value)
    assert message.startswith(f"invalid character: formula contains an invalid character {shown}")
    assert "nested" not in message and "\ud800" not in message
    assert caught.value.construct == "invalid character"
    assert caught.value.position == position
    message.encode("utf-8")  # the message itself can be written anywhere


def test_the_parsers_unicode_errors_are_never_called_nesting() -> None:
    # prepare_source refuses surrogates first; should one reach ast.parse, the
    # message still names the character.
    prepared = PreparedSource("x\ud800", "x\ud800", 0, 0, 0, {})
    with pytest.raises(ParseError, match=r"invalid character '\\ud800'") as caught:
        _syntax_tree(prepared)
    assert caught.value.construct == "invalid character"


def test_valid_non_ascii_text_is_unchanged() -> None:
    with pytest.raises(ParseError, match="syntax"):
        parse("x + é€")  # a syntax error as before, not an invalid character
