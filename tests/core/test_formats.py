"""Round trips: the real writers' text, read back by the offline proposer.

Each test runs the module that writes a line (the prompt builders, the tools,
the structured-data roles) and reads its output with the proposer's reader,
so rewording a prompt or a tool's text without :mod:`srh_core.formats`
fails here instead of silently weakening the proposer.
"""

from __future__ import annotations

import numpy as np

from srh_core import AgentContext, BaseTool
from srh_core.agent import prompts
from srh_core.api.offline.reader import read_conversation
from srh_core.api.offline.screening import (
    PARTIAL_MARK,
    all_feature_names,
    read_partial_screen,
    read_screening,
)
from srh_core.api.offline.search_step import seconds_left
from srh_core.api.offline.structured import read_structure
from srh_core.context.structured import StructuredData
from srh_core.parsers import BaseParser
from srh_core.types import CandidateRecord, ToolCall

RNG = np.random.default_rng(0)
X = {"m": RNG.uniform(1, 5, 400), "v": RNG.uniform(-2, 3, 400), "noise": RNG.uniform(0, 1, 400)}
Y = 0.5 * X["m"] * X["v"] ** 2 + 1.0
PARSER = BaseParser.create("json")


def task(features=X, target="E", values=Y, descriptions=None) -> dict[str, str]:
    text = prompts.user_prompt("Find E.", features, target, values, descriptions or {}, [], "mse")
    return {"role": "user", "content": text}


def tool_messages(*calls: ToolCall, data=None) -> list[dict[str, str]]:
    context = AgentContext(args={"validation_fraction": 0.2},
                           data={**(data or X), "E": Y}, target="E")
    results = [BaseTool.create(call.name, context)(**call.params) for call in calls]
    assert all(result.ok for result in results), [r.result_str for r in results]
    return PARSER.format_tool_result_messages(list(calls), results)


def test_the_task_prompt_gives_target_and_feature_ranges():
    view = read_conversation([task()], PARSER)
    assert view.target.name == "E"
    assert (view.target.low, view.target.high) == (float(f"{Y.min():.4g}"),
                                                    float(f"{Y.max():.4g}"))
    assert view.feature_names == ["m", "v", "noise"]
    v = view.feature("v")
    assert v.low == float(f"{X['v'].min():.4g}") and v.high == float(f"{X['v'].max():.4g}")
    assert view.feature("m").positive and not v.positive


def test_the_task_prompt_gives_the_operators_maxsize_and_guesses():
    from srh_core.agent.settings import SearchSettings
    from srh_core.api.offline.search_step import search_move

    settings = SearchSettings.build(binary_operators=["+", "*", "^"], unary_operators=["sin"],
                                    maxsize=11, guesses=['param("a")*m*v**2', "m + v"])
    text = prompts.user_prompt("Find E.", X, "E", Y, {}, [], "mse",
                               prompts.limit_lines(settings))
    view = read_conversation([{"role": "user", "content": text}], PARSER)
    assert view.operators == ("+", "*", "^", "sin") and view.maxsize == 11
    assert view.guesses == ['param("a")*m*v**2', "m + v"]
    plain = read_conversation([task()], PARSER)
    assert (plain.operators, plain.maxsize, plain.guesses) == (None, None, [])
    view.step = 2
    move = search_move(view, [])
    assert move.params["operators"] == ["+", "*", "sin", "square", "cube", "sqrt"]
    assert move.params["max_complexity"] == 11


def test_features_beyond_the_listed_ones_are_named():
    many = {f"x{i}": RNG.uniform(1, 2, 10) for i in range(prompts.MAX_VARIABLES_LISTED + 5)}
    message = task(features=many, values=RNG.uniform(1, 2, 10))
    view = read_conversation([message], PARSER)
    assert len(view.features) == prompts.MAX_VARIABLES_LISTED
    assert all_feature_names([message], view) == list(many)


def test_the_progress_message_gives_step_branch_and_front():
    records = [CandidateRecord(formula, f"run:R1-C1-L1-K{k}", {
        "metrics": {"train": {"mse": mse}, "validation": {"mse": mse * 2}},
        "complexity": complexity}) for k, (formula, mse, complexity) in enumerate(
            [("0.5*m*v**2 + 1", 1.5e-30, 9), ("m*v", 0.25, 3)], 1)]
    message = prompts.progress_message(3, 6, records, "mse", "restart 1/2, branch 2/4", 12.0)
    view = read_conversation([task(), message], PARSER)
    assert (view.step, view.max_steps, view.branch, view.branches) == (3, 6, 2, 4)
    assert [(row.complexity, row.train_mse, row.formula) for row in view.front] == [
        (9, 1.5e-30, "0.5*m*v**2 + 1"), (3, 0.25, "m*v")]
    assert view.best.formula == "0.5*m*v**2 + 1"
    assert seconds_left([task(), message]) == 12.0
    untimed = prompts.progress_message(3, 6, records, "mse", "restart 1/2, branch 2/4", None)
    assert seconds_left([task(), untimed]) is None


def test_power_law_fit_gives_exponents_intervals_scale_and_r2():
    data = {"m": X["m"], "v": np.abs(X["v"]) + 0.5}
    messages = tool_messages(ToolCall("power_law_fit", {"x": ["m", "v"], "y": "E"}, id="c1"),
                             data=data)
    view = read_conversation([task(), *messages], PARSER)
    report = view.power_laws["E"]
    assert set(report.exponents) == {"m", "v"}
    for exponent in report.exponents.values():
        assert exponent.low <= exponent.value <= exponent.high and exponent.width > 0
    assert report.scale is not None and report.scale > 0
    assert report.r2 is not None and 0.5 < report.r2 < 1.0  # E has an offset: not exact
    assert not report.exact
    partial = read_partial_screen([{"role": "assistant", "content": PARTIAL_MARK}, *messages])
    assert set(partial) == {"m", "v"} and all(z > 0 for z in partial.values())


def test_relationship_analysis_gives_ranked_relations_and_log_log_slopes():
    messages = tool_messages(ToolCall("relationship_analysis", {}, id="c1"))
    view = read_conversation([task(), *messages], PARSER)
    assert set(view.relations) == {"m", "v", "noise"}
    assert view.relations["v"].collapse_r2 > view.relations["noise"].collapse_r2
    assert view.relations["m"].trend and view.relations["m"].pearson > 0
    assert view.relations["m"].loglog_slope is not None  # m > 0 and E > 0: a log-log view
    assert view.relations["v"].loglog_slope is None      # v changes sign
    scores, ranges = read_screening([task(), *messages])
    assert set(scores) == {"m", "v", "noise"}
    low, high = ranges["m"]  # the training split's range of m, drawn from [1, 5]
    assert 1.0 <= low < 1.1 and 4.9 < high <= 5.0


def test_structured_roles_in_the_task_prompt_are_read():
    nodes = 6
    data = StructuredData({"x": RNG.uniform(size=(20, nodes)),
                           "A": np.array([[i, (i + 1) % nodes] for i in range(nodes)]),
                           "t": np.linspace(0, 1, 20)},
                          relation_names=["A"], num_nodes=nodes, time="t",
                          derivatives={"dx": "x"})
    target = RNG.uniform(size=(20, nodes))
    notes = {name: data.role_note(name, np.asarray(value))
             for name, value in {**data, "dx": target}.items()}
    structure = read_structure([task(features=data, target="dx", values=target,
                                     descriptions=notes)])
    assert structure is not None and structure.graph and structure.derivative
    assert structure.target == "dx" and structure.state == "x" and structure.time == "t"
    assert structure.relations == ["A"] and structure.node_fields == ["x"]
