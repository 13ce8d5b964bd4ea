#!/usr/bin/env python
"""Benchmark of srh_engine: evaluation, fitting and parsing, against baselines.

Run alone::

    .venv/bin/python scripts/bench_engine.py [--json out.json] [--quick]

(a) evaluate: srh_engine vs the same formula hand-written in NumPy vs
    ``sympy.lambdify(modules="numpy")``, at 10^3 and 10^5 samples (median of
    repeated timings);
(b) fit: ``srh_engine.fit`` (defaults: least squares with analytic Jacobian,
    restarts) vs ``sympy.lambdify`` + ``scipy.optimize.minimize(method="BFGS")``
    with a numerical gradient, as a naive user would write it, from the same
    start, on noise-free and on noisy data, at 10^3, 10^4 and 10^5 samples: time
    and final MSE;
(c) parse throughput (formulas per second), with ``sympy.parse_expr`` for scale.

Targets: evaluate within 1.5x of hand-written NumPy at 10^5 samples; fit at
least 3x faster than the baseline at equal or better loss.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy
import sympy
from scipy.optimize import minimize

import srh_engine
from srh_engine import fit, parse

EVAL_TARGET = 1.5
FIT_TARGET = 3.0
LOSS_RTOL = 1e-6  # losses within this relative distance count as equal


@dataclass(frozen=True)
class Case:
    """One benchmark formula: a numeric form, a NumPy twin, a fit template."""

    name: str
    formula: str
    numpy: Callable[[dict[str, np.ndarray]], np.ndarray]
    template: str
    truth: dict[str, float]
    start: dict[str, float]
    domain: dict[str, tuple[float, float]]


CASES = [
    Case("coulomb", "x1*x2/(4*pi*x3**2)",
         lambda d: d["x1"] * d["x2"] / (4 * np.pi * d["x3"] ** 2),
         "a*x1*x2/x3**b", {"a": 0.0796, "b": 2.0}, {"a": 1.0, "b": 1.0},
         {"x1": (1, 5), "x2": (1, 5), "x3": (1, 5)}),
    Case("gaussian", "exp(-x**2/2)/sqrt(2*pi)",
         lambda d: np.exp(-d["x"] ** 2 / 2) / np.sqrt(2 * np.pi),
         "a*exp(-(x - m)**2/(2*s**2))", {"a": 0.4, "m": 0.3, "s": 1.2},
         {"a": 1.0, "m": 0.0, "s": 1.0}, {"x": (-3, 3)}),
    Case("sine", "2.5*sin(1.3*x) + 0.7",
         lambda d: 2.5 * np.sin(1.3 * d["x"]) + 0.7,
         "a*sin(b*x) + c", {"a": 2.5, "b": 1.3, "c": 0.7}, {"a": 1.0, "b": 1.0, "c": 1.0},
         {"x": (0, 6)}),
    Case("exp-decay", "2.5*exp(-1.3*x) + 0.7",
         lambda d: 2.5 * np.exp(-1.3 * d["x"]) + 0.7,
         "a*exp(-b*x) + c", {"a": 2.5, "b": 1.3, "c": 0.7}, {"a": 1.0, "b": 1.0, "c": 1.0},
         {"x": (0, 4)}),
    Case("power-law", "3.2*x**-1.7", lambda d: 3.2 * d["x"] ** -1.7,
         "a*x**b", {"a": 3.2, "b": -1.7}, {"a": 1.0, "b": 1.0}, {"x": (0.5, 5)}),
    Case("relativistic", "1.5/sqrt(1 - v**2/3.0**2)",
         lambda d: 1.5 / np.sqrt(1 - d["v"] ** 2 / 3.0**2),
         "m/sqrt(1 - v**2/c**2)", {"m": 1.5, "c": 3.0}, {"m": 1.0, "c": 4.0}, {"v": (0, 2.5)}),
    Case("rational", "(2*x - 1)/(x + 0.5)", lambda d: (2 * d["x"] - 1) / (d["x"] + 0.5),
         "(a*x + b)/(x + c)", {"a": 2.0, "b": -1.0, "c": 0.5}, {"a": 1.0, "b": 1.0, "c": 1.0},
         {"x": (0, 4)}),
    Case("polynomial", "x**3 - 2*x**2 + 0.5*x + 1",
         lambda d: d["x"] ** 3 - 2 * d["x"] ** 2 + 0.5 * d["x"] + 1,
         "a*x**3 + b*x**2 + c*x + d", {"a": 1.0, "b": -2.0, "c": 0.5, "d": 1.0},
         {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, {"x": (-2, 3)}),
]


def sample(case: Case, size: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Uniform samples of every variable of ``case`` on its domain."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(low, high, size) for name, (low, high) in case.domain.items()}


def interleaved_medians(functions: dict[str, Callable[[], Any]], repeat: int,
                        ) -> dict[str, float]:
    """Median seconds per call of each function, timed in interleaved rounds.

    Interleaving spreads the noise of a shared, loaded machine evenly over
    the contenders instead of biasing whichever ran during a busy spell.
    """
    timers = {name: timeit.Timer(function) for name, function in functions.items()}
    numbers = {name: timer.autorange()[0] for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeat):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(numbers[name]) / numbers[name])
    return {name: statistics.median(values) for name, values in samples.items()}


def engine_template(case: Case) -> srh_engine.Expression:
    """The fit template with its free names turned into parameters."""
    return parse(case.template, symbols={name: srh_engine.param(name) for name in case.truth})


# -- (a) evaluation ---------------------------------------------------------------------------
def bench_evaluate(case: Case, size: int, repeat: int) -> dict[str, Any]:
    data = sample(case, size)
    expression = parse(case.formula)
    names = list(case.domain)
    lambdified = sympy.lambdify([sympy.Symbol(n) for n in names], sympy.sympify(case.formula),
                                modules="numpy")
    arguments = [data[n] for n in names]
    np.testing.assert_allclose(expression.evaluate(data), case.numpy(data), rtol=1e-12)
    times = interleaved_medians({"engine": lambda: expression.evaluate(data),
                                 "numpy": lambda: case.numpy(data),
                                 "lambdify": lambda: lambdified(*arguments)}, repeat)
    return {"case": case.name, "samples": size, "engine_us": times["engine"] * 1e6,
            "numpy_us": times["numpy"] * 1e6, "lambdify_us": times["lambdify"] * 1e6,
            "engine_over_numpy": times["engine"] / times["numpy"],
            "engine_over_lambdify": times["engine"] / times["lambdify"]}


# -- (b) fitting ----------------------------------------------------------------------------
def baseline_fit(case: Case, data: dict[str, np.ndarray], target: np.ndarray,
                 ) -> tuple[float, float, float]:
    """sympify + lambdify + minimize(BFGS) with a numerical gradient, from ``case.start``.

    Returns:
        (pipeline seconds, seconds in minimize only, final MSE).
    """
    started = time.perf_counter()
    parameters = [sympy.Symbol(n) for n in case.truth]
    variables = [sympy.Symbol(n) for n in case.domain]
    model = sympy.lambdify(parameters + variables, sympy.sympify(case.template), modules="numpy")
    columns = [data[n] for n in case.domain]

    def objective(theta: np.ndarray) -> float:
        return float(np.mean((model(*theta, *columns) - target) ** 2))

    prepared = time.perf_counter()
    with np.errstate(all="ignore"):
        result = minimize(objective, [case.start[n] for n in case.truth], method="BFGS")
        loss = objective(result.x)
    finished = time.perf_counter()
    return finished - started, finished - prepared, loss


def engine_fit(case: Case, data: dict[str, np.ndarray], target: np.ndarray,
               ) -> tuple[float, float, float]:
    """srh_engine.parse + fit with defaults, from ``case.start``.

    Returns:
        (pipeline seconds, seconds in fit only, final MSE).
    """
    started = time.perf_counter()
    expression = engine_template(case)
    prepared = time.perf_counter()
    result = fit(expression, data, target, initial=case.start)
    finished = time.perf_counter()
    return finished - started, finished - prepared, result.loss


def _verdict(engine_loss: float, baseline_loss: float, scale: float) -> str:
    if not np.isfinite(baseline_loss) or engine_loss < baseline_loss - LOSS_RTOL * scale:
        return "better" if np.isfinite(engine_loss) else "both-fail"
    if engine_loss <= baseline_loss + LOSS_RTOL * max(baseline_loss, 1e-12 * scale):
        return "equal"
    return "worse"


def bench_fit(case: Case, size: int, noise: float, repeat: int) -> dict[str, Any]:
    data = sample(case, size, seed=1)
    clean = engine_template(case).evaluate(data, parameters=case.truth)
    rng = np.random.default_rng(2)
    target = clean + noise * np.std(clean) * rng.standard_normal(size)
    engine_runs, baseline_runs = [], []
    for _ in range(repeat):  # interleaved, see interleaved_medians
        engine_runs.append(engine_fit(case, data, target))
        baseline_runs.append(baseline_fit(case, data, target))
    engine_time, engine_fit_only, engine_loss = (statistics.median(v) for v in zip(*engine_runs,
                                                                                   strict=True))
    baseline_time, baseline_opt_only, baseline_loss = (
        statistics.median(v) for v in zip(*baseline_runs, strict=True))
    return {"case": case.name, "samples": size, "noise": noise,
            "engine_ms": engine_time * 1e3, "engine_mse": engine_loss,
            "baseline_ms": baseline_time * 1e3, "baseline_mse": baseline_loss,
            "speedup": baseline_time / engine_time,
            "engine_fit_only_ms": engine_fit_only * 1e3,
            "baseline_minimize_only_ms": baseline_opt_only * 1e3,
            "speedup_optimiser_only": baseline_opt_only / engine_fit_only,
            "loss": _verdict(engine_loss, baseline_loss, float(np.mean(target**2)))}


# -- (c) parsing ----------------------------------------------------------------------------
def bench_parse(repeat: int) -> dict[str, Any]:
    formulas = [case.formula for case in CASES] + [case.template for case in CASES] + [
        "y = a*exp(-b*x^2) + np.sin(c*x)", 'param("k", 1.5)*log(x1)/sqrt(x2 + 1)',
        "sigmoid(w1*x1 + w2*x2 - b) * tanh(x3)", "x1**2 + x2**2 - 2*x1*x2*cos(theta)"]
    sympy_formulas = [f.replace("np.", "").replace("^", "**").split("=")[-1]
                      for f in formulas if "param" not in f]
    times = interleaved_medians({
        "engine": lambda: [parse(f) for f in formulas],
        "sympy": lambda: [sympy.parse_expr(f) for f in sympy_formulas]}, repeat)
    engine = times["engine"] / len(formulas)
    sympy_time = times["sympy"] / len(sympy_formulas)
    return {"formulas": len(formulas), "engine_per_second": 1 / engine,
            "engine_us_per_formula": engine * 1e6, "sympy_parse_expr_per_second": 1 / sympy_time}


# -- report ---------------------------------------------------------------------------------
def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    header = " | ".join(f"{title:>{len(title)}}" for _, title, _ in columns)
    lines = [header, "-" * len(header)]
    for row in rows:
        cells = [format(row[key], fmt).rjust(len(title)) for key, title, fmt in columns]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def collect(quick: bool) -> dict[str, Any]:
    """Run every benchmark; returns the raw results."""
    repeat = 5 if quick else 11
    fit_repeat = 3 if quick else 7
    fit(parse('param("a")*x'), {"x": np.arange(3.0)}, np.arange(3.0))  # import scipy once
    parsing = bench_parse(repeat)
    evaluations = [bench_evaluate(case, size, repeat) for size in (10**3, 10**5)
                   for case in CASES]
    fit_sizes = (10**3,) if quick else (10**3, 10**4, 10**5)
    fits = [bench_fit(case, size, noise, fit_repeat) for size in fit_sizes
            for noise in (0.0, 0.01) for case in CASES]
    return {"meta": {"python": sys.version, "numpy": np.__version__, "scipy": scipy.__version__,
                     "sympy": sympy.__version__, "machine": platform.machine(), "quick": quick},
            "evaluate": evaluations, "fit": fits, "parse": parsing,
            "cases": [asdict(c) | {"numpy": None} for c in CASES]}


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Targets: worst evaluate ratio at 10^5, fit speedups and loss verdicts."""
    large = [e["engine_over_numpy"] for e in results["evaluate"] if e["samples"] == 10**5]
    fits = results["fit"]
    speedups = [f["speedup"] for f in fits]
    worse = [f"{f['case']}@{f['samples']}/{f['noise']}" for f in fits if f["loss"] == "worse"]
    return {
        "evaluate_worst_ratio_1e5": max(large), "evaluate_target": EVAL_TARGET,
        "evaluate_target_met": max(large) <= EVAL_TARGET,
        "fit_min_speedup": min(speedups), "fit_median_speedup": statistics.median(speedups),
        "fit_target": FIT_TARGET, "fit_loss_worse_cases": worse,
        "fit_cases_below_target": [f"{f['case']}@{f['samples']}/{f['noise']}" for f in fits
                                   if f["speedup"] < FIT_TARGET],
        "fit_target_met": min(speedups) >= FIT_TARGET and not worse,
    }


def report(results: dict[str, Any]) -> None:
    """Print the tables and the summary."""
    meta = results["meta"]
    print(f"srh_engine benchmark  python {platform.python_version()}  numpy {meta['numpy']}  "
          f"scipy {meta['scipy']}  sympy {meta['sympy']}  {meta['machine']}\n")
    print("(a) evaluate (median per call, us)")
    print(_table(results["evaluate"], [
        ("case", "case        ", ""), ("samples", "samples", "d"),
        ("engine_us", "  engine", ".1f"), ("numpy_us", "   numpy", ".1f"),
        ("lambdify_us", "lambdify", ".1f"), ("engine_over_numpy", "eng/numpy", ".2f"),
        ("engine_over_lambdify", "eng/lambdify", ".2f")]))
    print("\n(b) fit: parse+fit vs sympify+lambdify+minimize(BFGS) (median ms, final MSE); "
          "'opt' columns time fit() vs minimize() alone")
    print(_table(results["fit"], [
        ("case", "case        ", ""), ("samples", "samples", "d"), ("noise", "noise", ".2f"),
        ("engine_ms", "engine ms", ".2f"), ("engine_mse", "engine mse", ".3e"),
        ("baseline_ms", "bfgs ms", ".2f"), ("baseline_mse", "bfgs mse", ".3e"),
        ("speedup", "speedup", ".1f"), ("loss", "  loss", ""),
        ("engine_fit_only_ms", "opt eng ms", ".2f"),
        ("baseline_minimize_only_ms", "opt bfgs ms", ".2f"),
        ("speedup_optimiser_only", "opt speedup", ".1f")]))
    parsing = results["parse"]
    print(f"\n(c) parse: {parsing['engine_per_second']:.0f} formulas/s "
          f"({parsing['engine_us_per_formula']:.1f} us each); sympy.parse_expr: "
          f"{parsing['sympy_parse_expr_per_second']:.0f} formulas/s")
    summary = results["summary"]
    print(f"\nsummary: evaluate worst engine/numpy at 10^5 = "
          f"{summary['evaluate_worst_ratio_1e5']:.2f} (target <= {EVAL_TARGET}); fit speedup "
          f"min {summary['fit_min_speedup']:.1f}x, median {summary['fit_median_speedup']:.1f}x "
          f"(target >= {FIT_TARGET}x; below target: "
          f"{', '.join(summary['fit_cases_below_target']) or 'none'}); loss worse in: "
          f"{', '.join(summary['fit_loss_worse_cases']) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--json", help="write the results to this JSON file")
    arguments.add_argument("--quick", action="store_true", help="fewer repeats, 10^3 fits only")
    options = arguments.parse_args(argv)
    results = collect(options.quick)
    results["summary"] = summarise(results)
    report(results)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
