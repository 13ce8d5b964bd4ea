"""``srh run`` flags: each sets one SearchSettings field; --equation draws synthetic data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from srh_core.cli import build_parser, main
from srh_core.cli.commands import load_run_data, settings_from_args
from srh_core.errors import ConfigurationError

BASE = ["run", "--equation", "x1**2 + 2*x1*x2", "--run-id", "t"]


def parse(*flags: str):
    return build_parser().parse_args([*BASE, *flags])


@pytest.mark.parametrize(("flags", "field", "value"), [
    (["--tools", "evaluate_formula,polynomial_fit"], "tools",
     ["evaluate_formula", "polynomial_fit"]),
    (["--ban-tools", "call_sindy"], "ban_tools", ["call_sindy"]),
    (["--tool-parser", "xml"], "tool_parser", "xml"),
    (["--restart-top-k", "3"], "restart_top_k", 3),
    (["--validation-fraction", "0.3"], "validation_fraction", 0.3),
    (["--split-by", "ood"], "split_by", "ood"),
    (["--split-ood-variable", "x1"], "split_ood_variable", "x1"),
    (["--split-random-state", "7"], "split_random_state", 7),
    (["--selection", "accuracy"], "selection", "accuracy"),
    (["--force-initial-diagnostics"], "force_initial_diagnostics", True),
    (["--no-auto-routing"], "auto_routing", False),
    (["--auto-routing"], "auto_routing", True),
    (["--strong-llm", "openai:gpt-4o"], "strong_llm_model", "gpt-4o"),
    (["--strong-llm", "deepseek:deepseek-reasoner"], "strong_llm_provider", "deepseek"),
    (["--llm-max-tokens", "2048"], "llm_max_tokens", 2048),
    (["-R", "2", "-C", "3"], "global_width", 3),
    (["--binary-operators", "+,*,pow"], "binary_operators", ["+", "*", "^"]),
    (["--unary-operators", "sin,exp"], "unary_operators", ["sin", "exp"]),
    (["--operators", "+,-,*,sin"], "binary_operators", ["+", "-", "*"]),
    (["--operators", "+,-,*,sin"], "unary_operators", ["sin"]),
    (["--maxsize", "12"], "maxsize", 12),
    (["--guess", "x1**2", "--guess", 'param("a")*x1*x2'], "guesses",
     ["x1**2", 'param("a")*x1*x2']),
], ids=lambda value: value if isinstance(value, str) else None)
def test_each_flag_sets_its_setting(flags, field, value):
    assert getattr(settings_from_args(parse(*flags)), field) == value


@pytest.mark.parametrize(("flags", "message"), [
    (["--unary-operators", "sinn"], "did you mean 'sin'"),
    (["--operators", "+,frobnicate"], "unknown unary operator 'frobnicate'"),
    (["--maxsize", "100"], "maxsize"),
    (["--guess", "x1 +"], "not a formula"),
], ids=["unknown-unary", "unknown-in-operators", "maxsize-range", "bad-guess"])
def test_bad_formula_limits_are_configuration_errors(flags, message):
    with pytest.raises(ConfigurationError, match=message):
        settings_from_args(parse(*flags))


def test_unset_flags_keep_the_defaults_and_the_config_file(tmp_path):
    settings = settings_from_args(parse())
    assert (settings.ban_tools, settings.auto_routing, settings.tools) == ([], True, None)
    config = tmp_path / "search.toml"
    config.write_text("[search]\nrestart_top_k = 4\nllm_max_tokens = 999\n")
    settings = settings_from_args(parse("--config", str(config), "--llm-max-tokens", "512"))
    assert (settings.restart_top_k, settings.llm_max_tokens) == (4, 512)


def test_workspace_must_be_a_directory(tmp_path):
    assert settings_from_args(parse("--workspace", str(tmp_path))).workspace == str(tmp_path)
    with pytest.raises(ConfigurationError, match="not a directory"):
        settings_from_args(parse("--workspace", str(tmp_path / "missing")))


def test_strong_llm_needs_provider_and_model():
    from srh_core.cli import UsageError

    with pytest.raises(UsageError, match="expected PROVIDER:MODEL"):
        parse("--strong-llm", "gpt-4o")


def test_help_is_grouped_by_topic():
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    titles = [group.title for group in run._action_groups]
    assert {"data", "model", "tools", "search budget", "validation split",
            "run and output"} <= set(titles)
    tools = next(group for group in run._action_groups if group.title == "tools")
    assert {"--tools", "--ban-tools", "--workspace"} <= {
        option for action in tools._group_actions for option in action.option_strings}


def test_equation_data_follow_the_flags():
    data = load_run_data(parse("--features", "x1,x2,x3", "--n-samples", "300", "--x-low", "-2",
                               "--x-high", "2", "--seed", "4"))
    assert sorted(data.X) == ["x1", "x2", "x3"] and list(data.y) == ["y"]
    x1, x2 = data.X["x1"], data.X["x2"]
    assert len(x1) == 300 and x1.min() >= -2 and x1.max() <= 2
    np.testing.assert_allclose(data.y["y"], x1**2 + 2 * x1 * x2)
    assert data.problem.judge("x1**2 + 2*x1*x2").solved


def test_noise_std_ratio_scales_the_noise_by_the_target_std():
    clean = load_run_data(parse("--n-samples", "4000")).y["y"]
    noisy = load_run_data(parse("--n-samples", "4000", "--noise-std-ratio", "0.1")).y["y"]
    assert np.std(noisy - clean) == pytest.approx(0.1 * np.std(clean), rel=0.05)


def test_equation_left_side_names_the_target():
    data = load_run_data(build_parser().parse_args(["run", "--equation", "E = m*v**2/2"]))
    assert list(data.y) == ["E"] and sorted(data.X) == ["m", "v"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--equation", "__import__('os').system('true')"], "not a formula the engine accepts"),
    (["--equation", "x1*x9", "--features", "x1,x2"], "not in --features"),
    (["--equation", "log(x1)", "--x-low", "-1", "--x-high", "1"], "not finite"),
    (["--equation", "x1", "--x-low", "3", "--x-high", "1"], "below --x-high"),
    (["--equation", "2 + 3"], "uses no variable"),
    (["--equation", "y = x1", "--target", "z"], "differs from the equation's left side"),
    (["--problem", "feynman-I.6.2a", "--x-low", "0"], "only applies to --equation"),
], ids=["python-code", "unknown-variable", "not-finite", "empty-range", "constant",
        "two-targets", "flag-without-equation"])
def test_bad_equations_are_configuration_errors(flags, message):
    with pytest.raises(ConfigurationError, match=message):
        load_run_data(build_parser().parse_args(["run", *flags]))


def test_run_an_equation_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*BASE, "--features", "x1,x2", "--n-samples", "200", "-L", "2",
                 "--ban-tools", "relationship_analysis", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "early_stopped"
    assert json.loads((out / "judgement.json").read_text())["solved"]
    assert json.loads((out / "settings.json").read_text())["ban_tools"] == [
        "relationship_analysis"]
