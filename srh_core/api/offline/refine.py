"""Refinements that start from a power law which almost fitted.

A product of powers that explains most of a target but not all of it often
misses one constant: an additive offset (``a + b*x**p``), an offset under a
square root (``sqrt(a + b*x**p)``, as in ``sqrt(1 + ...)``), or a constant
factor in front of an exponential form (``c*exp(-x**2)`` fitted as ``log(T)``
gives ``log(c) - x**2``, which no power law matches; likewise ``c*(exp(u) - 1)``
and ``c/(exp(u) - 1)``). Each refinement writes the suspected formula with the
reported exponents (their free estimates) as starting values, or, without a
report, exponents of +-1 oriented by each variable's slope, and asks
``evaluate`` to fit every constant and exponent jointly.
"""

from __future__ import annotations

from dataclasses import dataclass

from srh_core.api.offline.factors import Factorization, power_law_report
from srh_core.api.offline.moves import Move, single_signed
from srh_core.api.offline.reader import ConversationView, PowerLawReport
from srh_core.api.offline.reduced import Reduced

FREE_NUDGE = 1e-4
"""Added to an integer starting exponent so that the fit treats it as free."""

OFFSET_TIER = 1.6
EXPONENTIAL_PREFACTOR_TIER = 1.2
EXPONENTIAL_TEMPLATE_TIER = 1.9


def fitted_monomial(report: PowerLawReport, scale: float = 1.0, power: float = 1.0) -> str:
    """``b*x**p*y**q`` starting from the free estimates of the exponents (the interval
    centres, not the snapped values: a snapped integer would stay fixed in the fit)."""
    factors = [f"param(\"b\", {scale:.8g})"]
    for name, exponent in report.exponents.items():
        value = round(exponent.centre * power, 6)
        if value == 0:
            continue
        if float(value).is_integer():
            value += FREE_NUDGE  # an integer exponent would be held fixed by the fit
        factors.append(f"{name}**({value:.8g})" if value < 0 else f"{name}**{value:.8g}")
    return "*".join(factors)


def offset_moves(view: ConversationView) -> list[Move]:
    """Offset refinements of the target's own power law (additive, or under a root)."""
    if view.target is None or not single_signed(view.target):
        return []
    moves = []
    report = power_law_report(view)
    if report is not None and report.scale is not None and not report.exact:
        moves.append(Move("evaluate_formula", {"f": "param(\"a\", 0) + " + fitted_monomial(
            report, report.scale), "fit": True}, OFFSET_TIER,
            "the power law may miss an additive constant"))
        root = f"sqrt(param(\"a\", 0) + {fitted_monomial(report, report.scale ** 2, 2.0)})"
        moves.append(Move("evaluate_formula", {"f": root, "fit": True}, OFFSET_TIER + 0.2,
                          "the power law may sit under a square root with a constant"))
    return moves


@dataclass(frozen=True, slots=True)
class ExponentialForm:
    """``Z = form(u)`` with ``u = b*monomial``: the power law that linearises it, the
    formula with the monomial's place marked, and how the template orients exponents.

    Attributes:
        linearised: Text of the power-law target, ``{z}``/``{zi}`` for Z and 1/Z.
        formula: The fitted formula with ``{u}`` for ``b*monomial``.
        sign: Starting ``b``; each template exponent starts at ``sign * orient`` times
            the sign of the variable's slope.
        orient: +1 when Z grows with u, -1 when it shrinks.
        why: The reason shown.
    """

    linearised: str
    formula: str
    sign: float
    orient: float
    why: str


EXPONENTIAL_FORMS = (
    ExponentialForm("log({z})", "exp(param(\"a\", 0) + {u})", -1.0, 1.0,
                    "a constant times an exponential"),
    ExponentialForm("log(1 + {z})", "param(\"c\", 1)*(exp({u}) - 1)", 1.0, 1.0,
                    "a constant times exp(product of powers) - 1"),
    ExponentialForm("log(1 + {zi})", "param(\"c\", 1)/(exp({u}) - 1)", 1.0, -1.0,
                    "a constant over exp(product of powers) - 1"),
)


def prefactor_moves(view: ConversationView, factorization: Factorization) -> list[Move]:
    """``M * c * g(exp(b*monomial))`` for each exponential form: a constant factor that
    keeps the linearising power law from fitting exactly.

    The exponents of an inexact power law of the linearised target start the fit;
    without one (not run yet, or failed because of the constant) each exponent starts
    at -1 or +1, oriented by the variable's slope.
    """
    if view.target is None or not single_signed(view.target):
        return []
    reduced = Reduced.of(view.target.name, factorization)
    moves = []
    for form in EXPONENTIAL_FORMS:
        report = view.power_laws.get(form.linearised.format(z=reduced.z, zi=reduced.z_inverse))
        tier = EXPONENTIAL_PREFACTOR_TIER
        if report is not None and report.scale is not None and report.exponents \
                and not report.exact:
            monomial = fitted_monomial(report, report.scale)
        elif report is None:
            monomial = _signed_template(view, factorization, form)
            tier = EXPONENTIAL_TEMPLATE_TIER
        else:
            continue
        if monomial:
            inner = form.formula.format(u=monomial)
            formula = inner if reduced.trivial else f"{factorization.monomial}*{inner}"
            moves.append(Move("evaluate_formula", {"f": formula, "fit": True}, tier,
                              f"{reduced.z} may be {form.why}"))
    return moves


def _signed_template(view: ConversationView, factorization: Factorization,
                     form: ExponentialForm) -> str:
    """``param("b", sign)*x**(+-1)*...``: each exponent oriented by the variable's slope."""
    factors = []
    for name in factorization.rest:
        feature, slope = view.feature(name), factorization.slope(name)
        if feature is None or not feature.positive:
            continue
        rising = 1.0 if slope is None or slope > 0 else -1.0
        exponent = form.sign * form.orient * rising * (1 + FREE_NUDGE)  # not integers: fitted
        factors.append(f"{name}**({exponent:.6g})")
    return "*".join([f"param(\"b\", {form.sign:g})", *factors]) if factors else ""
