"""``srh tool list | schema | call``, in process through the CLI's main()."""

from __future__ import annotations

import json

import numpy as np
import pytest

from srh_core.cli import main
from tests.support.evaluators import MAX_ERROR_EVALUATOR


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 3, 60), rng.uniform(1, 3, 60)
    rows = "\n".join(f"{a},{b},{a * b * b}"
                     for a, b in zip(x1.tolist(), x2.tolist(), strict=True))
    path = tmp_path / "data.csv"
    path.write_text("x1,x2,y\n" + rows + "\n")
    return path


def test_list_shows_canonical_names_their_aliases_and_availability(capsys):
    assert main(["tool", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["tools"]}
    assert rows["evaluate_formula"]["aliases"] == ["evaluate"]
    assert rows["call_sindy"]["aliases"] == ["sindy"] and "sindy" not in rows
    assert all(row["summary"] for row in rows.values())
    assert main(["tool", "list"]) == 0
    text = capsys.readouterr().out
    assert "evaluate_eic" in text and "(alias eic)" in text


def test_schema_of_an_alias_is_the_canonical_function_schema(capsys):
    assert main(["tool", "schema", "eic"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["function"]["name"] == "evaluate_eic"
    assert "f" in schema["function"]["parameters"]["properties"]


def test_call_runs_the_tool_like_the_agent_does(table, capsys):
    assert main(["tool", "call", "evaluate", "--data", str(table), "--target", "y",
                 "--params", '{"f": "x1*x2**2"}', "--validation-fraction", "0.25"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("evaluate_formula:") and "validation:" in text
    assert main(["tool", "call", "polynomial_fit", "--data", str(table), "--target", "y",
                 "--params", '{"max_degree": 3}', "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] and result["meta_data"]["tool"] == "polynomial_fit"
    assert result["result"]["data_split_results"]["train"]["metrics"]["r2"] > 0.999999


def test_call_scores_with_a_custom_evaluator(table, tmp_path, capsys):
    evaluator = tmp_path / "max_error.py"
    evaluator.write_text(MAX_ERROR_EVALUATOR)
    argv = ["tool", "call", "evaluate", "--data", str(table), "--target", "y",
            "--params", '{"f": "x1*x2"}', "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)["result"]["data_split_results"]["train"]
    assert "max_abs_error" not in plain["metrics"]
    assert main([*argv, "--evaluator", str(evaluator)]) == 0
    metrics = json.loads(capsys.readouterr().out)["result"]["data_split_results"]["train"][
        "metrics"]
    assert metrics["max_abs_error"] == pytest.approx(2 * metrics["mse"] ** 0.5)
    evaluator.write_text("this is not python(")
    assert main([*argv, "--evaluator", str(evaluator)]) == 2
    assert "max_error.py" in capsys.readouterr().err


def test_a_failed_call_exits_1_with_the_message_the_model_would_read(table, capsys):
    assert main(["tool", "call", "evaluate_formula", "--data", str(table), "--target", "y",
                 "--params", '{"f": "x1*x3"}']) == 1
    assert "unknown name(s) 'x3'" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["tool", "schema", "evaluat"], "Did you mean 'evaluate_formula'?"),
    (["tool", "call", "evaluate", "--data", "TABLE", "--target", "y", "--params", "[1"],
     "--params is not valid JSON"),
    (["tool", "call", "evaluate", "--data", "TABLE", "--target", "y", "--params", "[1]"],
     "must be a JSON object"),
    (["tool", "call", "evaluate", "--data", "TABLE"], "needs --target"),
    (["tool", "call", "evaluate", "--data", "TABLE", "--target", "z"], "not a column"),
], ids=["unknown-tool", "bad-json", "not-an-object", "no-target", "bad-target"])
def test_bad_input_is_a_usage_error(table, capsys, argv, message):
    argv = [str(table) if part == "TABLE" else part for part in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
