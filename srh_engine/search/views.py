"""A problem as the search sees it: views, candidates, the run's state, target transforms.

A *view* is the problem in other inputs (each an engine expression of the
original inputs: ``x_i - x_j`` as one input, or a subset of them); a
candidate (:class:`Found`) is a tree found in a view for one transform of
(what is left of) the target, with the factors or terms split off first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nodes import Binary, Expression, Function, Number, Unary
from ..transform import map_postorder
from ..units import Dimension
from .budget import Counter
from .evolution import linear_nmse
from .operators import Tree, evaluate_tree

__all__ = ["BOUNDED_INVERSES", "EXACT_NMSE", "INVERSES", "Found", "Run", "TRANSFORMS", "View",
           "all_rows_nmse", "column_values", "inverse_transform", "sample_rows",
           "target_transforms", "unfolded"]


EXACT_NMSE = 1e-13
"""A form this close (normalised MSE under linear scaling, from correlations: about 1e-16
is the floor of that formula) may be exact; :func:`.refit.exact_on_all_rows` decides on
the fitted residuals."""


@dataclass(slots=True)
class View:
    """The problem in other inputs: ``inputs[i]`` is an engine expression of the originals."""

    name: str
    inputs: list[Expression]
    columns: np.ndarray  # (rows, len(inputs))


@dataclass(slots=True)
class Found:
    """A tree found in ``view`` for ``transform`` of the target; ``nmse`` on fitness rows."""

    nmse: float
    tree: Tree
    view: View
    transform: str
    wraps: tuple[tuple[str, Expression], ...] = ()
    """Split factors or terms taken out first, outermost first: ``("add"|"mul"|"power",
    expression)``, "power" a product of power factors (its exponents are not refitted)."""


@dataclass
class Run:
    """One island's state: the target, operators, seed, what was found and the notes."""

    y: np.ndarray
    binary: tuple[str, ...]
    unary: tuple[str, ...]
    max_size: int
    seed: int
    counter: Counter = field(default_factory=Counter)
    found: list[Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    columns_by_name: dict[str, np.ndarray] = field(default_factory=dict)
    weights: np.ndarray | None = None
    """Row weights of ``y`` (all > 0, not all equal), or None: equal weights."""
    limits: tuple[Any, Any] | None = None
    """PySR's ``(nested_constraints, constraints)`` (:mod:`srh_engine.constraints`)."""
    units: dict[str, Dimension] = field(default_factory=dict)
    """The inputs' dimensions by name, where known (:mod:`.consistency`, :mod:`.invariance`)."""
    known_factors: tuple[np.ndarray, np.ndarray, dict[int, float]] | None = None
    """``(X, y, factors)``: :func:`.decomposition.power_factors` of these very arrays, found
    already (the units' reduction tests the inputs before the undivided search does)."""


TRANSFORMS = ("identity", "log", "inv", "square", "sqrt", "sin", "cos", "tan", "arctanh")
"""What the searched forms are fitted to: ``y`` or a function of it, named by that function.
The last four are inverses of bounded functions (``y = arcsin(f)``, ``arccos(f)``,
``arctan(f)``, ``tanh(f)``), tried only on a target inside their range."""

FOLDED_BELOW = 0.1
"""A bounded inverse is tried only when the target reaches this far from 0: nearer, the
function is nearly ``y`` itself and adds a near copy of the identity."""

INVERSES: dict[str, Any] = {"identity": lambda v: v, "log": np.exp, "inv": lambda v: 1.0 / v,
                            "square": np.sqrt, "sqrt": np.square, "sin": np.arcsin,
                            "cos": np.arccos, "tan": np.arctan, "arctanh": np.tanh}
"""The inverse of each target transform, on values."""


def target_transforms(y: np.ndarray) -> dict[str, np.ndarray]:
    """``y`` and the transforms of it that are finite and not constant, by name.

    ``sin`` and ``tan`` only for a target within (-pi/2, pi/2) (the range of arcsin and
    arctan), ``cos`` for one within [0, pi) (arccos), ``arctanh`` for one within (-1, 1)
    (tanh), each only when the target reaches :data:`FOLDED_BELOW` from 0.
    ``log``, ``sqrt`` and ``square`` only for a target of one sign: their inverses
    (``exp``, ``**2``, ``sqrt``) have one sign, so on a sign-changing target a form that
    fits ``y**2`` well becomes a formula of ``y`` no better than its mean, and such forms,
    ranked by their error on the transform, took the refit's places.
    """
    signed = bool(np.all(y > 0) or np.all(y < 0))
    magnitude = np.abs(y)
    found = {"identity": y}
    if signed:
        found["square"] = y * y
        found["log"] = np.log(magnitude)
        found["sqrt"] = np.sqrt(magnitude)
    if np.all(magnitude > 1e-300):
        found["inv"] = 1.0 / y
    reach = float(np.max(magnitude)) if y.size else 0.0
    if FOLDED_BELOW <= reach < np.pi / 2:
        found["sin"] = np.sin(y)
        found["tan"] = np.tan(y)
    if FOLDED_BELOW <= reach < 1.0:
        found["arctanh"] = np.arctanh(y)
    if y.size and np.min(y) >= 0 and FOLDED_BELOW <= reach < np.pi:
        found["cos"] = np.cos(y)
    return {k: v for k, v in found.items() if np.all(np.isfinite(v)) and np.std(v) > 0}


BOUNDED_INVERSES = {"sin": "arcsin", "cos": "arccos", "tan": "arctan", "arctanh": "tanh"}
"""The engine function that undoes each bounded transform."""
_FOLDS = {"arcsin": "sin", "arccos": "cos", "arctan": "tan"}
"""An inverse and the function it undoes (``arcsin(sin(w))`` is ``w`` near 0)."""


def unfolded(expression: Expression, sign: float) -> Expression:
    """``expression`` with each ``arcsin(sin(w))``, ``arccos(cos(w))`` and ``arctan(tan(w))``
    (a bounded inverse put back around a form of its own function, once the refit made
    the form's scale 1) written ``w`` (``sign`` > 0) or ``-w``. Equal only where ``w`` lies
    in the inverse's range: the caller keeps it where the values say so."""
    def unfold(node: Expression) -> Expression:
        if isinstance(node, Function) and node.name in _FOLDS:
            inner = node.arguments[0]
            if isinstance(inner, Function) and inner.name == _FOLDS[node.name]:
                return inner.arguments[0] if sign > 0 else _negated(inner.arguments[0])
        return node

    return map_postorder(expression, unfold)


def _negated(node: Expression) -> Expression:
    """``-node``, a difference turned round (``b - a``, not ``-(a - b)``)."""
    if isinstance(node, Binary) and node.operator == "-":
        return Binary("-", node.right, node.left)
    return Unary("-", node)


def inverse_transform(transform: str, scaled: Expression, sign: float) -> Expression:
    """``y`` from the scaled form of ``transform(y)``."""
    if transform == "identity":
        return scaled
    if transform == "log":
        body = Function("exp", (scaled,))
    elif transform == "inv":
        return Binary("/", Number(1), scaled)
    elif transform in BOUNDED_INVERSES:
        return Function(BOUNDED_INVERSES[transform], (scaled,))
    elif transform == "square":
        body = Function("sqrt", (scaled,))
    else:
        body = Binary("**", scaled, Number(2))
    return Unary("-", body) if sign < 0 else body


def sample_rows(n: int, count: int, rng: np.random.Generator,
                weights: np.ndarray | None = None) -> np.ndarray:
    """``count`` distinct row indices of ``n`` (all when fewer), sorted; with ``weights``
    (one per row, all > 0) drawn with chances in proportion to them, so that equal-weight
    scores on the sample follow the weighted loss."""
    if weights is None or weights.size != n or n <= count:
        return np.sort(rng.choice(n, size=min(n, count), replace=False))
    return np.sort(rng.choice(n, size=count, replace=False, p=weights / weights.sum()))


def column_values(tree: Tree, view: View) -> np.ndarray | None:
    """``tree`` on every row of ``view``; None when any value is not finite."""
    columns = [view.columns[:, i] for i in range(view.columns.shape[1])]
    with np.errstate(all="ignore"):
        values = np.broadcast_to(np.asarray(evaluate_tree(tree, columns, None), dtype=float),
                                 (view.columns.shape[0],))
    return values if np.all(np.isfinite(values)) else None


def all_rows_nmse(tree: Tree, view: View, target: np.ndarray) -> float:
    """Linear-scaling NMSE of ``tree`` against ``target`` on every row (1.0 if not finite)."""
    values = column_values(tree, view)
    if values is None:
        return 1.0
    return linear_nmse(values, target, float(np.var(target)))
