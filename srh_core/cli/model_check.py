"""``srh model-test``: does a model endpoint answer, and call a tool the way the search needs?

One request offers the model a single tool, ``report_model_test``
(:class:`~srh_core.tools.model_tools.ModelTestTool`), and asks it to call the
tool with a fresh random value. Exit 0 when the model called it with exactly
that value, 1 when it answered but not so (the output says what it did
instead), 2 for bad usage or an endpoint that cannot be reached. The adapter
is built as a run's is (:func:`srh_core.api.endpoints.build_api`).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from typing import Any

TOOL_NAME = "report_model_test"


def register(subparsers: Any) -> None:
    """Add ``srh model-test``."""
    parser = subparsers.add_parser(
        "model-test", help="check that a model answers and calls tools",
        description="Ask the model to call report_model_test with a random value: exit 0 when "
                    "it does, exactly; 1 when it answers otherwise.")
    parser.add_argument("--llm", required=True, help="PROVIDER:MODEL")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint URL")
    parser.add_argument("--tool-parser", choices=("openai", "json", "text", "xml"),
                        default="openai", help="how the tool call is exchanged (default openai)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(handler=handle_model_test)


def handle_model_test(args: argparse.Namespace) -> int:
    from srh_core.agent.settings import SearchSettings

    provider, _, model = args.llm.partition(":")
    settings = SearchSettings.build(llm_provider=provider, llm_model=model or None,
                                    base_url=args.base_url, tool_parser=args.tool_parser)
    outcome = model_test(settings)
    if args.json:
        sys.stdout.write(json.dumps(outcome) + "\n")
    else:
        verdict = "passed" if outcome["passed"] else "FAILED"
        print(f"model test {verdict}: {outcome['provider']}:{outcome['model']} "
              f"{outcome['what']} ({outcome['seconds']:.2f} s)")
    return 0 if outcome["passed"] else 1


def model_test(settings: Any, access: Any = None) -> dict[str, Any]:
    """One request asking for a ``report_model_test`` call with a fresh value; the outcome.

    Returns:
        ``passed``, ``what`` (what the model did, in words), ``expected``, ``answer``,
        ``provider``, ``model`` and ``seconds``.
    """
    from srh_core.api.endpoints import build_api
    from srh_core.tools.base import BaseTool

    tool = BaseTool.create(TOOL_NAME)
    api = build_api(settings, settings.llm_provider, settings.llm_model, access,
                    tool_list=[tool.metadata], tool_parser_name=settings.tool_parser)
    expected = f"SRH-{secrets.token_hex(3).upper()}"
    messages = [
        {"role": "system", "content": "You are checking that tool calls work."},
        {"role": "user", "content": f"Call the tool {TOOL_NAME} with answer exactly "
                                    f"{expected!r}. Do not reply with text only."}]
    started = time.monotonic()
    summary = api(messages, n=1, max_tokens=min(settings.llm_max_tokens, 1024)).result()
    seconds = time.monotonic() - started
    response = summary.responses[0] if summary.responses else None
    calls = [] if response is None else [c for c in response.tool_calls if c.name == TOOL_NAME]
    answer = None
    if calls:
        result = tool(**dict(calls[0].params))
        answer = result.result.get("answer") if result.ok else None
    what = describe(response, calls, answer, expected)
    return {"passed": answer == expected, "what": what, "expected": expected,
            "answer": answer, "provider": summary.provider, "model": summary.model,
            "seconds": round(seconds, 3)}


def describe(response: Any, calls: list[Any], answer: str | None, expected: str) -> str:
    if response is None:
        return "returned no response"
    if calls and answer == expected:
        return f"called {TOOL_NAME} with the requested value"
    if calls:
        return f"called {TOOL_NAME} with {answer!r} instead of {expected!r}"
    other = [call.name for call in response.tool_calls]
    if other:
        return f"called {', '.join(other)} instead of {TOOL_NAME}"
    text = " ".join(response.content.split())[:120]
    return f"answered without a tool call: {text!r}"
