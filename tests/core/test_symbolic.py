"""to_sympy: every engine node and function has its SymPy counterpart, built without text."""

from __future__ import annotations

import math

import pytest
import sympy as sp

import srh_engine as engine
from srh_core.symbolic import SymbolicExportError, to_sympy
from srh_engine.functions import FUNCTIONS

POINT = {"x": 0.37, "y": 0.61}


@pytest.mark.parametrize("name", sorted(FUNCTIONS), ids=sorted(FUNCTIONS))
def test_each_function_agrees_with_the_engine(name):
    arguments = ("y", "x") if FUNCTIONS[name].arity == 2 else ("x",)
    expression = engine.parse(f"{name}({', '.join(arguments)})")
    exported = to_sympy(expression)
    value = float(exported.subs({sp.Symbol(k, real=True): v for k, v in POINT.items()}).evalf())
    assert value == pytest.approx(float(expression.evaluate(POINT)), rel=1e-12)


def test_operators_constants_and_parameters():
    expression = engine.parse('param("a", 2.5)*x**2 - x/y + -(pi*e) + param("b")')
    exported = to_sympy(expression)
    x, y, b = (sp.Symbol(name, real=True) for name in ("x", "y", "b"))
    assert sp.simplify(exported - (sp.Float(2.5) * x**2 - x / y - sp.pi * sp.E + b)) == 0
    assert to_sympy(engine.parse("3*x")).args[0] == sp.Integer(3)
    assert to_sympy(engine.parse("x"), symbols={"x": y}) == y
    assert math.isclose(float(to_sympy(engine.parse("e"))), math.e)


def test_nodes_without_a_sympy_counterpart_are_typed_errors():
    with pytest.raises(SymbolicExportError, match="GroupedParameter"):
        to_sympy(engine.parse('grouped_param(k, name="c")*x'))
