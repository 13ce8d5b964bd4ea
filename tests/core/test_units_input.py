"""Units as input: the CLI, sweep files, the estimator, manifests, payloads and the tools."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.cli import UsageError, build_parser, main
from srh_core.cli.commands import settings_from_args
from srh_core.context import AgentContext, load_context_data
from srh_core.errors import ConfigurationError, ContextManifestError
from srh_core.tools.base import BaseTool

KINETIC = ["run", "--equation", "E = m*v**2/2", "--run-id", "t"]
KINETIC_UNITS = "m=kg,v=m/s,E=kg*m^2/s^2"


def settings(*flags: str):
    return settings_from_args(build_parser().parse_args(list(flags)))


def test_units_flag_sets_the_units_setting():
    assert settings(*KINETIC, "--units", KINETIC_UNITS).units == {
        "m": "kg", "v": "m/s", "E": "kg*m^2/s^2"}
    assert settings(*KINETIC).units is None


@pytest.mark.parametrize(("text", "message"), [
    ("m=kg,v=m//s", "units of 'v'"), ("m", "expected NAME=UNITS"), ("1x=m", "expected NAME"),
    ("m=furlong", "unknown unit 'furlong'"),
], ids=["bad-units", "no-equals", "bad-name", "unknown-unit"])
def test_bad_units_flags_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        settings(*KINETIC, "--units", text)


def test_a_suite_problem_brings_its_units_unless_told_not_to():
    problem = ["run", "--problem", "feynman-I.12.1", "--suite", "feynman", "--run-id", "t"]
    units = settings(*problem).units
    assert units == {"mu": "1", "Nn": "kg*m*s^-2", "F": "kg*m*s^-2"}
    assert settings(*problem, "--units", "mu=m").units["mu"] == "m"  # the flag wins
    assert settings(*problem, "--no-units").units is None
    with pytest.raises(UsageError):
        settings(*problem, "--no-units", "--units", "mu=m")


def test_a_run_with_units_reports_them_in_its_tool_results(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*KINETIC, "--units", KINETIC_UNITS, "--n-samples", "200", "-L", "2",
                 "--ban-tools", "relationship_analysis", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    assert json.loads((out / "settings.json").read_text())["units"]["E"] == "kg*m^2/s^2"
    reports = [result["units"] for result in _tool_results(out) if "units" in result]
    assert reports, "no tool result carried units"
    assert all(report["target_dimension"] == "kg*m^2*s^-2" for report in reports)
    assert any(report["consistent"] and report["dimension"] == "kg*m^2*s^-2"
               for report in reports)


def _tool_results(out):
    found = []
    for path in out.rglob("*.json*"):
        for line in path.read_text().splitlines():
            if '"units"' in line and '"target_dimension"' in line:
                found += list(_results_in(json.loads(line)))
    return found


def _results_in(value):
    if isinstance(value, dict):
        if "target_dimension" in (value.get("units") or {}):
            yield value
        for item in value.values():
            yield from _results_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _results_in(item)


SWEEP = """
[sweep]
name = "u"
problems = ["feynman-I.12.1"]
suite = "feynman"
{extra}

[settings]
max_refinement_depth = 1
{settings}
"""


def _cell_settings(tmp_path, extra="", settings_text=""):
    from srh_core.sweep.runner import cell_data
    from srh_core.sweep.spec import cells, load_sweep

    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP.format(extra=extra, settings=settings_text))
    spec = load_sweep(path)
    cell = cells(spec)[0]
    return cell, cell_data(spec, cell).settings


def test_sweep_cells_get_the_suite_units_by_default(tmp_path):
    cell, on = _cell_settings(tmp_path)
    assert on.units == {"mu": "1", "Nn": "kg*m*s^-2", "F": "kg*m*s^-2"}
    other, off = _cell_settings(tmp_path, "units = false")
    assert off.units is None and other.cell_id != cell.cell_id  # a different cell
    _, anonymous = _cell_settings(tmp_path, "anonymize = true")
    assert anonymous.units == {"x1": "1", "x2": "kg*m*s^-2", "y": "kg*m*s^-2"}
    _, own = _cell_settings(tmp_path, settings_text='units = {Nn = "N"}')
    assert own.units["Nn"] == "N" and own.units["F"] == "kg*m*s^-2"


def test_a_cell_given_units_is_named_by_them_and_an_old_cell_resumes_without(tmp_path):
    from srh_core.sweep.runner import FileSweepState, SweepRunner, cell_data, new_entry
    from srh_core.sweep.spec import cells, load_sweep

    off, _ = _cell_settings(tmp_path, "units = false")
    assert not off.units and not off.cell_id.endswith("|units")
    cell, _ = _cell_settings(tmp_path)
    assert cell.units and cell.cell_id.endswith("|units")
    spec = load_sweep(tmp_path / "sweep.toml")  # the default: units = true
    (cell,) = cells(spec)
    old = replace(cell, units=False)  # the id a sweep recorded before units existed
    FileSweepState(tmp_path / "out", spec.name).save({old.cell_id: new_entry(old)})
    runner = SweepRunner(spec, tmp_path / "out", backend=None)
    assert list(runner.state) == [old.cell_id] and runner.cells == [old]
    assert cell_data(spec, runner.cells[0]).settings.units is None  # as it was
    fresh = SweepRunner(spec, tmp_path / "fresh", backend=None)
    assert list(fresh.state) == [cell.cell_id]
    assert cell_data(spec, fresh.cells[0]).settings.units["F"] == "kg*m*s^-2"


def test_sweep_settings_with_bad_units_name_them(tmp_path):
    with pytest.raises(ConfigurationError, match="units of 'Nn'"):
        _cell_settings(tmp_path, settings_text='units = {Nn = "N/"}')


def test_estimator_units_become_the_run_units():
    from srh_core.estimator import SRHarnessRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (60, 2))
    y = 0.5 * X[:, 0] * X[:, 1] ** 2
    model = SRHarnessRegressor(max_refinement_depth=1, validation_fraction=0.0,
                               X_units=["kg", "m/s"], y_units="J")
    model.fit(X, y, variable_names=["m", "v"])
    units = model.pareto_front_[0]["details"]["units"]  # what the tools reported
    assert units["target_dimension"] == "kg*m^2*s^-2" and units["consistent"]
    by_name = SRHarnessRegressor(X_units={"v": "m/s", "m": "kg"}, y_units="J",
                                 max_refinement_depth=1, validation_fraction=0.0)
    assert by_name.fit(X, y, variable_names=["m", "v"]).pareto_front_[0]["details"]["units"] \
        == units
    with pytest.raises(ConfigurationError, match="one unit per column of X"):
        SRHarnessRegressor(X_units=["kg"]).fit(X, y)
    with pytest.raises(ConfigurationError, match="'w', which is not a variable"):
        SRHarnessRegressor(X_units={"w": "kg"}).fit(X, y, variable_names=["m", "v"])
    with pytest.raises(ConfigurationError, match="units of 'y'"):
        SRHarnessRegressor(y_units="J^").fit(X, y)


def _manifest(tmp_path, units_of_x="m"):
    root = tmp_path / "context.data"
    root.mkdir()
    np.save(root / "x.npy", np.linspace(1, 2, 20))
    np.save(root / "t.npy", np.linspace(2, 3, 20))
    np.save(root / "v.npy", np.linspace(1, 2, 20) / np.linspace(2, 3, 20))
    variables = {"x": {"file": "x.npy", "description": "distance", "units": units_of_x},
                 "t": {"file": "t.npy", "description": "time", "units": "s"},
                 "v": {"file": "v.npy", "description": "speed", "units": "m/s"}}
    (root / "manifest.json").write_text(json.dumps({"target": "v", "variables": variables}))
    return root


def test_manifest_units_reach_the_context_and_its_payload(tmp_path):
    loaded = load_context_data(_manifest(tmp_path))
    assert loaded["variable_units"] == {"x": "m", "t": "s", "v": "m/s"}
    context = AgentContext(args={"validation_fraction": 0.0})
    context.commit_context_data(loaded)
    assert context.variable_units == {"x": "m", "t": "s", "v": "m/s"}
    assert context.schema()["variables"]["v"]["units"] == "m/s"
    rebuilt = AgentContext.from_payload(context.to_payload())
    assert rebuilt.variable_units == context.variable_units
    assert context.with_data(dict(context.data)).variable_units == context.variable_units
    from srh_core.context.manifest_writer import save_context_data

    save_context_data(context, tmp_path / "again")
    assert load_context_data(tmp_path / "again")["variable_units"] == context.variable_units


def test_a_manifest_with_bad_units_says_where(tmp_path):
    with pytest.raises(ContextManifestError,
                       match=r"variables\.x\.units: bad units 'mm2': unexpected '2'"):
        load_context_data(_manifest(tmp_path, units_of_x="mm2"))


def test_the_run_units_setting_adds_to_the_data_units_and_wins():
    context = AgentContext(args={"units": {"x": "km", "y": "s"}}, variable_units={"x": "m"},
                           data={"x": np.ones(5), "y": np.ones(5)}, target="y")
    assert context.variable_units == {"x": "km", "y": "s"}


def _kinetic_context(units):
    rng = np.random.default_rng(1)
    m, v = rng.uniform(1, 3, 50), rng.uniform(1, 3, 50)
    return AgentContext(args={"validation_fraction": 0.0, "units": units},
                        data={"m": m, "v": v, "E": 0.5 * m * v**2}, target="E")


UNITS = {"m": "kg", "v": "m/s", "E": "J"}


@pytest.mark.parametrize(("formula", "consistent", "line"), [
    ("0.5*m*v**2", True, "units: consistent; the formula is in kg*m^2*s^-2 (as the target)"),
    ("m*v**2/2", True, "units: consistent; the formula is in kg*m^2*s^-2 (as the target)"),
    ("m*v**2 + m", False, "units: INCONSISTENT: m*v**2 + m combines m*v**2 in kg*m^2*s^-2 "
                          "with m in kg"),
    ("m*v", False, "units: INCONSISTENT: the formula is in kg*m*s^-1, the target in "
                   "kg*m^2*s^-2"),
    ("2.5*m*v", True, "units: consistent; the formula is in kg*m*s^-1, its constants in "
                      "m*s^-1 (target in kg*m^2*s^-2)"),
    ("exp(v)", False, "units: INCONSISTENT: exp() needs a dimensionless argument"),
], ids=["scaled", "exact", "sum", "wrong-product", "constant-carries-units", "exp"])
def test_evaluate_formula_reports_units(formula, consistent, line):
    result = BaseTool.create("evaluate_formula", _kinetic_context(UNITS))(f=formula)
    assert result.ok, result.result_str
    assert result.result["units"]["consistent"] is consistent
    assert result.result["units"]["target_dimension"] == "kg*m^2*s^-2"
    assert line in result.result_str


def test_a_transformed_target_has_the_transformed_dimension():
    result = BaseTool.create("evaluate_formula", _kinetic_context(UNITS))(
        f="0.5*m", y="E/v**2")
    assert result.result["units"] == {"consistent": True, "dimension": "kg",
                                      "target_dimension": "kg", "reason": "",
                                      "constant_units": None}


def test_without_units_nothing_is_reported():
    result = BaseTool.create("evaluate_formula", _kinetic_context(None))(f="m*v**2/2")
    assert "units" not in result.result and "units:" not in result.result_str


def test_expression_search_uses_the_units():
    rng = np.random.default_rng(2)
    L, g, m = rng.uniform(1, 3, 200), rng.uniform(5, 10, 200), rng.uniform(1, 2, 200)
    context = AgentContext(args={"validation_fraction": 0.0,
                                 "units": {"L": "m", "g": "m/s^2", "m": "kg", "T": "s"}},
                           data={"L": L, "g": g, "m": m, "T": 2 * np.pi * np.sqrt(L / g)},
                           target="T")
    result = BaseTool.create("expression_search", context)(time_budget=2, workers=1)
    assert result.ok, result.result_str
    notes = result.result["search"]["notes"]
    assert any("dimensional analysis: the target is sqrt(L/g) times a function of 0" in note
               for note in notes), notes
    assert result.result["metrics"]["train"]["r2"] > 1 - 1e-12
    assert result.result["units"]["consistent"] and result.result["units"]["dimension"] == "s"
    assert "units: consistent; the formula is in s (as the target)" in result.result_str


class _FirstPrompt:
    """An observer that stops the run at its first step (the prompt is then built)."""

    def __call__(self, event):
        if event["event"] == "step":
            raise KeyboardInterrupt


def _first_user_message(agent, X, y):
    messages = agent.create_initial_prompt_messages("E from m and v", X, y, [])
    return messages[1]["content"]


def test_the_first_prompt_lists_the_units_of_every_variable_and_the_target():
    context = _kinetic_context(UNITS)
    agent = SRAgent(units=UNITS, context=context)
    X = {name: context.data[name] for name in ("m", "v")}
    text = _first_user_message(agent, X, {"E": context.data["E"]})
    assert "- Target: E: range" in text and "(units: J)" in text
    assert "m: range" in text and "(units: kg)" in text and "(units: m/s)" in text
    plain = _first_user_message(SRAgent(context=_kinetic_context(None)), X,
                                {"E": context.data["E"]})
    assert "units" not in plain


SEEN_UNITS: list[dict[str, str]] = []


class UnitsWatcher(SRAgent):
    """Notes the context's units at every step (in a list: no state on the agent)."""

    def prepare_iteration(self, buffer, R, L, C):
        SEEN_UNITS.append(dict(self.context.variable_units))
        return super().prepare_iteration(buffer, R, L, C)


def test_manifest_units_reach_a_python_api_run_and_survive_its_resume(tmp_path):
    from srh_core.cli.commands import manifest_data

    data = manifest_data(_manifest(tmp_path), None, None)
    agent = UnitsWatcher(save_path=str(tmp_path / "run"), max_refinement_depth=2,
                         run_id="units", validation_fraction=0.0, early_stop=False)
    agent.observers.append(_FirstPrompt())
    first = agent.run(data.X, data.y, data.description)
    assert first["status"] == "interrupted"
    assert first["candidates"][0]["details"]["units"]["target_dimension"] == "m*s^-1"
    SEEN_UNITS.clear()
    assert UnitsWatcher.resume(tmp_path / "run")["status"] == "completed"
    assert SEEN_UNITS == [{"x": "m", "t": "s", "v": "m/s"}]  # step 2, after the resume
