"""evaluate_formula (alias evaluate) and submit_formula: score a formula, optionally fitted."""

from __future__ import annotations

from typing import Any

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool


class _FormulaEvaluation(FormulaTool):
    """Shared body of evaluate and submit_formula."""

    def score(self, f: str, y: str | None, fit: bool, show_diagnostics: bool) -> dict[str, Any]:
        formula, target = self._formula_and_target(f, y)
        return self.evaluate_formula(formula, target, fit=fit, show_diagnostics=show_diagnostics)

    def _formula_and_target(self, f: str, y: str | None) -> tuple[engine.Expression, DataTerm]:
        """Parse ``f``; an equation ``lhs = rhs`` names the target unless ``y`` does."""
        text = self.normalize_formula(f)
        try:
            equation = engine.parse_equation(text)
        except engine.EngineError as error:
            raise ToolArgumentError(f"The 'f' parameter of {self.metadata.name} is not a formula "
                                    f"the engine accepts: {error}", parameter="f") from None
        self.check_names(equation.rhs, "f")
        if equation.lhs is None:
            return equation.rhs, self.target_term(y)
        lhs = engine.to_str(equation.lhs)
        target = self.target_term(lhs if y is None else y)
        if y is not None and target.text != self.target_term(lhs).text:
            raise ToolArgumentError(f"The formula's left side {lhs!r} differs from y={y!r}; "
                                    "give one of them.", parameter="y")
        return equation.rhs, target


@BaseTool.register("evaluate_formula", aliases=("evaluate",))
class EvaluateTool(_FormulaEvaluation):
    """Score a formula on the train and validation splits."""

    def execute(self, f: str, y: str | None = None, fit: bool = False,
                show_diagnostics: bool = True) -> dict[str, Any]:
        """Score a formula against the data: MSE, R2 and more on the train and validation splits.

        Use it to test a hypothesis. Write free constants as param("a") and set
        fit=true to fit them on the training split first; fit=true also refits
        the formula's numbers, except integer exponents, integers from -2 to 2,
        pi and e. The result is a candidate when y is the target and the formula
        does not use the target; for y="log(T)" and similar invertible
        transforms of the target T, the formula solved for T is scored too and
        offered as the candidate.

        Args:
            f: Formula, e.g. 'param("a")*exp(-param("b")*x1) + 0.5*x2'. Functions: sin,
                cos, tan, exp, log, sqrt, abs, tanh, sigmoid and more; ^ or ** for powers;
                pi and e are constants. "log(y) = ..." also sets y.
            y: Target variable or expression such as "log(y)" or "y/x1". Default: the target.
            fit: Fit param("...") parameters and numeric constants (not integer exponents,
                integers -2..2, pi or e) on the training split before scoring.
            show_diagnostics: Add residual diagnostics (worst rows, residual correlations).
        """
        return self.score(f, y, fit, show_diagnostics)


@BaseTool.register("submit_formula")
class SubmitFormulaTool(_FormulaEvaluation):
    """State the final answer: evaluate a formula and mark it submitted."""

    def execute(self, f: str, y: str | None = None, fit: bool = False,
                show_diagnostics: bool = True) -> dict[str, Any]:
        """Submit your final formula for the target: scored like evaluate_formula, and submitted.

        Use it once you are confident. Arguments are those of evaluate_formula.

        Args:
            f: The final formula, e.g. "2.5*x1**2 + sin(x2)"; param("a") with fit=true
                fits constants first.
            y: Target expression when it is not the target itself (the formula is then
                solved for the target when possible). Default: the target.
            fit: Fit param("...") parameters and numeric constants (not integer exponents,
                integers -2..2, pi or e) on the training split first.
            show_diagnostics: Add residual diagnostics.
        """
        result = self.score(f, y, fit, show_diagnostics)
        result["submitted"] = True
        for alternative in result.get("all_formulas", []):
            alternative["submitted"] = bool(alternative.get("is_candidate"))
        return result
