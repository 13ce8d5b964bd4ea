from __future__ import annotations

import threading
from typing import Any, Literal

import pytest

from srh_core.errors import ToolError, ToolRunAbort
from srh_core.tools.base import BaseTool
from srh_core.tools.schema import split_docstring


class EchoTool(BaseTool):
    def execute(
        self,
        text: str,
        times: int = 1,
        scale: float | None = None,
        mode: Literal["upper", "lower"] = "lower",
        tags: list[str] | None = None,
        pair: tuple[int, int] = (1, 2),
        options: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        """Repeat a text.

        Use it to test the tool boundary.

        Args:
            text: The text to repeat.
            times: How many times; a positive integer,
                continued on a second line.
            scale: Optional factor.
            mode: Letter case.
            tags: Labels.
            pair: Two integers.
            options: Named numbers.

        Returns:
            The repeated text.
        """
        if times < 1:
            raise ValueError(f"times must be >= 1; got {times}")
        if text == "abort":
            raise ToolRunAbort("stop")
        out = text * times
        return {"text": out.upper() if mode == "upper" else out, "scale": scale, "tags": tags}


BaseTool.register("test_echo")(EchoTool)


def test_metadata_inferred_from_signature_and_docstring():
    meta = EchoTool.metadata
    assert meta.name == "test_echo"
    assert meta.description == "Repeat a text.\n\nUse it to test the tool boundary."
    props = meta.parameters["properties"]
    assert meta.parameters["required"] == ["text"]
    assert props["text"] == {"type": "string", "description": "The text to repeat."}
    assert props["times"]["description"] == (
        "How many times; a positive integer, continued on a second line.")
    assert props["times"]["default"] == 1
    assert props["scale"]["type"] == "number" and props["scale"]["nullable"] is True
    assert props["mode"]["enum"] == ["upper", "lower"]
    assert props["tags"]["items"] == {"type": "string"}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "integer"}]
    assert props["options"]["additionalProperties"] == {"type": "number"}
    assert EchoTool.to_dict()["function"]["name"] == "test_echo"


def test_explicit_metadata_wins():
    from srh_core.types import ToolMetadata

    @BaseTool.register("test_explicit")
    class Explicit(BaseTool):
        metadata = ToolMetadata("ignored", description="Custom.")

        def execute(self, x: int) -> dict[str, Any]:
            """Inferred.

            Args:
                x: A number.
            """
            return {"x": x}

    assert Explicit.metadata.description == "Custom."
    assert Explicit.metadata.parameters["properties"]["x"]["type"] == "integer"


def test_unsupported_hint_fails_at_registration():
    class Bad(BaseTool):
        def execute(self, callback: threading.Event) -> dict[str, Any]:
            return {}

    with pytest.raises(ToolError, match="callback"):
        BaseTool.register("test_bad")(Bad)


def test_duplicate_name_rejected():
    class Other(BaseTool):
        def execute(self) -> dict[str, Any]:
            return {}

    with pytest.raises(ToolError, match="already registered"):
        BaseTool.register("test_echo")(Other)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"text": "ab", "times": "2"}, "abab"),
        ({"text": "ab", "times": 2.0, "mode": "upper"}, "ABAB"),
        ({"text": 7}, "7"),
    ],
    ids=["string-int", "float-int-enum", "number-as-string"],
)
def test_call_coerces_obvious_mistakes(params, expected):
    result = EchoTool()(**params)
    assert result.ok, result.result_str
    assert result.result["text"] == expected
    assert result.meta_data["elapsed_s"] >= 0 and result.meta_data["tool"] == "test_echo"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "Missing required argument(s) 'text'"),
        ({"text": "a", "tims": 2}, "Did you mean 'times'?"),
        ({"text": "a", "times": "many"}, "must be an integer"),
        ({"text": "a", "mode": "title"}, "must be one of ['upper', 'lower']"),
        ({"text": "a", "times": 0}, "times must be >= 1"),
        ({"text": "a", "options": "not json"}, "must be an object"),
    ],
    ids=["missing", "unknown", "bad-int", "bad-enum", "tool-error", "bad-object"],
)
def test_call_reports_bad_arguments_as_ok_false(params, message):
    result = EchoTool()(**params)
    assert not result.ok
    assert message in result.result_str
    assert "text" in result.result_str or "tool" in result.result_str


def test_tool_run_abort_propagates_and_cancel_aborts():
    with pytest.raises(ToolRunAbort):
        EchoTool()(text="abort")
    tool = EchoTool()
    tool.cancel()
    with pytest.raises(ToolRunAbort, match="cancelled"):
        tool(text="a")


def test_result_str_is_bounded_but_result_complete():
    result = EchoTool()(text="x" * 10, times=2000)
    assert len(result.result["text"]) == 20000
    assert len(result.result_str) <= EchoTool.result_str_limit
    assert "truncated" in result.result_str


def test_unknown_tool_has_did_you_mean():
    with pytest.raises(ToolError, match="Did you mean 'test_echo'"):
        BaseTool.get_class("test_ecko")


def test_docstring_without_args_section():
    def f():
        """Only text."""

    assert split_docstring(f) == ("Only text.", {})


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("`x**2`", "x**2"), ("$x + 1$", "x + 1"), ("np.sin(x)", "sin(x)"),
     ("```\nx\n```", "x")],
    ids=["backticks", "dollars", "np-prefix", "fence"],
)
def test_normalize_formula(raw, clean):
    assert BaseTool.normalize_formula(raw) == clean
