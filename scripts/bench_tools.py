"""Time each formula tool through its call boundary on 10^3 and 10^4 samples.

Usage::

    .venv/bin/python scripts/bench_tools.py [--json out.json] [--repeats 5] [--sizes 1000 10000]

Each tool runs once to warm up, then ``--repeats`` times; the table shows the
median wall time per call (argument validation, fitting, scoring on the train
and validation splits, diagnostics and formatting included; building the
context is not). Every problem is exact, so the fit quality column (train
R2) should read 1. A 25% validation split is used. BLAS runs single-threaded,
as on tool workers, unless OMP_NUM_THREADS / OPENBLAS_NUM_THREADS are set.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Tool workers run single-threaded BLAS (DESIGN.md: the "tools" queue, OMP_NUM_THREADS=1);
# threaded BLAS on small matrices is slower on a shared machine. Export these to override.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import srh_core.tools.catalogue  # noqa: E402,F401  (registers the tools)
from srh_core.context import AgentContext  # noqa: E402
from srh_core.tools.base import BaseTool  # noqa: E402

VALIDATION_FRACTION = 0.25
Data = dict[str, np.ndarray]


def _sample(rng: np.random.Generator, n: int) -> Data:
    return {"x": rng.uniform(0.5, 3, n), "x1": rng.uniform(-2, 2, n), "x2": rng.uniform(-2, 2, n),
            "x3": rng.uniform(-2, 2, n), "m1": rng.uniform(1, 5, n), "m2": rng.uniform(1, 5, n),
            "r": rng.uniform(0.5, 3, n), "t": rng.uniform(0, 10, n)}


# name -> (tool, target function, arguments)
CASES: dict[str, tuple[str, Callable[[Data], np.ndarray], dict[str, Any]]] = {
    "evaluate_formula": ("evaluate_formula", lambda d: 2.5 * np.exp(-1.3 * d["x"]) + 0.7,
                         {"f": "2.5*exp(-1.3*x) + 0.7"}),
    "evaluate_formula(fit=True)": ("evaluate_formula",
                                   lambda d: 2.5 * np.exp(-1.3 * d["x"]) + 0.7,
                                   {"f": 'param("a")*exp(-param("b")*x) + param("c")',
                                    "fit": True}),
    "submit_formula": ("submit_formula", lambda d: 2.5 * np.exp(-1.3 * d["x"]) + 0.7,
                       {"f": "2.5*exp(-1.3*x) + 0.7"}),
    "polynomial_fit": ("polynomial_fit", lambda d: 1 + 2 * d["x1"] * d["x2"] - 0.5 * d["x2"] ** 2,
                       {"x": ["x1", "x2"], "max_degree": 2}),
    "power_law_fit": ("power_law_fit", lambda d: 6.674 * d["m1"] * d["m2"] / d["r"] ** 2,
                      {"x": ["m1", "m2", "r"], "snap_exponents": True}),
    "rational_fit": ("rational_fit", lambda d: d["x1"] / (1 + d["x1"] ** 2),
                     {"x": ["x1"], "numerator_degree": 1, "denominator_degree": 2}),
    "constant_fit": ("constant_fit", lambda d: np.pi * d["x1"] ** 2 + 1.2345 * d["x2"],
                     {"eq": "3.1416*x1**2 + 1.19*x2"}),
    "harmonic_interaction_fit": ("harmonic_interaction_fit",
                                 lambda d: d["x1"] * np.sin(3.1 * d["t"]),
                                 {"carrier": "x1", "oscillator": "t"}),
    "call_sindy": ("call_sindy",
                   lambda d: 1.5 * d["x1"] ** 3 - 2 * d["x1"] * d["x2"] + 0.8 * d["x3"] + 1,
                   {"x": ["x1", "x2", "x3"], "poly_degree": 3}),
    "evaluate_eic": ("evaluate_eic", lambda d: d["x"] + d["x"] ** 2, {"f": "x + x**2"}),
    "monomial_sum_fit": ("monomial_sum_fit",
                         lambda d: 2 * d["m1"] ** (1 / 3) / d["r"] - d["m2"] ** 1.5 / 3,
                         {"x": ["m1", "m2", "r"], "terms": 2}),
}


def time_case(case: str, n: int, repeats: int) -> dict[str, Any]:
    """Median seconds per call of one case on ``n`` samples."""
    tool, truth, arguments = CASES[case]
    data = _sample(np.random.default_rng(0), n)
    data["y"] = np.asarray(truth(data), dtype=float)
    context = AgentContext(args={"validation_fraction": VALIDATION_FRACTION}, data=data,
                           target="y")
    instance = BaseTool.create(tool, context)
    result = instance(**arguments)  # warm-up (imports, split caches)
    if not result.ok:
        return {"case": case, "n": n, "ok": False, "error": result.result_str}
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        instance(**arguments)
        times.append(time.perf_counter() - started)
    r2 = (result.result.get("metrics") or {}).get("train", {}).get("r2")
    return {"case": case, "n": n, "ok": True, "median_s": statistics.median(times),
            "min_s": min(times), "train_r2": r2, "formula": result.result.get("formula")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the measurements to this JSON file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    args = parser.parse_args(argv)
    rows = [time_case(case, n, args.repeats) for case in CASES for n in args.sizes]
    pysr = BaseTool.get_class("call_pysr").availability()
    print(f"{'tool':<26}" + "".join(f"{f'n={n}':>14}" for n in args.sizes) + "   train R2")
    for case in CASES:
        cells = [row for row in rows if row["case"] == case]
        times = "".join(f"{row['median_s'] * 1e3:>11.1f} ms" if row["ok"] else f"{'failed':>14}"
                        for row in cells)
        print(f"{case:<26}{times}   {cells[-1].get('train_r2')}")
    print(f"{'call_pysr':<26}not timed: {pysr or 'available'}")
    if args.json:
        report = {"python": platform.python_version(), "machine": platform.machine(),
                  "repeats": args.repeats, "validation_fraction": VALIDATION_FRACTION,
                  "call_pysr": pysr or "available", "results": rows}
        args.json.write_text(json.dumps(report, indent=2, allow_nan=False, default=str))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
