"""The benchmark judge: SRBench's symbolic and accuracy solutions, LLM-SRBench's measures.

Symbolic solution (SRBench's rule, La Cava et al. 2021): a model whose test
R^2 exceeds 0.5 is a symbolic solution when, after every float in the
expression is rounded to 3 decimals (and any float with ``|c| < 1e-4``
becomes 0; as in SRBench's code the rounded float also carries 3 digits of
precision, ``Float(round(c, 3), 3)``),

- the difference ``truth - model`` is a constant (zero included), or
- the ratio ``model / truth`` is a non-zero constant,

first as built, then after ``sympy.simplify`` (the whole check is bounded by
``CHECK_SECONDS``: by SIGALRM on the main thread, elsewhere, as in a cluster
worker's sweep coordinator, by running it in a forked child that is killed at
the deadline; one that runs out of time is reported as such, not as a
solution). A model equal to 0 is never one. Symbols are real-valued.

The same test with the named inputs declared positive (``positive=`` of
:func:`symbolic_solution`; the benchmark passes the inputs that are positive
on every row of the problem's data) also sees the equalities that hold only
for positive values (``sqrt(a*b) = sqrt(a)*sqrt(b)``, ``sqrt(x**2) = x``,
``log(a/b) = log(a) - log(b)``): reported apart, as
``symbolic_solution_positive``, never in place of SRBench's rule. Formula text is
parsed by the engine and built node by node (:func:`srh_core.symbolic.to_sympy`),
never handed to ``sympify``.

Accuracy solution (SRBench): test R^2 > 0.999.

LLM-SRBench's data-fidelity measures on the in-domain (``_id``) and, when
given, out-of-domain (``_ood``) sets: NMSE (mean squared error over the
target's variance), MAPE, Kendall's tau, and both readings of Acc_0.1, named
apart: ``acc01_points`` (the share of points within 10% relative error) and
``acc01_problem`` (whether the worst point is within 10%). Predictions that
are NaN or infinite are failures: such a point counts as a miss and makes
NMSE, MAPE and R^2 infinite (reported as null), never dropped.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from srh_core.symbolic import SymbolicExportError, to_sympy
from srh_engine import EngineError, parse

#: SRBench checks a model symbolically only above this test R^2.
SYMBOLIC_R2_THRESHOLD = 0.5
#: SRBench's accuracy solution: test R^2 above this.
ACCURACY_R2_THRESHOLD = 0.999
#: Floats are rounded to this many decimals before the comparison.
ROUND_DECIMALS = 3
#: Floats smaller than this in magnitude become 0.
ZERO_BELOW = 1e-4
#: LLM-SRBench's tolerance for Acc_0.1.
ACC_TOLERANCE = 0.1
#: Longest the whole symbolic check (build, compare, simplify) may run, on any thread.
CHECK_SECONDS = 20.0
#: After the deadline the alarm repeats this often until the check has stopped: one
#: alarm can land where its exception is swallowed (a garbage-collector callback
#: reports it as unraisable, a library catches everything), and must not be the last.
REPEAT_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a model is a symbolic solution, and why."""

    symbolic_solution: bool
    reason: str
    difference: str | None = None
    ratio: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _OutOfTime(BaseException):
    """The deadline: a BaseException, so sympy's ``except Exception`` cannot keep it."""


def symbolic_solution(formula: str, truth: str, *, r2_test: float | None = None,
                      positive: Iterable[str] = ()) -> Verdict:
    """SRBench's symbolic-solution test of ``formula`` against the true ``truth``.

    Args:
        formula: The model, in engine syntax (numbers bound, no free parameters).
        truth: The ground-truth formula, in the same variable names.
        r2_test: The model's test R^2; SRBench checks only models above 0.5.
            None skips that gate (``srh benchmark judge`` without data).
        positive: Variables declared positive (the others are real); empty for
            SRBench's rule.
    """
    if r2_test is not None and not (np.isfinite(r2_test) and r2_test > SYMBOLIC_R2_THRESHOLD):
        return Verdict(False, f"test R^2 {_show(r2_test)} is not above "
                              f"{SYMBOLIC_R2_THRESHOLD}: not checked")
    names = frozenset(positive)
    try:
        return _bounded(lambda: _check(formula, truth, names))
    except _OutOfTime:
        return Verdict(False, f"the symbolic check ran out of its {CHECK_SECONDS:g} s")


def positive_inputs(*tables: Mapping[str, Any]) -> list[str]:
    """The variables positive on every row of every table (their values by name)."""
    names: set[str] = set.intersection(*(set(table) for table in tables)) if tables else set()
    return sorted(name for name in names
                  if all(np.all(np.asarray(table[name], dtype=float) > 0) for table in tables))


def _check(formula: str, truth: str, positive: frozenset[str] = frozenset()) -> Verdict:
    import sympy as sp

    try:
        model, true = _sympy_pair(formula, truth, positive)
    except _Unreadable as error:
        return Verdict(False, str(error))
    if model == 0:
        return Verdict(False, "the model is 0")
    try:
        difference = _rounded(sp, true - model)
        ratio = _rounded(sp, model / true)
        if (verdict := _constant(sp, difference, ratio, "")) is not None:
            return verdict
        difference = _rounded(sp, sp.simplify(difference, ratio=1))
        ratio = _rounded(sp, sp.simplify(ratio, ratio=1))
        if (verdict := _constant(sp, difference, ratio, " after simplification")) is not None:
            return verdict
    except (TypeError, ValueError, ZeroDivisionError, RecursionError, AttributeError) as error:
        return Verdict(False, f"sympy failed: {type(error).__name__}: {error}"[:300])
    return Verdict(False, "neither the difference nor the ratio to the truth is constant",
                   str(difference), str(ratio))


class _Unreadable(Exception):
    pass


def _sympy_pair(formula: str, truth: str, positive: frozenset[str]) -> tuple[Any, Any]:
    import sympy as sp

    symbols: dict[str, Any] = {name: sp.Symbol(name, positive=True) for name in positive}
    built = []
    for label, text in (("truth", truth), ("model", formula)):
        try:
            built.append(to_sympy(parse(text), symbols=symbols))
        except (EngineError, SymbolicExportError) as error:
            raise _Unreadable(f"the {label} cannot be read: {error}") from None
    return built[1], built[0]


def _rounded(sp: Any, expression: Any) -> Any:
    """Every float rounded to ``ROUND_DECIMALS`` decimals, tiny ones to 0."""
    floats = {atom for atom in expression.atoms(sp.Float)}
    if not floats:
        return expression
    return expression.xreplace({value: (sp.Integer(0) if abs(value) < ZERO_BELOW else
                                        sp.Float(round(float(value), ROUND_DECIMALS),
                                                 ROUND_DECIMALS))
                                for value in floats})


def _constant(sp: Any, difference: Any, ratio: Any, how: str) -> Verdict | None:
    if _is_constant(difference):
        return Verdict(True, f"the difference to the truth is constant{how}", str(difference),
                       str(ratio))
    if _is_constant(ratio) and not ratio.equals(0):
        return Verdict(True, f"the ratio to the truth is a non-zero constant{how}",
                       str(difference), str(ratio))
    return None


def _is_constant(expression: Any) -> bool:
    if not expression.free_symbols:
        return bool(expression.is_finite is not False and expression.is_number)
    return bool(expression.is_constant(simplify=False))


def _bounded(work: Callable[[], Any]) -> Any:
    """Run ``work`` within ``CHECK_SECONDS``: a SIGALRM deadline on the main thread, else
    in a forked child killed at the deadline (a thread cannot be interrupted).

    An alarm the caller had set (pytest-timeout's, a batch script's) is put back
    afterwards with the time it has left, and fires at once if that ran out meanwhile.
    """
    if not hasattr(signal, "setitimer"):
        return work()
    if threading.current_thread() is not threading.main_thread():
        return _in_child(work)
    live = [True]

    def expire(signum: int, frame: Any) -> None:
        if live[0]:
            raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    outer_left, outer_every = signal.setitimer(signal.ITIMER_REAL, CHECK_SECONDS,
                                               REPEAT_SECONDS)
    try:
        return work()
    finally:
        while True:  # an alarm may interrupt the disarming itself: disarm until it holds
            try:
                live[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                break
            except _OutOfTime:
                continue
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:
            left = outer_left - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), outer_every)


def _in_child(work: Callable[[], Any]) -> Any:
    """``work()`` in a forked child (its result pickled back), killed after CHECK_SECONDS.

    ``os.fork`` rather than multiprocessing: a daemonic process (a Celery pool child)
    may not start multiprocessing children, and the child runs only ``work``.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, write, leave without running any cleanup
        code = 0
        try:
            os.close(read_end)
            try:
                answer = ("ok", work())
            except BaseException as error:  # noqa: BLE001 - the parent reports it
                answer = ("error", f"{type(error).__name__}: {error}")
            with os.fdopen(write_end, "wb") as stream:
                pickle.dump(answer, stream)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + CHECK_SECONDS
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                raise _OutOfTime
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    try:
        outcome, value = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - the child died before it answered
        outcome, value = "error", "the symbolic check's process ended without an answer"
    if outcome == "error":
        return Verdict(False, f"sympy failed: {value}"[:300])
    return value


def judge_pair(formula: str, truth: str, positive: Iterable[str] = ()) -> dict[str, Any]:
    """``srh benchmark judge``: the verdict for one pair, without data (no R^2 gate)."""
    verdict = symbolic_solution(formula, truth, positive=positive)
    return {"symbolic_solution": verdict.symbolic_solution, "reason": verdict.reason,
            "difference": verdict.difference, "ratio": verdict.ratio}


def accuracy_solution(r2_test: float | None) -> bool:
    """SRBench's accuracy solution: test R^2 above 0.999."""
    return r2_test is not None and bool(np.isfinite(r2_test)) and r2_test > ACCURACY_R2_THRESHOLD


def _pair(y: Any, predicted: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    y = np.asarray(y, dtype=float).ravel()
    predicted = np.broadcast_to(np.asarray(predicted, dtype=float), y.shape).ravel()
    return y, predicted, bool(np.all(np.isfinite(predicted)))


def r2_score(y: Any, predicted: Any) -> float:
    """R^2; -inf when a prediction is not finite or the target is constant but missed."""
    y, predicted, finite = _pair(y, predicted)
    if not finite or y.size == 0:
        return -math.inf
    with np.errstate(all="ignore"):
        residual = float(np.sum((y - predicted) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
    if total == 0:
        return 1.0 if residual == 0 else -math.inf
    return 1.0 - residual / total if np.isfinite(residual) else -math.inf


def nmse(y: Any, predicted: Any) -> float:
    """Mean squared error over the target's variance; inf on any non-finite prediction."""
    y, predicted, finite = _pair(y, predicted)
    if not finite or y.size == 0:
        return math.inf
    with np.errstate(all="ignore"):
        error = float(np.mean((y - predicted) ** 2))
        variance = float(np.var(y))
    if variance == 0:
        return 0.0 if error == 0 else math.inf
    return error / variance if np.isfinite(error) else math.inf


def _relative_errors(y: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        errors = np.abs(predicted - y) / np.maximum(np.abs(y), np.finfo(float).eps)
    return np.where(np.isfinite(errors), errors, np.inf)


def mape(y: Any, predicted: Any) -> float:
    """Mean absolute percentage error (as a fraction, scikit-learn's definition)."""
    y, predicted, _ = _pair(y, predicted)
    return float(np.mean(_relative_errors(y, predicted))) if y.size else math.inf


def kendall_tau(y: Any, predicted: Any) -> float:
    """Kendall's tau between target and prediction; NaN with a non-finite prediction."""
    from scipy.stats import kendalltau

    y, predicted, finite = _pair(y, predicted)
    if not finite or y.size < 2:
        return math.nan
    return float(kendalltau(y, predicted).statistic)


def acc01_points(y: Any, predicted: Any) -> float:
    """LLM-SRBench's Acc_0.1 read per point: the share within 10% relative error."""
    y, predicted, _ = _pair(y, predicted)
    return float(np.mean(_relative_errors(y, predicted) <= ACC_TOLERANCE)) if y.size else 0.0


def acc01_problem(y: Any, predicted: Any) -> bool:
    """LLM-SRBench's Acc_0.1 read per problem: every point within 10% relative error."""
    y, predicted, _ = _pair(y, predicted)
    return bool(y.size and np.max(_relative_errors(y, predicted)) <= ACC_TOLERANCE)


def metrics(y_id: Any, predicted_id: Any, y_ood: Any = None, predicted_ood: Any = None
            ) -> dict[str, Any]:
    """The data-fidelity measures on the in-domain set and, when given, the OOD set."""
    measures: dict[str, Any] = {}
    sets = [("id", y_id, predicted_id)]
    if y_ood is not None:
        sets.append(("ood", y_ood, predicted_ood))
    for suffix, y, predicted in sets:
        measures.update({
            f"nmse_{suffix}": nmse(y, predicted), f"mape_{suffix}": mape(y, predicted),
            f"kendall_tau_{suffix}": kendall_tau(y, predicted),
            f"acc01_points_{suffix}": acc01_points(y, predicted),
            f"acc01_problem_{suffix}": acc01_problem(y, predicted),
            f"r2_{suffix}": r2_score(y, predicted)})
    return measures


def _show(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"
