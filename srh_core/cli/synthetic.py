"""A suite-style problem from an equation typed on the command line.

``srh run --equation "x1**2 + 2*x1*x2"`` becomes a :class:`Problem` (the same
object as a suite entry, so sampling and judging follow the suite protocol).
The text is parsed by ``srh_engine`` only; it is never evaluated as Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import srh_engine as engine
from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.problems import Problem, VariableRange

CHECK_SAMPLES = 200
"""Points the equation is checked on before a run (finite values required)."""


def synthetic_problem(equation: str, *, features: Sequence[str] | None, target: str | None,
                      x_low: float, x_high: float) -> Problem:
    """The problem ``target = equation`` over ``features`` drawn from U[x_low, x_high].

    Args:
        equation: Formula text, optionally ``name = formula`` (the name is the target).
        features: Variable names; None uses the equation's symbols. Names the
            equation does not use are distractors.
        target: Target name (default: the equation's left side, else "y").
        x_low: Lower end of every variable's range.
        x_high: Upper end (greater than ``x_low``).

    Raises:
        ConfigurationError: Bad text, names or range, or an equation that is not
            finite on the range.
    """
    if not (np.isfinite(x_low) and np.isfinite(x_high) and x_low < x_high):
        raise ConfigurationError(f"--x-low must be below --x-high (both finite); got "
                                 f"{x_low} and {x_high}.", setting="x_low")
    rhs, output = _parsed(equation, target)
    used = list(engine.symbols(rhs))
    names = list(features) if features is not None else used
    _check_names(names, used, output)
    problem = Problem(name="synthetic", id="synthetic", output=output,
                      formula=engine.to_str(rhs),
                      variables=tuple(VariableRange(name, x_low, x_high) for name in names))
    _check_finite(problem)
    return problem


def _parsed(equation: str, target: str | None) -> tuple[engine.Expression, str]:
    try:
        parsed = engine.parse_equation(equation)
    except engine.EngineError as error:
        raise ConfigurationError(f"--equation is not a formula the engine accepts: {error}",
                                 setting="equation") from None
    if parsed.lhs is None:
        return parsed.rhs, target or "y"
    if not isinstance(parsed.lhs, engine.Symbol):
        raise ConfigurationError("The left side of --equation must be the target's name, "
                                 f"e.g. 'y = x1*x2'; got {engine.to_str(parsed.lhs)!r}.",
                                 setting="equation")
    if target is not None and target != parsed.lhs.name:
        raise ConfigurationError(f"--target {target!r} differs from the equation's left side "
                                 f"{parsed.lhs.name!r}; give one of them.", setting="target")
    return parsed.rhs, parsed.lhs.name


def _check_names(names: Sequence[str], used: Sequence[str], output: str) -> None:
    if not used:
        raise ConfigurationError("--equation uses no variable; write a formula of the "
                                 "features, e.g. 'x1**2 + 2*x1*x2'.", setting="equation")
    invalid = [name for name in names if not name.isidentifier()]
    if invalid:
        raise ConfigurationError(f"--features names must be identifiers; got {invalid[0]!r}.",
                                 setting="features")
    missing = [name for name in used if name not in names]
    if missing:
        raise ConfigurationError(
            f"--equation uses {missing[0]!r}, which is not in --features "
            f"{','.join(names)}.{did_you_mean(missing[0], names)}", setting="features")
    if output in names:
        raise ConfigurationError(f"The target {output!r} is also a feature; name it "
                                 "differently (--target).", setting="target")
    if len(set(names)) != len(names):
        raise ConfigurationError(f"--features repeats a name: {','.join(names)}.",
                                 setting="features")


def _check_finite(problem: Problem) -> None:
    _, y = problem.sample(CHECK_SAMPLES, seed=0)
    bad = int(np.sum(~np.isfinite(y)))
    if bad:
        raise ConfigurationError(
            f"--equation is not finite on {bad} of {CHECK_SAMPLES} points drawn from "
            f"[{problem.variables[0].low:g}, {problem.variables[0].high:g}]; choose a range "
            "with --x-low/--x-high where it is defined.", setting="equation")
