"""Forward-mode Jacobian against central finite differences, for every rule."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine import FUNCTIONS, Expression, evaluate, parse
from srh_engine.derivative import DERIVATIVES, JacobianEnv, jacobian
from srh_engine.evaluation import EVALUATORS

X = np.linspace(0.15, 0.85, 9)
THETA = {"a": 0.7, "b": 0.2}


def _numeric_jacobian(expression: Expression, data: dict[str, np.ndarray]) -> np.ndarray:
    columns = []
    for name in THETA:
        step = 1e-6 * max(1.0, abs(THETA[name]))
        up = evaluate(expression, data, parameters={**THETA, name: THETA[name] + step})
        down = evaluate(expression, data, parameters={**THETA, name: THETA[name] - step})
        columns.append(np.broadcast_to((up - down) / (2 * step), X.shape))
    return np.stack(columns, axis=1)


def _analytic_jacobian(expression: Expression, data: dict[str, np.ndarray]) -> np.ndarray:
    env = JacobianEnv(data, dict(THETA))
    env.index = {name: k for k, name in enumerate(THETA)}
    with np.errstate(all="ignore"):
        value, transposed = jacobian(expression, env, X.shape, len(THETA))
    matrix = transposed.T
    np.testing.assert_allclose(np.broadcast_to(value, X.shape), evaluate(expression, data,
                                                                         parameters=THETA))
    return matrix


UNARY = sorted(name for name, spec in FUNCTIONS.items() if spec.arity == 1)
FORMULAS = [
    *(f'{name}(param("a")*x + param("b"))' for name in UNARY),
    'arctan2(param("a")*x, param("b") + x)',
    'hypot(param("a")*x, param("b"))',
    'param("a")*x + param("b")',
    'param("a") - x*param("b")',
    'x/param("a") + param("b")/x',
    'x**param("a") + param("b")**x',
    '(param("a")*x)**2 - (param("b")*x)**-1',
    'param("a")**param("b") * x',
    '-param("a")*x - -param("b")',
    'exp(-param("a")*x**2) * cos(param("b")/x)',
    'sigmoid(param("a")*x) * log(param("b") + x)',
]


@pytest.mark.parametrize("source", FORMULAS)
def test_jacobian_matches_finite_differences(source: str) -> None:
    expression = parse(source)
    data = {"x": X}
    np.testing.assert_allclose(_analytic_jacobian(expression, data),
                               _numeric_jacobian(expression, data), rtol=2e-5, atol=1e-7)


def test_subtree_without_parameters_has_no_gradient() -> None:
    expression = parse('sin(x)*exp(x) + param("a")')
    matrix = _analytic_jacobian(expression, {"x": X})
    np.testing.assert_array_equal(matrix[:, 0], 1.0)
    np.testing.assert_array_equal(matrix[:, 1], 0.0)


def test_every_node_type_has_a_derivative_rule() -> None:
    assert set(DERIVATIVES) == set(EVALUATORS)
