"""``srh run``'s summary: the split its metrics are on, and why the chosen formula won."""

from __future__ import annotations

from srh_core.cli import main
from srh_core.cli.display import summary
from srh_core.ranking import RankingPolicy, rank_candidates, ranked_result
from srh_core.types import CandidateRecord


def record(formula: str, complexity: int, mse: float, r2: float, validation: bool = True
           ) -> CandidateRecord:
    scores = {"mse": mse, "r2": r2}
    metrics = {"train": scores, **({"validation": scores} if validation else {})}
    return CandidateRecord(formula, f"run:{formula}", {"metrics": metrics,
                                                       "complexity": complexity,
                                                       "canonical_key": formula})


def result_of(*records: CandidateRecord):
    policy = RankingPolicy()
    return ranked_result(rank_candidates(records, policy), policy, "best", status="completed",
                         progress="1/1", run_id="run", stop_reason=None, totals={})


def test_a_simpler_formula_chosen_over_a_more_accurate_one_says_why():
    result = result_of(record("x1*x2 + 0.01*x1**3*x2 - 0.002*x2**4", 15, 0.0096, 0.99904),
                       record("x1*x2", 3, 0.01, 0.999))
    assert result.best.formula == "x1*x2"
    text = summary(result, "mse", None, 0.2)
    assert "Metrics: on the validation split (0.2 of the rows)" in text
    reason = next(line for line in text.splitlines() if line.startswith("Chosen over"))
    assert "complexity 15 against 3" in reason and "validation mse 0.0096 against 0.01" in reason
    assert "--selection accuracy" in reason


def test_the_most_accurate_formula_needs_no_reason_and_train_metrics_say_why():
    result = result_of(record("x1*x2", 3, 0.0, 1.0, validation=False),
                       record("x1", 1, 3.0, 0.2, validation=False))
    text = summary(result, "mse", None, 0.0)
    assert "Metrics: on the train split (validation_fraction is 0" in text
    assert "Chosen over" not in text


def test_srh_run_prints_the_lines_and_takes_a_guess(tmp_path, capsys):
    assert main(["run", "--equation", "1.5*exp(x1) + x2", "--n-samples", "200", "-L", "1",
                 "--guess", 'param("a")*exp(x1) + x2', "--operators", "+,-,*,/,exp",
                 "--out", str(tmp_path / "run"), "--run-id", "t"]) == 0
    out = capsys.readouterr().out
    assert "Best formula: 1.5*exp(x1) + x2" in out
    assert "Metrics: on the validation split (0.2 of the rows)" in out
