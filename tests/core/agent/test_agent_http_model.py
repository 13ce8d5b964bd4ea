"""The agent against the real openai client and a scripted local HTTP endpoint."""

from __future__ import annotations

import json

import numpy as np

from srh_core.agent import SRAgent
from srh_core.types import SearchResult
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"


def reply(**kwargs) -> Reply:
    return Reply.json(chat_completion(**kwargs), path=CHAT)


def test_native_calls_through_http_cover_every_failure(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(
        reply(content="Let me think about the data first."),                      # no call
        reply(content=None, tool_calls=[tool_call("evaluate_formula", '{"f": "x1*x2**2"', "c1")]),
        reply(content=None, tool_calls=[tool_call("evaluate_formula", {"f": "x1*x9"}, "c2")]),
        reply(content="I will submit.", finish_reason="length",                   # truncated
              tool_calls=[tool_call("evaluate_formula", {"f": "x1*x2**2"}, "c3")]),
        reply(content=None, tool_calls=[tool_call("submit_formula", {"f": "x1*x2**2"}, "c4")]),
    )
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 200), rng.uniform(1, 5, 200)
    agent = SRAgent(llm_provider="openai", llm_model="test-model",
                    base_url=openai_server.base_url, tool_parser="openai",
                    max_refinement_depth=5, early_stop=False, run_id="http",
                    save_path=str(tmp_path / "run"))
    result = SearchResult.from_dict(agent.run({"x1": x1, "x2": x2}, {"y": x1 * x2**2}, "y"))
    openai_server.assert_script_consumed()
    assert result.status == "completed", result.stop_reason
    assert agent.store.node_count == 5
    assert result.best.formula == "x1*x2**2"
    bodies = openai_server.bodies()
    assert bodies[0]["tools"] and bodies[0]["messages"][0]["role"] == "system"
    second = json.dumps(bodies[2]["messages"])
    assert "not run" in second or "could not" in second     # the malformed call, fed back
    third = bodies[3]["messages"]
    tool_messages = [m for m in third if m["role"] == "tool"]
    assert tool_messages and "x9" in tool_messages[-1]["content"]
    fourth = json.dumps(bodies[4]["messages"])
    assert "cut by the length limit" in fourth
    nodes = {n["node_id"]: n for n in agent.store.records(include_detail=True)}
    assert nodes["http:R1-C1-L1-K1"]["core"]["n_tool_calls"] == 0
