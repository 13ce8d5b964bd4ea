"""SRBench's protocol as sweep options: seeds, split, train cap, noise, anonymizing."""

from __future__ import annotations

import numpy as np
import pytest

from srh_core.benchmark.protocol import (
    Protocol,
    protocol_data,
    renamed_formula,
    srbench_seeds,
)
from srh_core.errors import ConfigurationError
from srh_core.problems import load_suite
from srh_core.sweep import cells, load_sweep
from srh_core.sweep.runner import judged_fields

PROBLEM = load_suite("feynman").get("feynman-I.12.11")  # q*(Ef+B*v*sin(theta))


def test_the_seed_list_is_srbench_s_published_one():
    seeds = srbench_seeds(100)
    assert seeds[:5] == [23654, 15795, 860, 5390, 16850] and seeds[-1] == 9692
    assert srbench_seeds(3) == seeds[:3] and len(set(seeds)) == 100
    with pytest.raises(ConfigurationError):
        srbench_seeds(101)


def test_without_a_split_the_data_is_the_problem_s_own_sample():
    data = protocol_data(PROBLEM, 5, Protocol(samples=300, noise=0.01))
    X, y = PROBLEM.sample(300, seed=5, noise=0.01)
    assert np.array_equal(data.y_train, y) and data.X_test is None
    assert all(np.array_equal(data.X_train[name], X[name]) for name in X)


def test_the_split_holds_out_a_noise_free_test_set_and_noise_follows_the_train_rms():
    clean = protocol_data(PROBLEM, 7, Protocol(samples=400, test_fraction=0.25))
    noisy = protocol_data(PROBLEM, 7, Protocol(samples=400, test_fraction=0.25, noise=0.1))
    assert len(clean.y_train) == 300 and len(clean.y_test) == 100
    assert np.array_equal(clean.y_test, noisy.y_test)  # the test target stays noise-free
    truth = np.asarray(PROBLEM.expression().evaluate(clean.X_test))
    assert np.allclose(clean.y_test, truth)
    sigma = np.std(noisy.y_train - clean.y_train)
    assert sigma == pytest.approx(0.1 * np.sqrt(np.mean(clean.y_train ** 2)), rel=0.15)
    train = {tuple(row) for row in np.column_stack(list(clean.X_train.values()))}
    test = {tuple(row) for row in np.column_stack(list(clean.X_test.values()))}
    assert not train & test


def test_the_train_cap_and_the_seed_decide_the_draw():
    capped = protocol_data(PROBLEM, 1, Protocol(samples=400, test_fraction=0.25,
                                                max_train_samples=50))
    assert len(capped.y_train) == 50 and len(capped.y_test) == 100
    again = protocol_data(PROBLEM, 1, Protocol(samples=400, test_fraction=0.25,
                                               max_train_samples=50))
    other = protocol_data(PROBLEM, 2, Protocol(samples=400, test_fraction=0.25,
                                               max_train_samples=50))
    assert np.array_equal(capped.y_train, again.y_train)
    assert not np.array_equal(capped.y_train, other.y_train)


def test_anonymized_data_says_nothing_of_the_physics_and_formulas_map_back():
    data = protocol_data(PROBLEM, 0, Protocol(samples=100, anonymize=True))
    assert sorted(data.X_train) == ["x1", "x2", "x3", "x4", "x5"] and data.target == "y"
    assert not {"q", "Ef", "B", "v", "theta"} & set(data.description.replace(",", " ").split())
    back = renamed_formula("x1*(x2 + x3*x4*sin(x5))", data.names)
    assert PROBLEM.judge(back).solved


def _spec(tmp_path, extra):
    path = tmp_path / "sweep.toml"
    path.write_text('[sweep]\nname = "p"\nsuite = "feynman"\nproblems = ["feynman-I.12.11"]\n'
                    f'samples = 200\n{extra}\n[[variants]]\nname = "srh"\n\n[[variants]]\n'
                    'name = "gplearn"\nmethod = "gplearn"\n', encoding="utf-8")
    return load_sweep(path)


def test_noise_levels_and_srbench_seeds_multiply_the_cells(tmp_path):
    spec = _spec(tmp_path, 'seeds = "srbench:2"\nnoise = [0, 0.01]\ntest_fraction = 0.25')
    made = cells(spec)
    assert len(made) == 2 * 2 * 2
    assert {cell.seed for cell in made} == {23654, 15795}
    assert made[0].label == "feynman-I.12.11|seed=23654|srh|noise=0"
    assert len({cell.cell_id for cell in made}) == len(made)


def test_protocol_options_at_their_defaults_keep_every_cell_s_identity(tmp_path):
    plain = _spec(tmp_path, "seeds = [0]")
    spelled = _spec(tmp_path, "seeds = [0]\ntest_fraction = 0.0\nanonymize = false")
    assert [c.cell_id for c in cells(plain)] == [c.cell_id for c in cells(spelled)]
    split = _spec(tmp_path, "seeds = [0]\ntest_fraction = 0.25")
    assert not {c.cell_id for c in cells(plain)} & {c.cell_id for c in cells(split)}


@pytest.mark.parametrize(("extra", "message"), [
    ('seeds = "srbench"', "srbench:N"), ("noise = [0.01, 0.01]", "distinct"),
    ("test_fraction = 1.0", "test_fraction"), ("noise = -1", "noise"),
])
def test_bad_protocol_options_are_reported(tmp_path, extra, message):
    with pytest.raises(ConfigurationError, match=message):
        _spec(tmp_path, extra)


def test_an_anonymized_cell_is_judged_in_the_problem_s_names(tmp_path):
    spec = _spec(tmp_path, "seeds = [3]\ntest_fraction = 0.25\nanonymize = true")
    entry = {"problem": "feynman-I.12.11", "seed": 3, "noise": 0.0}
    fields = judged_fields(spec, entry, "x1*(x2 + x3*x4*sin(x5))")
    assert fields["solved"] and fields["symbolic_solution"] and fields["accuracy_solution"]
    assert fields["nmse_id"] == pytest.approx(0, abs=1e-20)
    wrong = judged_fields(spec, entry, "x1*x2")
    assert not wrong["solved"] and not wrong["symbolic_solution"]


def test_a_form_equal_only_for_positive_inputs_is_reported_apart(tmp_path):
    spec = _spec(tmp_path, "seeds = [3]\ntest_fraction = 0.25")
    entry = {"problem": "feynman-I.10.7", "seed": 3, "noise": 0.0}   # m_0/sqrt(1 - v**2/c**2)
    fields = judged_fields(spec, entry, "m_0*c/sqrt(c**2 - v**2)")   # equal where c > 0
    assert fields["solved"] and fields["accuracy_solution"]
    assert not fields["symbolic_solution"] and fields["symbolic_solution_positive"]
    assert judged_fields(spec, entry, "m_0*c/(c - v)")["symbolic_solution_positive"] is False
    assert judged_fields(spec, entry, "m_0/sqrt(1 - v**2/c**2)")["symbolic_solution_positive"]
