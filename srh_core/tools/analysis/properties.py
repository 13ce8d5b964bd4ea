"""``predict_property`` (the reference's PropertyPredictorTool): shape tests on the data.

The reference predicts these properties with a trained neural network; this
tool tests them on the run's training data directly, so every answer comes
with the evidence it rests on and needs no model weights:

- a smooth surrogate of ``y`` (the polynomial surrogate of the search's
  decomposition tests, :mod:`srh_engine.search.decomposition`) gives each
  variable's partial dependence (the surrogate averaged over the data with
  that variable set to each point of a grid);
- monotonicity (increasing, decreasing, constant, non-monotonic) from the
  signs of its differences, convexity (convex, concave, affine, neither) from
  its second differences, both relative to the target's spread;
- periodicity from the binned means of ``y`` along the variable (the
  surrogate cannot represent many periods): the share of the detrended
  variance in its strongest Fourier frequency, with the period it implies;
- multiplicative separability ``y = f(x_i) * g(rest)`` per variable (on
  ``log|y|``, single-signed targets) and whether every variable splits off;
- combinations ``x_i*x_j``, ``x_i+x_j``, ``x_i-x_j``, ``x_i/x_j``: the
  periodicity test along each, and whether ``y`` depends on the pair only
  through it (the surrogate over the combined variable fits as well).

When the surrogate fits poorly (relative error above 10%) the shapes come from
binned means of the data instead (within their noise: a property shared by
every value of the other inputs shows; an interaction may hide one), and are
marked so; the periodicity and combination tests do not use the surrogate. A
combination is reported periodic only when neither of its variables is.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from srh_core.errors import ToolArgumentError
from srh_core.tools.analysis.variables import require_data
from srh_core.tools.base import BaseTool
from srh_engine.search import decomposition as dec
from srh_engine.search.decomposition import multiplicative_separable, pair_combinations

TOOL_NAME = "predict_property"
GRID = 41
PD_ROWS = 200
BINS = 48
MIN_ROWS = 30
FLAT = 1e-3  # a change below this share of y's spread is no change
PERIODIC_SHARE = 0.6
PERIODIC_VARIANCE = 0.05
MAX_COMBINED = 6
MARGINAL_BINS = 10
#: Surrogate error (relative RMS) below which its partial dependence gives the shapes: looser
#: than the decomposition tests' 5%, which decide exact splits, not signs of differences.
RELIABLE_ERROR = 0.1


def _surrogate(X: np.ndarray, y: np.ndarray) -> tuple[Any, float]:
    Xs, t = dec._rows(X, y)
    degree = dec._degree(X.shape[1], t.size)
    exponents = dec._exponents(X.shape[1], degree)
    low, high = Xs.min(axis=0), Xs.max(axis=0)
    span = np.where(high > low, high - low, 1.0)

    def scaled(Z: np.ndarray) -> np.ndarray:
        return 2.0 * (Z - low) / span - 1.0

    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(dec._design(scaled(Xs), exponents), t, rcond=None)

    def predict(Z: np.ndarray) -> np.ndarray:
        return dec._design(scaled(Z), exponents) @ coefficients

    spread = float(np.std(t))
    error = float(np.sqrt(np.mean((t - predict(Xs)) ** 2))) / spread if spread > 0 else 0.0
    return predict, error


def _partial_dependence(predict: Any, X: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(X[:, j].min(), X[:, j].max(), GRID)
    rows = X[np.linspace(0, len(X) - 1, min(PD_ROWS, len(X))).round().astype(int)]
    curve = []
    for value in grid:
        Z = rows.copy()
        Z[:, j] = value
        curve.append(float(np.mean(predict(Z))))
    return grid, np.asarray(curve)


def _monotonicity(curve: np.ndarray, tolerance: float, flat: float | None = None) -> str:
    if np.ptp(curve) <= (tolerance if flat is None else flat):
        return "constant"
    steps = np.diff(curve)
    if np.all(steps >= -tolerance):
        return "increasing"
    if np.all(steps <= tolerance):
        return "decreasing"
    return "non-monotonic"


def _convexity(curve: np.ndarray, tolerance: float) -> str:
    bends = np.diff(curve, 2)
    if np.all(np.abs(bends) <= tolerance):
        return "affine"
    if np.all(bends >= -tolerance):
        return "convex"
    if np.all(bends <= tolerance):
        return "concave"
    return "neither"


def _periodicity(u: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Strongest frequency of the binned means of ``y`` along ``u`` (detrended)."""
    edges = np.linspace(u.min(), u.max(), BINS + 1)
    which = np.clip(np.digitize(u, edges) - 1, 0, BINS - 1)
    counts = np.bincount(which, minlength=BINS)
    if np.count_nonzero(counts) < BINS * 0.75:
        return {"periodic": False, "share": 0.0, "period": None}
    sums = np.bincount(which, weights=y, minlength=BINS)
    centers = (edges[:-1] + edges[1:]) / 2
    filled = counts > 0
    means = np.interp(centers, centers[filled], sums[filled] / counts[filled])
    trend = np.polyval(np.polyfit(centers, means, 2), centers)
    wave = means - trend
    total = float(np.var(y))
    if total <= 0 or np.var(wave) < PERIODIC_VARIANCE * total:
        return {"periodic": False, "share": 0.0, "period": None}
    power = np.abs(np.fft.rfft(wave)) ** 2
    power[0] = 0.0
    k = int(np.argmax(power[2:]) + 2) if power.size > 2 else 0  # at least two cycles
    share = float(power[k] / power.sum()) if power.sum() > 0 else 0.0
    if not k or share < PERIODIC_SHARE:
        return {"periodic": False, "share": round(share, 3), "period": None}
    # the FFT's bins are whole cycles over the range: refine between the neighbours
    phase = (centers - centers[0]) / (centers[-1] - centers[0] + (edges[1] - edges[0]))
    cycles = np.linspace(k - 1, k + 1, 161)
    fit = [abs(np.sum(wave * np.exp(-2j * np.pi * f * phase))) for f in cycles]
    best = float(cycles[int(np.argmax(fit))])
    return {"periodic": True, "share": round(share, 3),
            "period": float((u.max() - u.min()) / best)}


def _marginal_curve(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Binned means of ``y`` along ``x`` and the noise a step between two of them has."""
    edges = np.quantile(x, np.linspace(0, 1, MARGINAL_BINS + 1))
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, MARGINAL_BINS - 1)
    counts = np.bincount(which, minlength=MARGINAL_BINS)
    means = np.bincount(which, weights=y, minlength=MARGINAL_BINS) / np.maximum(counts, 1)
    noise = 3.0 * float(np.std(y)) * np.sqrt(2.0 / max(1, int(counts.min())))
    return means, noise


@BaseTool.register(TOOL_NAME)
class PropertyPredictorTool(BaseTool):
    """Test the data for monotonicity, convexity, periodicity and separability."""

    def execute(self) -> dict[str, Any]:
        """Test how the target depends on each input, from the data.

        Per variable: monotonicity (increasing, decreasing, constant or
        non-monotonic), convexity (convex, concave, affine or neither),
        periodicity (with the period) and multiplicative separability
        y = f(x) * g(rest). Also tests the combinations x_i*x_j, x_i+x_j,
        x_i-x_j and x_i/x_j, since some properties appear only in a
        combination (sin(x1*x2) is periodic in x1*x2, not in x1 or x2). No
        arguments: it uses the run's training data.
        """
        train = require_data(self.context, TOOL_NAME).train_split
        names = list(train.feature_names())
        X = train.feature_matrix(names)
        y = np.asarray(train.target_values(), dtype=float)
        keep = np.all(np.isfinite(X), axis=1) & np.isfinite(y)
        X, y = X[keep], y[keep]
        if len(y) < MIN_ROWS or not names:
            raise ToolArgumentError(f"predict_property needs at least {MIN_ROWS} finite rows "
                                    f"and one input; the training data has {len(y)}.")

        predict, error = _surrogate(X, y)
        reliable = error < RELIABLE_ERROR
        scale = float(np.std(y)) or 1.0
        variables = []
        for j, name in enumerate(names):
            self.check_cancelled()
            flat = None
            if reliable:  # the surrogate's partial dependence, within the surrogate's error
                curve, basis = _partial_dependence(predict, X, j)[1], "partial dependence"
                tolerance, flat = scale * max(FLAT, error / 4), scale * max(FLAT, error)
            else:  # binned means of the data, within their noise
                (curve, tolerance), basis = _marginal_curve(X[:, j], y), "binned means"
            variables.append({
                "variable": name, "monotonicity": _monotonicity(curve, tolerance, flat),
                # bends on a fine grid drown in the tolerance: a coarser one (9 points)
                "convexity": _convexity(curve[::5] if reliable else curve, tolerance),
                "shape_from": basis,
                **_periodicity(X[:, j], y),
                "multiplicative_separable": bool(len(names) > 1
                                                 and multiplicative_separable(X, y, [j]))})
        through = {(names[i], names[j], op) for i, j, op in pair_combinations(X, y, limit=8)}
        combinations = []
        for i, j in itertools.combinations(range(len(names)), 2):
            for op, apply in (("*", np.multiply), ("+", np.add), ("-", np.subtract),
                              ("/", np.divide)):
                with np.errstate(all="ignore"):
                    u = apply(X[:, i], X[:, j])
                if not np.all(np.isfinite(u)) or np.ptp(u) == 0:
                    continue
                only = (names[i], names[j], op) in through
                alone = variables[i]["periodic"] or variables[j]["periodic"]
                found = _periodicity(u, y) if not alone else {"periodic": False, "period": None}
                if found["periodic"] or only:  # periodic only in the combination, or y's
                    # dependence on the pair goes through it
                    combinations.append({"expression": f"{names[i]}{op}{names[j]}",
                                         "periodic": found["periodic"],
                                         "period": found["period"],
                                         "depends_only_through": only})
        combinations.sort(key=lambda c: (not c["depends_only_through"], not c["periodic"]))
        separable = len(names) > 1 and all(v["multiplicative_separable"] for v in variables)
        return {"n_rows": int(len(y)), "surrogate_error": round(error, 6),
                "reliable": reliable, "variables": variables,
                "multiplicatively_separable": separable,
                "combinations": combinations[:MAX_COMBINED]}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        lines = [f"Properties of y from {result['n_rows']} training rows (surrogate relative "
                 f"error {result['surrogate_error']:.2g}"
                 + ("" if result["reliable"] else "; shapes UNRELIABLE: the surrogate fits "
                    "poorly") + "):"]
        for v in result["variables"]:
            period = (f", periodic (period ~{v['period']:.4g})" if v["periodic"]
                      else ", not periodic")
            split = ", splits off multiplicatively" if v["multiplicative_separable"] else ""
            lines.append(f"- {v['variable']}: {v['monotonicity']}, {v['convexity']}"
                         f"{period}{split}")
        if result["multiplicatively_separable"]:
            lines.append("y = f1(x1) * f2(x2) * ... (every variable splits off).")
        for c in result["combinations"]:
            notes = [note for note, on in (
                (f"periodic (period ~{c['period']:.4g})" if c["period"] else "periodic",
                 c["periodic"]), ("y depends on the pair only through it",
                                  c["depends_only_through"])) if on]
            lines.append(f"- combination {c['expression']}: {'; '.join(notes)}")
        return "\n".join(lines)


__all__ = ["PropertyPredictorTool"]
