"""ManualAPI reads typed responses from a stream and parses them like a model's."""

from __future__ import annotations

import io

import pytest

from srh_core.api import BaseAPI, ManualAPI
from srh_core.errors import ConfigurationError, ModelRequestError
from tests.support.sample_tools import SAMPLE_TOOLS


def test_reads_each_sample_until_a_dot_line():
    typed = io.StringIO('I will evaluate.\nCALL evaluate {"formula": "x0"}\n.\n'
                        "no tools this time\n.\n")
    shown = io.StringIO()
    api = ManualAPI(tool_list=SAMPLE_TOOLS, input_stream=typed, output_stream=shown)
    result = api([{"role": "system", "content": "Rules."}, {"role": "user", "content": "Go."}],
                 n=2)

    assert result.contents == ['I will evaluate.\nCALL evaluate {"formula": "x0"}',
                               "no tools this time"]
    assert [[c.name for c in calls] for calls in result.tool_calls] == [["evaluate"], []]
    assert result.usage["price"] == 0.0 and result.return_value.provider == "manual"
    prompt = shown.getvalue()
    assert "--- [system]\nRules.\n\n## Tools" in prompt and "--- [user]\nGo." in prompt
    assert "Response 2/2" in prompt


def test_end_of_input_accepts_typed_text_but_not_nothing():
    assert ManualAPI(input_stream=io.StringIO("last words"),
                     output_stream=io.StringIO())("x").contents == ["last words"]
    with pytest.raises(ModelRequestError, match="ended before response 1"):
        ManualAPI(input_stream=io.StringIO(""), output_stream=io.StringIO())("x").result()


def test_manual_requires_a_prompt_based_parser():
    with pytest.raises(ConfigurationError, match="prompt-based"):
        ManualAPI(tool_parser_name="openai")


def test_manual_from_factory_with_json_mode():
    typed = io.StringIO('```json\n{"name": "submit", "arguments": {"formula": "x0"}}\n```\n.\n')
    api = BaseAPI.create("manual", tool_list=SAMPLE_TOOLS, tool_parser_name="json",
                         input_stream=typed, output_stream=io.StringIO())
    assert api("x").tool_calls[0][0].params == {"formula": "x0"}


def test_a_typed_response_that_never_ends_is_refused(monkeypatch: pytest.MonkeyPatch):
    from srh_core.api import manual

    monkeypatch.setattr(manual, "MAX_TYPED_RESPONSE_CHARS", 100)
    typed = io.StringIO("x" * 60 + "\n" + "y" * 60)  # /dev/zero as stdin: no end, no newline
    with pytest.raises(ModelRequestError, match="Response 1 goes on past 100 characters"):
        ManualAPI(input_stream=typed, output_stream=io.StringIO())("x").result()
    exact = io.StringIO("x" * 98 + "\n.\n")
    assert ManualAPI(input_stream=exact, output_stream=io.StringIO())("x").contents == ["x" * 98]
