"""call_pysr: genetic-programming search with PySR, an optional backend.

Availability is checked with ``importlib.util.find_spec("pysr")`` only:
importing pysr starts Julia (and may install it on first use), which can
take minutes or hang without network, so nothing is imported at
registration. When pysr is missing the tool answers ok=False with one line.
Found formulas come back through SymPy's text form and are parsed by
``srh_engine`` like any model formula (PySR's internal feature names are
substituted by the input expressions).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool
from srh_core.tools.polynomial import subsample_rows

BINARY_OPERATORS = ("+", "-", "*", "/", "^")
UNARY_OPERATORS = ("sin", "cos", "exp", "log", "sqrt", "square", "cube", "abs", "tanh", "sign")
MIN_TIMEOUT, MAX_TIMEOUT = 5, 120
MIN_MAXSIZE, MAX_MAXSIZE = 7, 40
MIN_SAMPLES, MAX_SAMPLES = 50, 5000
MAX_ALTERNATIVES = 5
FEATURE_PREFIX = "srhfeature"


def pysr_unavailable() -> str | None:
    """Why PySR cannot run here, or None; never imports pysr (or Julia)."""
    if importlib.util.find_spec("pysr") is None:
        return ("PySR is not installed here (pip install pysr; it also needs Julia). Use "
                "call_sindy, polynomial_fit or evaluate_formula instead.")
    return None


def pysr_expression(text: str, inputs: Sequence[DataTerm]) -> engine.Expression:
    """Parse SymPy text of a PySR equation, mapping its feature names back to the inputs.

    Raises:
        engine.EngineError: The text is not a formula the engine accepts.
    """
    symbols: dict[str, Any] = {f"{FEATURE_PREFIX}{i}": term.expression
                               for i, term in enumerate(inputs)}
    symbols["E"] = engine.Number(math.e)  # SymPy's name for Euler's number
    return engine.parse(text.replace("Abs(", "abs("), symbols=symbols)


@BaseTool.register("call_pysr")
class PySRTool(FormulaTool):
    """PySR symbolic regression (optional: needs the pysr package and Julia)."""

    @classmethod
    def availability(cls) -> str | None:
        """A one-line reason when pysr is not importable here, else None."""
        return pysr_unavailable()

    def execute(
        self,
        binary_operators: list[str],
        unary_operators: list[str],
        x: list[str] | None = None,
        y: str | None = None,
        timeout: int = 30,
        maxsize: int = 25,
        max_samples: int = 500,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Search formulas by genetic programming with PySR (slow; choose operators carefully).

        Use it for nested nonlinear structure the linear fitters cannot express.
        Pick only the operators you believe the formula needs. The best formula
        is the result; up to 5 others of PySR's front are in all_formulas.

        Args:
            binary_operators: Binary operators, from "+", "-", "*", "/", "^".
            unary_operators: Unary operators (may be empty), from "sin", "cos", "exp", "log",
                "sqrt", "square", "cube", "abs", "tanh", "sign".
            x: Inputs: names or expressions. Default: every numeric feature.
            y: Target variable or expression. Default: the target.
            timeout: Search time in seconds, 5 to 120.
            maxsize: Largest formula size in nodes, 7 to 40.
            max_samples: Training rows used (evenly subsampled when there are more), 50 to 5000.
            show_diagnostics: Add residual diagnostics.
        """
        reason = self.availability()
        if reason is not None:
            raise RuntimeError(reason)
        binary = self._operators("binary_operators", binary_operators, BINARY_OPERATORS, 1)
        unary = self._operators("unary_operators", unary_operators, UNARY_OPERATORS, 0)
        seconds = self.check_int("timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT)
        size = self.check_int("maxsize", maxsize, MIN_MAXSIZE, MAX_MAXSIZE)
        limit = self.check_int("max_samples", max_samples, MIN_SAMPLES, MAX_SAMPLES)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, 1, limit=limit)
        texts = self._search(data.X[rows], data.y[rows], len(inputs), binary, unary, seconds, size)
        return self._results(texts, inputs, target, show_diagnostics)

    def _operators(self, name: str, values: Any, allowed: tuple[str, ...], minimum: int,
                   ) -> list[str]:
        if not isinstance(values, list) or not minimum <= len(values) <= len(allowed) or \
                any(value not in allowed for value in values):
            raise ToolArgumentError(f"The {name!r} parameter of call_pysr must list "
                                    f"{minimum} to {len(allowed)} of {list(allowed)}. Got "
                                    f"{values!r:.80} instead.", parameter=name)
        return list(dict.fromkeys(values))

    def _search(self, X: np.ndarray, y: np.ndarray, n_inputs: int, binary: list[str],
                unary: list[str], seconds: int, size: int) -> list[str]:
        """Run PySR; SymPy texts of its equations, lowest loss first."""
        from pysr import PySRRegressor  # slow: starts Julia

        model = PySRRegressor(binary_operators=binary, unary_operators=unary, maxsize=size,
                              timeout_in_seconds=seconds, niterations=100, verbosity=0,
                              progress=False, parallelism="serial", deterministic=True,
                              random_state=0, temp_equation_file=True)
        model.fit(X, y, variable_names=[f"{FEATURE_PREFIX}{i}" for i in range(n_inputs)])
        equations = model.equations_.sort_values("loss")
        return [str(value) for value in equations["sympy_format"]]

    def _results(self, texts: list[str], inputs: list[DataTerm], target: DataTerm,
                 show_diagnostics: bool) -> dict[str, Any]:
        formulas, skipped = [], []
        for text in texts:
            try:
                formula = pysr_expression(text, inputs)
                self.check_names(formula, "formula")  # SymPy may answer zoo, nan, oo...
                formulas.append(formula)
            except (engine.EngineError, TypeError, ToolArgumentError):
                skipped.append(text)
        if not formulas:
            return self.failed_evaluation(reason="PySR returned no formula the engine accepts")
        result = self.evaluate_formula(formulas[0], target, show_diagnostics=show_diagnostics)
        others = [self.score_formula(f, target, show_diagnostics=False)
                  for f in formulas[1:MAX_ALTERNATIVES + 1]]
        if others:
            result["all_formulas"] = [*result.get("all_formulas", []), *others]
        if skipped:
            result["warnings"].append(f"{len(skipped)} PySR formula(s) could not be parsed")
        return result
