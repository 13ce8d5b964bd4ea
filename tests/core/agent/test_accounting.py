"""Run accounting: response.jsonl, the totals in result.json, prices, and the spend budgets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tests.workers.cluster_plugins  # noqa: F401 - registers the test-metered provider
from srh_core.agent import SearchSettings, SRAgent
from srh_core.agent.accounting import step_usage
from srh_core.agent.sragent import recorded_agent_class
from srh_core.api.response import ModelResponse, Usage
from srh_core.cli import main
from srh_core.embedded.runner import resume_search
from srh_core.errors import ConfigurationError
from srh_core.records import RunTotals
from srh_core.types import SearchResult
from tests.support.openai_payloads import chat_choice, chat_completion, tool_call, usage
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"
#: USD per million tokens, so one test-metered request (100 in, 40 of them cached, 20 out)
#: costs (60 * 1000 + 40 * 100 + 20 * 2000) / 1e6 = 0.104.
METERED_PRICES = {"test-metered:metered-1": {"input": 1000.0, "output": 2000.0,
                                             "cached_input": 100.0}}
METERED_STEP_COST = 0.104


def lines(run_dir: Path, name: str = "response.jsonl") -> list[dict]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def data() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 100), rng.uniform(1, 5, 100)
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


def test_response_lines_and_totals_through_the_openai_client(openai_server, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    call = tool_call("evaluate_formula", {"f": "x1*x2"}, "c1")
    openai_server.script(  # step 1: one n=2 request; step 2 likewise, another usage
        Reply.json(chat_completion([chat_choice(None, tool_calls=[call], index=0),
                                    chat_choice("thinking", index=1)],
                                   usage_block=usage(1000, 200, cached=600)), path=CHAT),
        Reply.json(chat_completion([chat_choice("a", index=0), chat_choice("b", index=1)],
                                   usage_block=usage(3000, 100)), path=CHAT))
    run_dir = tmp_path / "run"
    prices = {"openai:test-model": {"input": 2.0, "output": 8.0, "cached_input": 0.5}}
    agent = SRAgent(llm_provider="openai", llm_model="test-model",
                    base_url=openai_server.base_url, max_refinement_depth=2,
                    local_sample_size=2, early_stop=False, run_id="acct",
                    save_path=str(run_dir), prices=prices)
    result = SearchResult.from_dict(agent.run(*data(), "y"))
    step_one = (400 * 2.0 + 600 * 0.5 + 200 * 8.0) / 1e6
    step_two = (3000 * 2.0 + 100 * 8.0) / 1e6
    response = lines(run_dir)
    assert [(r["L"], r["K"], r["input_tokens"], r["output_tokens"], r["cached_tokens"],
             r["billed_with"]) for r in response] == [
        (1, 1, 1000, 200, 600, 1), (1, 2, 0, 0, 0, 1), (2, 1, 3000, 100, 0, 1),
        (2, 2, 0, 0, 0, 1)]
    assert response[0]["price"] == pytest.approx(step_one) and response[1]["price"] == 0.0
    assert {(r["provider"], r["model"]) for r in response} == {("openai", "test-model")}
    assert all(r["latency_s"] > 0 for r in response)
    assert response[0]["node_id"] == "acct:R1-C1-L1-K1"
    totals = result.totals
    assert (totals["requests"], totals["responses"], totals["input_tokens"],
            totals["output_tokens"], totals["cached_tokens"], totals["tokens"]) == (
        2, 4, 4000, 300, 600, 4300)
    assert totals["cost"] == pytest.approx(step_one + step_two) and totals["unpriced"] == 0
    assert totals["cost"] == pytest.approx(sum(r["price"] for r in response))
    assert totals["model_seconds"] > 0 and totals["tool_seconds"] > 0
    assert totals["wall_seconds"] >= totals["model_seconds"]
    assert json.loads((run_dir / "result.json").read_text())["totals"] == totals
    nodes = {node["node_label"]: node["detail"]["usage"]
             for node in agent.store.records(include_detail=True)}
    assert nodes["R1-C1-L1-K2"]["sample"] == {"K": 2, "input_tokens": 0, "output_tokens": 0,
                                              "cached_tokens": 0, "price": 0.0, "billed_with": 1}
    assert "samples" not in nodes["R1-C1-L1-K1"] and nodes["R1-C1-L1-K1"]["prompt_tokens"] == 1000


def test_a_model_without_a_price_is_counted_in_tokens_only():
    responses = [ModelResponse("a", sample=1), ModelResponse("b", sample=2,
                                                             usage=Usage(7, 3, 10))]
    usage_dict = step_usage(Usage(20, 8, 28).to_dict(), responses, provider="openai",
                            model="unlisted-model", latency=0.5)
    assert usage_dict["price"] is None
    assert [(s["K"], s["input_tokens"], s["output_tokens"], s["billed_with"])
            for s in usage_dict["samples"]] == [(1, 13, 5, 1), (2, 7, 3, 2)]
    adapter_priced = step_usage(Usage(20, 8, 28, price=0.5).to_dict(), [
        ModelResponse("a", sample=1), ModelResponse("b", sample=2, usage=Usage(7, 3, 10,
                                                                             price=0.2))],
        provider="openai", model="unlisted-model", latency=0.5)  # an adapter's own price= only
    assert [s["price"] for s in adapter_priced["samples"]] == [pytest.approx(0.3), 0.2]
    assert adapter_priced["price"] == pytest.approx(0.5)
    listed = step_usage(Usage(1_000_000, 0, 1_000_000).to_dict(), responses[:1],
                        provider="openai", model="gpt-4o-mini", latency=0.1)
    assert listed["price"] == pytest.approx(0.15)  # the built-in table


def test_price_overrides_are_validated_in_settings():
    with pytest.raises(ConfigurationError, match="prices.*output"):
        SearchSettings.build(prices={"openai:x": {"input": 1.0}})
    with pytest.raises(ConfigurationError, match="max_cost"):
        SearchSettings.build(max_cost=-1.0)


def metered(tmp_path: Path, **values) -> SRAgent:
    return SRAgent(llm_provider="test-metered", tool_parser="text", max_refinement_depth=6,
                   early_stop=False, run_id="metered", save_path=str(tmp_path / "run"),
                   prices=METERED_PRICES, **values)


def test_cost_budget_stops_the_run_resumably_and_a_higher_budget_continues(tmp_path):
    # 0.104 per step: steps 1-3 open under 0.25 (0, 0.104, 0.208); step 4 does not.
    result = SearchResult.from_dict(metered(tmp_path, max_cost=0.25).run(*data(), "y"))
    assert result.status == "interrupted" and "max_cost $0.25" in result.stop_reason
    assert result.totals["requests"] == 3
    assert result.totals["cost"] == pytest.approx(3 * METERED_STEP_COST)
    run_dir = tmp_path / "run"
    assert len(lines(run_dir)) == 3

    resumed = resume_search(run_dir, recorded_agent_class(run_dir), max_cost=1.0)
    assert resumed.status == "completed", resumed.stop_reason
    assert [(r["L"], r["K"]) for r in lines(run_dir)] == [(L, 1) for L in range(1, 7)]
    assert resumed.totals["requests"] == 6 and resumed.totals["tokens"] == 6 * 120
    assert resumed.totals["cost"] == pytest.approx(6 * METERED_STEP_COST)
    assert resumed.totals["wall_seconds"] > result.totals["wall_seconds"]


def test_token_budget_from_the_cli_and_show_prints_the_spend(tmp_path, capsys):
    run_dir = tmp_path / "cli"
    code = main(["run", "--equation", "x1*x2", "--samples", "50", "--llm", "test-metered",
                 "--tool-parser", "text", "-L", "5", "--no-early-stop", "--max-tokens", "240",
                 "--out", str(run_dir)])
    assert code == 0
    shown = capsys.readouterr().out
    assert "Status: interrupted (budget (max_tokens 240) reached" in shown
    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    assert "Spend: 200 tokens in (80 cached), 40 out" in shown  # two steps of 120 tokens
    code = main(["resume", str(run_dir), "--max-tokens", "360", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["totals"]["tokens"] == 360


def test_totals_add_and_round_trip():
    one = RunTotals(requests=1, input_tokens=5, output_tokens=2, cost=0.5, model_seconds=1.0)
    both = one + one
    assert both.tokens == 14 and both.cost == 1.0
    assert RunTotals.from_dict(both.to_dict()) == both
