"""Nodes: immutability, equality and hashing, builders, operators, validation."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest

import srh_engine
from srh_engine import (
    Binary,
    Expression,
    ExpressionError,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    Unary,
    Variable,
    function,
    grouped_param,
    param,
    parse,
)

x = Symbol("x")

SAMPLES = [
    Number(2), Number(-1.5), x, Parameter("a"), Parameter("a", 2.0),
    Binary("+", x, Number(1)), Unary("-", x), Function("sin", (x,)),
    Function("arctan2", (x, Number(1))), GroupedParameter(Symbol("g"), "k", {1: 2.0}, 0.5),
]


@pytest.mark.parametrize("node", SAMPLES, ids=[type(n).__name__ for n in SAMPLES])
def test_rebuilding_from_fields_gives_an_equal_node(node: Expression) -> None:
    fields = {f.name: getattr(node, f.name) for f in dataclasses.fields(node)}
    rebuilt = type(node)(**fields)
    assert rebuilt == node and hash(rebuilt) == hash(node)
    assert node.with_operands(node.operands) == node


@pytest.mark.parametrize("node", SAMPLES, ids=[type(n).__name__ for n in SAMPLES])
def test_nodes_are_frozen_and_slotted(node: Expression) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(node, dataclasses.fields(node)[0].name, None)
    assert not hasattr(node, "__dict__")


def test_equal_trees_deduplicate() -> None:
    trees = {parse("x + 1"), parse("x+1"), Binary("+", Symbol("x"), Number(1)), parse("x - 1")}
    assert len(trees) == 2


def test_grouped_values_are_stored_hashably_and_order_free() -> None:
    first = GroupedParameter(Symbol("g"), "k", {"b": 2, "a": 1})
    second = GroupedParameter(Symbol("g"), "k", [("a", 1.0), ("b", 2.0)])
    assert first == second and hash(first) == hash(second)
    assert first.value == (("a", 1.0), ("b", 2.0))
    assert GroupedParameter(Symbol("g"), "k", {np.int64(3): 1.0}).value == ((3, 1.0),)


def test_symbol_bound_value_is_not_part_of_identity() -> None:
    assert Symbol("x", value=np.arange(3)) == Symbol("x")
    assert hash(Symbol("x", value=np.arange(3))) == hash(Symbol("x"))
    assert Variable is Symbol


def test_python_operators_build_nodes() -> None:
    assert x + 1 == Binary("+", x, Number(1))
    assert 2 * x == Binary("*", Number(2), x)
    assert -x == Unary("-", x)
    assert +x is x
    assert x**2 == Binary("**", x, Number(2))
    assert 1 / x == Binary("/", Number(1), x)
    assert x - np.float64(0.5) == Binary("-", x, Number(0.5))
    assert 2 ** x == Binary("**", Number(2), x)


def test_operators_with_unsupported_operands_raise_type_error() -> None:
    with pytest.raises(TypeError):
        x + "a"  # noqa: B018
    with pytest.raises(TypeError):
        np.arange(3) + x  # noqa: B018


def test_builders() -> None:
    assert param("a", 1) == Parameter("a", 1.0)
    assert grouped_param(Symbol("g"), name="k") == GroupedParameter(Symbol("g"), "k")
    assert function("ln", x) == Function("log", (x,))
    assert srh_engine.sin(x) == Function("sin", (x,))
    assert srh_engine.inv(2) == Function("inv", (Number(2),))
    assert srh_engine.abs(x).name == "abs"


def test_numbers_are_normalised_to_python_types() -> None:
    assert type(Number(np.float64(1.5)).value) is float
    assert type(Number(np.int32(3)).value) is int
    assert repr(Number(np.float64(1.5))) == "Number(value=1.5)"


INVALID = [
    (lambda: Number(math.inf), "finite"),
    (lambda: Number(math.nan), "finite"),
    (lambda: Number(True), "int or float"),
    (lambda: Number("1"), "int or float"),
    (lambda: Symbol("not valid"), "identifier"),
    (lambda: Parameter("a", math.nan), "finite"),
    (lambda: Binary("%", x, x), "operator"),
    (lambda: Binary("+", x, 1), "Expression"),
    (lambda: Unary("+", x), "'-'"),
    (lambda: Function("foo", (x,)), "name must be one of"),
    (lambda: Function("sin", (x, x)), "takes 1 argument"),
    (lambda: GroupedParameter(x, "k", {1: "a"}), "int or float"),
]


@pytest.mark.parametrize(("build", "message"), INVALID, ids=[m for _, m in INVALID])
def test_invalid_nodes_raise_expression_error(build, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        build()


def test_public_api_is_declared() -> None:
    assert set(srh_engine.__all__) <= set(dir(srh_engine))
    for name in ("parse", "parse_equation", "evaluate", "fit", "FitResult", "canonical_key",
                 "complexity", "symbols", "to_str", "render", "fold_constants"):
        assert name in srh_engine.__all__


def test_import_is_light_and_has_no_side_effects() -> None:
    code = ("import sys, srh_engine; "
            "print(sorted(m for m in ('numpy', 'scipy', 'sympy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
    assert result.stderr == ""


def test_nodes_and_fit_results_pickle() -> None:
    import pickle

    expression = parse('param("a", 1.5)*sin(x) + grouped_param(g, name="k", value={1: 2.0})')
    assert pickle.loads(pickle.dumps(expression)) == expression
    result = parse('param("a")*x').fit({"x": np.array([1.0, 2.0])}, np.array([2.0, 4.0]))
    assert pickle.loads(pickle.dumps(result)).parameters == result.parameters
