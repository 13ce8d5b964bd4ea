"""Evaluation: broadcasting, scalars, domain errors, functions, typed errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from srh_engine import (
    FUNCTIONS,
    EvaluationError,
    GroupedParameter,
    Parameter,
    Symbol,
    evaluate,
    function,
    parse,
)
from srh_engine.evaluation import EVALUATORS

X = np.linspace(-3.0, 3.0, 13)


def test_vectorised_with_scalar_broadcast() -> None:
    result = parse("a*x + b").evaluate({"x": X, "a": 2.0, "b": np.float32(1.0)})
    assert isinstance(result, np.ndarray) and result.dtype == np.float64
    np.testing.assert_array_equal(result, 2.0 * X + 1.0)


def test_all_scalar_inputs_give_a_float() -> None:
    assert evaluate(parse("x**2 + 1"), {"x": 3}) == 10.0
    assert isinstance(evaluate(parse("2*pi"), {}), float)


def test_integer_data_and_lists_are_converted() -> None:
    np.testing.assert_array_equal(parse("x**-1").evaluate({"x": [1, 2, 4]}), [1.0, 0.5, 0.25])


def test_arrays_broadcast_against_each_other() -> None:
    result = parse("x*y").evaluate({"x": np.arange(3.0)[:, None], "y": np.arange(4.0)})
    assert result.shape == (3, 4)


def test_symbol_only_expression_returns_a_copy() -> None:
    data = np.arange(3.0)
    result = parse("x").evaluate({"x": data})
    result[0] = 99.0
    assert data[0] == 0.0


def test_input_arrays_are_never_modified() -> None:
    data = {"x": X.copy(), "y": X.copy() + 1}
    parse("(x + y)*(x - y) + sin(x*y) - -x").evaluate(data)
    np.testing.assert_array_equal(data["x"], X)
    np.testing.assert_array_equal(data["y"], X + 1)


DOMAIN_ERRORS = [
    "log(x)", "sqrt(x)", "1/x", "x**-1", "arcsin(x)", "arccos(x)", "log10(x)",
    "exp(1000*x)", "(-8)**(1/3)", "0**-1", "inv(x - x)", "cot(0*x)", "csc(x - x)",
    "x**0.5", "sinh(1000*x)", "cosh(x*1000)", "10**300*10**300*x",
]


@pytest.mark.parametrize("source", DOMAIN_ERRORS)
def test_domain_errors_give_nan_or_inf_silently(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = parse(source).evaluate({"x": X})
    assert np.shape(result) in ((), X.shape)


def test_domain_error_in_scalar_arithmetic() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert evaluate(parse("1/0")) == np.inf
        assert np.isnan(evaluate(parse("0/0")))
        assert evaluate(parse("x**10000"), {"x": 2.0}) == np.inf


REFERENCE = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh,
    "cosh": np.cosh, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan,
    "exp": np.exp, "log": np.log, "log10": np.log10, "sqrt": np.sqrt, "abs": np.abs,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "sign": np.sign,
    "sec": lambda v: 1 / np.cos(v), "sech": lambda v: 1 / np.cosh(v),
    "csc": lambda v: 1 / np.sin(v), "cot": lambda v: np.cos(v) / np.sin(v),
    "inv": lambda v: 1 / v,
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_unary_function_values(name: str) -> None:
    values = np.linspace(-0.95, 2.5, 29)
    with np.errstate(all="ignore"):
        expected = REFERENCE[name](values)
    np.testing.assert_allclose(function(name, Symbol("x")).evaluate({"x": values}), expected,
                               rtol=1e-12, atol=1e-300)


def test_binary_function_values() -> None:
    data = {"x": np.array([1.0, -2.0]), "y": np.array([3.0, 0.5])}
    np.testing.assert_allclose(parse("arctan2(y, x)").evaluate(data), np.arctan2([3, 0.5],
                                                                                  [1, -2]))
    np.testing.assert_allclose(parse("hypot(x, y)").evaluate(data), np.hypot([1, -2], [3, 0.5]))


def test_every_supported_function_is_covered() -> None:
    assert set(REFERENCE) | {"arctan2", "hypot"} == set(FUNCTIONS)


def test_sigmoid_is_numerically_stable() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = parse("sigmoid(x)").evaluate({"x": np.array([-1000.0, 0.0, 1000.0])})
    np.testing.assert_array_equal(result, [0.0, 0.5, 1.0])


def test_unknown_symbol_is_a_typed_error_with_suggestion() -> None:
    with pytest.raises(EvaluationError, match="did you mean 'x[13]'") as caught:
        parse("x1 + x2").evaluate({"x1": X, "x3": X})
    assert caught.value.name == "x2"
    assert caught.value.reason == "unknown symbol"


def test_unbound_parameter_is_a_typed_error() -> None:
    with pytest.raises(EvaluationError, match="parameter 'a' has no value") as caught:
        parse('param("a")*x').evaluate({"x": X})
    assert caught.value.reason == "unbound parameter"


def test_parameters_argument_overrides_bound_values() -> None:
    expression = parse('param("a", 1.0)*x')
    np.testing.assert_array_equal(expression.evaluate({"x": X}, parameters={"a": 3.0}), 3 * X)
    np.testing.assert_array_equal(expression.evaluate({"x": X}), X)


def test_symbol_bound_value_is_used_when_values_lack_it() -> None:
    assert evaluate(Symbol("k", value=2.0) * Symbol("x"), {"x": 3.0}) == 6.0


def test_non_numeric_data_is_a_typed_error() -> None:
    with pytest.raises(EvaluationError, match="must be numeric"):
        parse("x + 1").evaluate({"x": np.array(["a", "b"])})


def test_grouped_parameter_evaluation() -> None:
    labels = np.array(["a", "b", "a", "c"])
    node = GroupedParameter(Symbol("g"), "k", {"a": 1.0, "b": 2.0}, default=-1.0)
    result = (node * Symbol("x")).evaluate({"g": labels, "x": 2.0})
    np.testing.assert_array_equal(result, [2.0, 4.0, 2.0, -2.0])
    override = node.evaluate({"g": labels}, parameters={"k": {"c": 5.0}})
    np.testing.assert_array_equal(override, [1.0, 2.0, 1.0, 5.0])


def test_grouped_parameter_without_value_is_a_typed_error() -> None:
    with pytest.raises(EvaluationError, match="no value for categories"):
        GroupedParameter(Symbol("g"), "k").evaluate({"g": np.array([0, 1])})


def test_too_deep_programmatic_tree_is_a_typed_error() -> None:
    expression = Symbol("x")
    for _ in range(5000):
        expression = expression + 1
    with pytest.raises(EvaluationError, match="too deeply nested"):
        expression.evaluate({"x": 1.0})


def test_dispatch_table_covers_every_node_type() -> None:
    from srh_engine import (
        Aggregate,
        Binary,
        Delay,
        Function,
        Gather,
        Indexed,
        Number,
        Reduction,
        RelationLift,
        Unary,
    )

    assert set(EVALUATORS) == {Binary, Function, GroupedParameter, Number, Parameter, Symbol,
                               Unary, Delay, Indexed, Reduction, Gather, Aggregate, RelationLift}
