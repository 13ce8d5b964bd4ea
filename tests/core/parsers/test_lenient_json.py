from __future__ import annotations

import pytest

from srh_core.parsers.lenient_json import (
    MAX_DECODE_CHARS,
    balanced_span,
    iter_json_spans,
    loads_lenient,
    looks_like_call,
    strip_trailing_commas,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [('{"a": 1}', {"a": 1}), ('{"a": [1, 2,],}', {"a": [1, 2]}),
     ("{'a': 'it''s'}", {"a": "its"}), ("{'a': True, 'b': None}", {"a": True, "b": None}),
     ("{'a': true, 'b': null, 'c': false}", {"a": True, "b": None, "c": False}),
     ("[(1, 2)]", [[1, 2]]), ('{"s": "a, }"}', {"s": "a, }"})],
)
def test_loads_lenient(text, value):
    assert loads_lenient(text) == value


@pytest.mark.parametrize("text", ["{a: 1}", "{1, 2}", "{'a': b'x'}", "{'a': 1j}", "[" * 5000,
                                  "{" + "9" * 5000 + ": 1}", "x" * (MAX_DECODE_CHARS + 1)])
def test_loads_lenient_rejects_with_value_error(text):
    with pytest.raises(ValueError):
        loads_lenient(text)


def test_strip_trailing_commas_leaves_strings_alone():
    assert strip_trailing_commas('{"a": ",]", "b": [1,],}') == '{"a": ",]", "b": [1]}'


def test_balanced_span_handles_strings_and_apostrophes():
    text = "{\"a\": \"}\", 'b': '{'} tail"
    span = balanced_span(text, 0)
    assert span is not None and span.closed and span.text == "{\"a\": \"}\", 'b': '{'}"
    prose = "{it's fine}"
    assert balanced_span(prose, 0).text == prose
    assert not balanced_span('{"a": [1, 2', 0).closed


def test_iter_json_spans_skips_prose_braces_and_stops_at_truncated_call():
    text = 'a { stray, then {"x": 1} and [2] and {"name": "f", "arguments": {'
    spans = list(iter_json_spans(text))
    assert [s.text for s in spans[:2]] == ['{"x": 1}', "[2]"]
    assert not spans[2].closed and looks_like_call(spans[2].text)
