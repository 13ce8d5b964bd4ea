from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srh_core.errors import SearchStateError
from srh_core.ranking import ExactFitRule, RankingPolicy, pareto_indices, rank_candidates
from srh_core.state import SearchRunState
from srh_core.types import CandidateRecord, ParentLink, ToolCall, ToolCallResult


def candidate(formula, node, mse, complexity, *, validation=None, key=None):
    metrics = {"train": {"mse": mse, "r2": 1 - mse}}
    if validation is not None:
        metrics["validation"] = {"mse": validation, "r2": 1 - validation}
    return CandidateRecord(formula, node, {"metrics": metrics, "complexity": complexity,
                                           "canonical_key": key or formula})


def test_ranking_prefers_validation_then_complexity_then_node():
    pool = [
        candidate("a", "n2", 0.1, 5, validation=0.3),
        candidate("b", "n1", 0.5, 4, validation=0.2),
        candidate("c", "n3", 0.2, 3, validation=0.2),
        candidate("d", "n0", 0.2, 3, validation=0.2),
    ]
    ranked = rank_candidates(pool, RankingPolicy())
    assert [c.formula for c in ranked] == ["d", "c", "b", "a"]


def test_larger_is_better_and_non_finite_never_ranked():
    pool = [candidate("a", "n", 0.5, 3), candidate("b", "n", 0.1, 3),
            candidate("nan", "n", math.nan, 1), candidate("inf", "n", math.inf, 1)]
    ranked = rank_candidates(pool, RankingPolicy("r2", larger_is_better=True))
    assert [c.formula for c in ranked] == ["b", "a"]


def test_duplicates_by_canonical_key_listed_once():
    pool = [candidate("x*y", "n1", 0.1, 3, key="k"), candidate("y*x", "n2", 0.1, 3, key="k")]
    assert [c.node_id for c in rank_candidates(pool, RankingPolicy())] == ["n1"]


def test_pareto_front_keeps_strictly_lower_complexity():
    ranked = rank_candidates([candidate("a", "n", 0.0, 9), candidate("b", "n", 0.1, 9),
                              candidate("c", "n", 0.2, 4), candidate("d", "n", 0.3, 5),
                              candidate("e", "n", 0.4, 1)], RankingPolicy())
    assert pareto_indices(ranked) == [0, 2, 4]


def test_exact_fit_rule_reads_train_metric():
    mse = ExactFitRule("mse", 0.0, False)
    assert mse.reached(candidate("a", "n", 0.0, 1, validation=0.5))
    assert not mse.reached(candidate("a", "n", 1e-30, 1))
    assert ExactFitRule("mse", 1e-20, False).reached(candidate("a", "n", 1e-30, 1))
    assert not ExactFitRule().reached(None)


def exact_up_to(r2: float, n_finite: int = 100) -> CandidateRecord:
    metrics = {"mse": 1e-30, "r2": r2, "n_samples": 100, "n_finite": n_finite}
    return CandidateRecord("x", "n", {"metrics": {"train": metrics}, "complexity": 1})


def test_default_exact_fit_rule_is_r2_rounding_to_one_on_every_row():
    rule = ExactFitRule()
    assert rule.reached(exact_up_to(1.0))
    assert not rule.reached(exact_up_to(1.0 - 1e-12))   # a near miss is not exact
    assert not rule.reached(exact_up_to(1.0, n_finite=99))  # nan on a train row
    assert not rule.reached(exact_up_to(math.nan))


def test_a_fit_with_as_many_numbers_as_rows_is_not_exact():
    def on_rows(formula: str, rows: int) -> CandidateRecord:
        metrics = {"mse": 0.0, "r2": 1.0, "n_samples": rows, "n_finite": rows}
        return CandidateRecord(formula, "n", {"metrics": {"train": metrics}, "complexity": 9})

    line = "0.25 + 1.5*x1 - 0.75*x2"  # three fitted numbers
    assert not ExactFitRule().reached(on_rows(line, 3))
    assert ExactFitRule().reached(on_rows(line, 4))
    assert ExactFitRule().reached(on_rows("x1**2 + 2*pi*x2", 2))  # structural numbers only


def test_push_candidate_is_idempotent_and_never_raises_on_nan(tmp_path):
    state = SearchRunState(tmp_path, "mse", False, run_id="run")
    assert state.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.1, 1))
    assert not state.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.1, 1))
    assert not state.push_candidate(candidate("y", "run:R1-C1-L1-K1", math.nan, 1))
    assert state.push_candidate(candidate("x", "run:R1-C2-L1-K1", 0.1, 1))
    assert len(state.ranked_candidates()) == 1
    lines = (tmp_path / "candidates.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_register_iteration_records_nodes_and_log(tmp_path):
    state = SearchRunState(tmp_path, "mse", False, run_id="run")
    parents = (ParentLink("run:R1-C1-L1-K2", "continuation"),)
    responses = [("hello", [ToolCall("evaluate", {"f": "x"})], {"role": "assistant"}),
                 ("no call", [], {})]
    results = [[ToolCallResult(False, {}, "Error: bad", {})], []]
    nodes = state.register_iteration(responses, results, parents, [{"role": "user"}], {}, 1, 2, 1)
    assert [n.node_id for n in nodes] == ["run:R1-C1-L2-K1", "run:R1-C1-L2-K2"]
    assert nodes[0].core["n_errors"] == 1 and nodes[1].core["n_tool_calls"] == 0
    assert nodes[1].detail["prompt_node"] == "run:R1-C1-L2-K1"
    assert state.register_iteration(responses, results, parents, [], {}, 1, 2, 1) == []
    assert len(SearchRunState.load_nodes(tmp_path)) == 2
    assert state.latest_coordinate.K == 2 and state.node_record("missing") is None


def test_result_written_and_status_validated(tmp_path):
    state = SearchRunState(tmp_path, "mse", False, run_id="run")
    state.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.0, 1))
    result = state.result("early_stopped", "done", stop_reason="exact fit")
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["best_candidate"] == 0 and saved["stop_reason"] == "exact fit"
    assert result.best.formula == "x"


def test_from_state_rewrites_logs_to_snapshot(tmp_path):
    state = SearchRunState(tmp_path, "mse", False, run_id="run")
    state.register_iteration([("a", [], {})], [[]], (), [], {}, 1, 1, 1)
    snapshot = state.save_snapshot({"branch": 1})
    state.register_iteration([("b", [], {})], [[]], (), [], {}, 1, 2, 1)  # after the snapshot
    resumed = SearchRunState.from_state(snapshot, save_path=tmp_path)
    assert resumed.node_count == 1 and len(SearchRunState.load_nodes(tmp_path)) == 1
    with pytest.raises(SearchStateError, match="version"):
        SearchRunState.from_state({"version": 99})


metric_values = st.one_of(st.floats(min_value=0, max_value=10, allow_nan=False),
                          st.just(math.nan), st.just(math.inf))
candidate_specs = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.integers(1, 4), metric_values,
              st.integers(1, 12), st.one_of(st.none(), metric_values)),
    max_size=30)


@settings(max_examples=60, deadline=None)
@given(specs=candidate_specs, larger=st.booleans())
def test_export_from_state_round_trip_preserves_ranking_and_front(specs, larger):
    state = SearchRunState(None, "mse", larger, run_id="run")
    for formula, node, mse, complexity, validation in specs:
        state.push_candidate(candidate(formula, f"run:R1-C1-L{node}-K1", mse, complexity,
                                       validation=validation))
    snapshot = json.loads(json.dumps(state.export_state(), allow_nan=False))
    again = SearchRunState.from_state(snapshot)
    assert [c.to_dict() for c in again.ranked_candidates()] == \
        [c.to_dict() for c in state.ranked_candidates()]
    assert again.pareto_indices() == state.pareto_indices()
    front = state.pareto_front()
    complexities = [c.complexity for c in front]
    assert complexities == sorted(complexities, reverse=True)
    assert len(set(complexities)) == len(complexities)
