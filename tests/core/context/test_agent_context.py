from __future__ import annotations

import argparse
import json
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError, DataError


def make_context(n: int = 20, **kwargs: object) -> AgentContext:
    x = np.linspace(-1.0, 1.0, n)
    data = {"x": x, "z": np.arange(n, dtype=float), "y": 2 * x**2 + 1}
    return AgentContext(data=data, target="y", **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ bad input

BAD_DATA = [
    pytest.param({"x": np.ones(3)}, "y", "y", "not a variable", id="unknown-target"),
    pytest.param({"x": np.ones(3), "y": np.ones(4)}, "y", "x", "has 3 samples", id="misaligned"),
    pytest.param({"x": np.array(["a", "b"]), "y": np.ones(2)}, "y", "x", "numeric",
                 id="string-dtype"),
    pytest.param({"x": np.array([1, None], dtype=object), "y": np.ones(2)}, "y", "x", "numeric",
                 id="object-dtype"),
    pytest.param({"x": np.full(3, np.nan), "y": np.ones(3)}, "y", "x", "entirely nan",
                 id="all-nan"),
    pytest.param({"x": np.ones(3), "y": np.array([1.0, np.inf, 2.0])}, "y", "y", "infinite",
                 id="inf-target"),
    pytest.param({"x": np.array([1.0, -np.inf, 0.0]), "y": np.ones(3)}, "y", "x", "index 1",
                 id="inf-feature"),
    pytest.param({"x": np.array([]), "y": np.array([])}, "y", "x", "empty", id="empty-arrays"),
    pytest.param({"x": np.float64(1.0), "y": np.ones(2)}, "y", "x", "scalar", id="scalar"),
    pytest.param({"x y": np.ones(2), "y": np.ones(2)}, "y", "x y", "identifier",
                 id="bad-name"),
    pytest.param({"x": [[1, 2], [3]], "y": np.ones(2)}, "y", "x", "rectangular", id="ragged"),
]


@pytest.mark.parametrize(("data", "target", "variable", "phrase"), BAD_DATA)
def test_bad_data_raises_data_error_naming_the_variable(
    data: dict, target: str, variable: str, phrase: str
) -> None:
    with pytest.raises(DataError) as info:
        AgentContext(data=data, target=target)
    assert info.value.variable == variable
    assert isinstance(info.value, ValueError)
    assert repr(variable) in str(info.value)
    assert phrase in str(info.value)


def test_unknown_target_suggests_close_name() -> None:
    with pytest.raises(DataError, match="Did you mean 'y1'"):
        AgentContext(data={"x": np.ones(2), "y1": np.ones(2)}, target="y")


def test_unknown_description_is_rejected() -> None:
    with pytest.raises(DataError, match="'w'"):
        AgentContext(data={"y": np.ones(2)}, target="y", variable_descriptions={"w": "?"})


def test_nan_is_allowed_as_missing_value() -> None:
    context = AgentContext(data={"x": np.array([1.0, np.nan]), "y": np.ones(2)}, target="y")
    assert context.schema()["variables"]["x"]["n_missing"] == 1


def test_failed_commit_leaves_context_unchanged() -> None:
    context = make_context()
    with pytest.raises(DataError):
        context.commit_data({"y": np.ones(3), "x": np.ones(4)}, target="y")
    assert context.revision == 0
    assert context.feature_names() == ("x", "z")


# --------------------------------------------------------------------- reading


def test_names_and_accessors() -> None:
    context = make_context(variable_descriptions={"x": "input"})
    assert context.target == "y"
    assert context.variable_names() == ("x", "z", "y")
    assert context.feature_names() == ("x", "z")
    assert context.axis_names() == ()
    assert context.n_samples == 20
    assert context.variable_descriptions == {"x": "input", "z": "", "y": ""}
    assert context.feature_matrix().shape == (20, 2)
    np.testing.assert_array_equal(context.target_values(), context.data["y"])


def test_data_is_read_only_and_copied() -> None:
    source = np.arange(4.0)
    context = AgentContext(data={"y": source}, target="y")
    source[0] = 99.0
    assert context.data["y"][0] == 0.0
    with pytest.raises(ValueError):
        context.data["y"][0] = 1.0
    with pytest.raises(TypeError):
        context.data["w"] = np.ones(4)  # type: ignore[index]


def test_schema_is_json_serialisable() -> None:
    context = make_context(variable_descriptions={"y": "response"})
    schema = context.schema()
    text = json.dumps(schema, allow_nan=False)
    assert json.loads(text)["variables"]["y"] == {
        "role": "target", "shape": [20], "dtype": "float64", "axes": [],
        "description": "response", "n_missing": 0,
    }
    assert schema["target"] == "y" and schema["n_samples"] == 20 and schema["revision"] == 0


def test_empty_context_is_allowed_until_data_arrives() -> None:
    context = AgentContext()
    assert context.n_samples == 0 and context.feature_names() == ()
    with pytest.raises(DataError, match="needs a target"):
        context.target_values()


# --------------------------------------------------------------------- commits


def test_every_commit_method_bumps_the_revision() -> None:
    context = make_context()
    assert context.revision == 0
    summary = context.commit_data({"a": np.ones(5), "y": np.arange(5.0)}, target="y")
    assert summary["revision"] == context.revision == 1
    assert context.add_features({"b": np.zeros(5)})["revision"] == 2
    assert context.update_selection(target="y", features=["b"])["revision"] == 3
    loaded = {"data": {"q": np.ones(3), "y": np.ones(3)}, "variable_descriptions": {},
              "target": "y"}
    assert context.commit_context_data(loaded)["revision"] == 4


def test_commit_data_selects_columns_in_feature_order() -> None:
    context = AgentContext()
    data = {"a": np.ones(3), "b": np.zeros(3), "y": np.arange(3.0), "c": np.ones(3)}
    summary = context.commit_data(data, target="y", features=["c", "a"],
                                  variable_descriptions={"a": "first"})
    assert context.feature_names() == ("c", "a")
    assert summary == {"revision": 1, "target": "y", "features": ["c", "a"], "n_samples": 3,
                       "columns": ["c", "a", "y"]}
    assert context.variable_descriptions["a"] == "first"


def test_commit_data_without_features_keeps_every_column() -> None:
    context = AgentContext()
    context.commit_data({"y": np.ones(2), "a": np.ones(2), "b": np.ones(2)}, target="y")
    assert context.feature_names() == ("a", "b")


def test_commit_data_unknown_feature_names_it() -> None:
    with pytest.raises(DataError, match="'xx'") as info:
        make_context().commit_data({"x": np.ones(2), "y": np.ones(2)}, target="y", features=["xx"])
    assert info.value.variable == "xx"


def test_add_features_keeps_target_and_reports_replacements() -> None:
    context = make_context()
    summary = context.add_features({"x2": context.data["x"] ** 2, "z": np.ones(20)},
                                   descriptions={"x2": "x squared"})
    assert summary["added"] == ["x2"] and summary["replaced"] == ["z"]
    assert context.feature_names() == ("x", "z", "x2")
    assert context.variable_descriptions["x2"] == "x squared"


@pytest.mark.parametrize(
    ("features", "phrase"),
    [
        pytest.param({"y": np.ones(20)}, "target", id="named-like-target"),
        pytest.param({"w": np.ones(19)}, "19 samples", id="misaligned"),
        pytest.param({}, "at least one", id="empty"),
    ],
)
def test_add_features_rejects(features: dict, phrase: str) -> None:
    with pytest.raises(DataError, match=phrase):
        make_context().add_features(features)


def test_add_features_needs_a_target() -> None:
    with pytest.raises(ValueError, match="needs a target"):
        AgentContext().add_features({"a": np.ones(2)})


def test_update_selection_drops_other_variables() -> None:
    context = make_context()
    summary = context.update_selection(target="z", features=["x"],
                                       variable_descriptions={"z": "index"})
    assert summary["dropped"] == ["y"] and summary["target"] == "z"
    assert set(context.data) == {"x", "z"}
    assert context.variable_descriptions["z"] == "index"
    with pytest.raises(DataError, match="Did you mean 'x'"):
        context.update_selection(target="z", features=["xx"])


def test_commit_context_data_keeps_current_target_when_present() -> None:
    context = make_context()
    summary = context.commit_context_data(
        {"data": {"y": np.ones(4), "u": np.ones(4)}, "variable_descriptions": {"u": "input"}}
    )
    assert summary["target"] == "y" and summary["variables"] == ["y", "u"]
    context.commit_context_data({"data": {"v": np.ones(2)}, "variable_descriptions": {}})
    assert context.target is None


# ---------------------------------------------------------------- misc, pickle


def test_args_are_read_not_mutated() -> None:
    args = argparse.Namespace(validation_fraction=0.25, other="kept")
    context = make_context(args=args)
    assert context.settings().validation_fraction == 0.25
    assert vars(args) == {"validation_fraction": 0.25, "other": "kept"}


@pytest.mark.parametrize(
    ("args", "setting"),
    [
        pytest.param({"validation_fraction": 1.0}, "validation_fraction", id="fraction-1"),
        pytest.param({"validation_fraction": -0.1}, "validation_fraction", id="fraction-negative"),
        pytest.param({"validation_fraction": "half"}, "validation_fraction", id="fraction-text"),
        pytest.param({"split_by": "randm"}, "split_by", id="split-by-typo"),
        pytest.param({"split_random_state": 1.5}, "split_random_state", id="seed-float"),
        pytest.param({"fit_constants": "yes"}, "fit_constants", id="fit-constants-text"),
    ],
)
def test_invalid_settings_raise_configuration_error(args: dict, setting: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        make_context(args=SimpleNamespace(**args))
    assert info.value.setting == setting
    assert "Got" in str(info.value)


def test_fraction_error_names_the_allowed_range() -> None:
    with pytest.raises(ConfigurationError, match=r"\[0, 1\)"):
        make_context(args={"validation_fraction": 1.5})


def test_split_by_typo_suggests_choice() -> None:
    with pytest.raises(ConfigurationError, match="Did you mean 'random'"):
        make_context(args={"split_by": "randm"})


def test_context_pickles_without_its_lock() -> None:
    context = make_context(args=argparse.Namespace(validation_fraction=0.5))
    _ = context.train_split
    clone = pickle.loads(pickle.dumps(context))
    assert clone.revision == context.revision
    np.testing.assert_array_equal(clone.train_split.data["x"], context.train_split.data["x"])


def test_workspace_object_with_path(tmp_path) -> None:
    context = make_context(workspace=SimpleNamespace(path=tmp_path))
    assert context.workspace_path == tmp_path
