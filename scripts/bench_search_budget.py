#!/usr/bin/env python
"""Fixed-budget search benchmark: srh_engine.search against pyoperon and gplearn.

Run alone, or through ``scripts/bench_search.py --budget S``::

    .venv/bin/python scripts/bench_search_budget.py --suite FILE [--budget 10] [--noise 0.01]
        [--methods search,search-units,agent,pyoperon,gplearn] [--samples 2000] [--seed 0]
        [--json out.json] [--speed] [--cores 2] [--subset N [--subset-seed S]]

Every method gets the same ``--samples`` search points (``Problem.sample``,
seeded by ``--seed``; with ``--noise`` the target gets Gaussian noise of that
share of its RMS) and the same wall-clock budget per problem: ``search``
is :func:`srh_engine.search.search` with ``time_budget=S`` (``search-units`` the
same with the suite's units of the problem, see :mod:`srh_engine.search.pi_groups`;
a problem without units runs as ``search`` does), ``agent`` the
offline agent run with ``time_limit=S`` (R1 C2 L6 K2), pyoperon its
``max_time=S`` and gplearn generations while the next one fits in S; each
uses ``--cores`` cores (default 2: the search's islands, pyoperon's
``n_threads``, gplearn's ``n_jobs``). Judged on 1,000 fresh noiseless points:

- exact: max relative error < 1e-6;
- r2: R^2 > 0.999;
- symbolic: SRBench's symbolic solution (``srh_core.benchmark.judge``: the difference
  to the truth, or the ratio, is a constant after rounding to 3 decimals; checked when
  R^2 > 0.5);
- simple: R^2 > 0.999 and complexity <= the truth's + 4 (the noisy criterion;
  complexity is the engine node count of the reported formula, for pyoperon
  and gplearn of their model text when the engine parses it). The search
  reports the formula of PySR's "best" rule on its front
  (``ExpressionSearchResult.selected``; the agent reports by its ``selection``
  setting, "best" by default); "on the front" counts the problems whose
  front holds such a formula (what a perfect choice could pick).

The table gives per problem the three marks of each method; the summary per
method counts them and lists the misses by family (the suite's ``family``
field). ``--subset N`` runs a random subset of N problems of the suite, drawn
with ``--subset-seed`` (default 0), the same for every method. ``--speed``
adds the raw speed at 2,000 rows: enumerated forms per second (vectorised),
evolved trees per second, and pyoperon's own evaluation count per second.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.problems import Problem, load_suite  # noqa: E402

OPERON_SYMBOLS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"
GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sqrt", "log", "sin", "cos", "inv")
R2_THRESHOLD = 0.999
COMPLEXITY_SLACK = 4
METHODS = ("search", "search-units", "agent", "pyoperon", "gplearn")


@dataclass(frozen=True, slots=True)
class Mark:
    problem: str
    family: str
    method: str
    exact: bool
    r2: float | None
    simple: bool
    complexity: int | None
    truth_complexity: int
    seconds: float
    formula: str
    evaluated: int | None = None
    front_simple: bool | None = None
    """search only: some formula of its front has R^2 > 0.999 and complexity <= truth + 4."""
    symbolic: bool = False


def judge(problem: Problem, predicted: np.ndarray, seed: int) -> tuple[bool, float | None]:
    from bench_search import judge_predictions

    exact, _, r2 = judge_predictions(problem, predicted, seed)
    return exact, r2


def engine_complexity(text: str) -> int | None:
    from srh_engine import EngineError, complexity, parse

    try:
        return complexity(parse(text))
    except (EngineError, RecursionError, ValueError):
        return None


def fresh_matrix(problem: Problem, seed: int) -> np.ndarray:
    from bench_search import fresh_inputs, matrix

    return matrix(problem, fresh_inputs(problem, seed))


def run_search(problem: Problem, M: np.ndarray, y: np.ndarray, budget: float, seed: int,
               units: bool = False) -> tuple[str, np.ndarray, int | None, int]:
    from srh_engine import evaluate
    from srh_engine.search import search

    given = problem.si_units() if units else {}
    target_units = given.pop(problem.output, None)
    result = search(M, y, problem.feature_names, time_budget=budget, seed=seed, workers=CORES,
                    units=given or None, target_units=target_units)
    best = result.selected  # the reported formula: PySR's rule (noiseless, the exact one)
    if best is None:
        return "", np.full(1000, np.nan), None, result.evaluated
    fresh = fresh_matrix(problem, seed)
    columns = {n: fresh[:, i] for i, n in enumerate(problem.feature_names)}
    truth = engine_complexity(problem.formula) or 0
    FRONT_SIMPLE[problem.name] = False
    for entry in result.front:
        with np.errstate(all="ignore"):
            values = np.asarray(evaluate(entry.expression, columns), dtype=float)
        _, r2 = judge(problem, values, seed)
        if r2 is not None and r2 > R2_THRESHOLD and entry.complexity <= truth + COMPLEXITY_SLACK:
            FRONT_SIMPLE[problem.name] = True
    with np.errstate(all="ignore"):
        predicted = evaluate(best.expression, columns)
    return best.formula, np.asarray(predicted, dtype=float), best.complexity, result.evaluated


CORES = 2
"""Cores every method may use (``--cores``): the search's islands, pyoperon's threads,
gplearn's jobs."""

FRONT_SIMPLE: dict[str, bool] = {}
"""Per problem, from the last search run: whether its front holds a simple, accurate formula."""


def run_agent(problem: Problem, M: np.ndarray, y: np.ndarray, budget: float, seed: int
              ) -> tuple[str, np.ndarray, int | None, int | None]:
    from srh_core.agent import SRAgent
    from srh_engine import evaluate, parse

    agent = SRAgent(max_restart_loop=1, global_width=2, max_refinement_depth=6,
                    local_sample_size=2, seed=seed, time_limit=budget,
                    run_id=f"bench-{problem.id}")
    X = {name: M[:, i] for i, name in enumerate(problem.feature_names)}
    result = agent.run(X, {problem.output: y}, f"Find {problem.output}")
    best = result.get("best_candidate")
    formula = result["candidates"][best]["formula"] if best is not None else ""
    if not formula:
        return "", np.full(1000, np.nan), None, None
    fresh = fresh_matrix(problem, seed)
    with np.errstate(all="ignore"):
        predicted = evaluate(parse(formula), {n: fresh[:, i] for i, n in
                                              enumerate(problem.feature_names)})
    return formula, np.asarray(predicted, dtype=float), engine_complexity(formula), None


def run_operon(problem: Problem, M: np.ndarray, y: np.ndarray, budget: float, seed: int
               ) -> tuple[str, np.ndarray, int | None, int | None]:
    from pyoperon.sklearn import SymbolicRegressor

    model = SymbolicRegressor(allowed_symbols=OPERON_SYMBOLS, max_time=max(1, round(budget)),
                              n_threads=CORES, generations=10**9, max_evaluations=10**9,
                              random_state=seed)
    model.fit(M, y)
    formula = model.get_model_string(model.model_, 12, problem.feature_names)
    complexity = engine_complexity(formula.replace("^", "**"))
    evaluated = int(getattr(model, "stats_", {}).get("evaluation_count", 0)) or None
    return formula, model.predict(fresh_matrix(problem, seed)), complexity, evaluated


def run_gplearn(problem: Problem, M: np.ndarray, y: np.ndarray, budget: float, seed: int
                ) -> tuple[str, np.ndarray, int | None, int | None]:
    from bench_search import evolve_gplearn
    from gplearn.genetic import SymbolicRegressor

    from srh_core.benchmark.baselines import ModelTextError, gplearn_formula

    model = SymbolicRegressor(population_size=1000, generations=1, random_state=seed,
                              function_set=GPLEARN_FUNCTIONS, warm_start=True, n_jobs=CORES)
    evolve_gplearn(model, M, y, budget)
    program = str(model._program)
    try:  # in the problem's names, so that the symbolic mark can judge it
        formula = gplearn_formula(program, problem.feature_names)
    except ModelTextError:
        formula = program
    return formula, model.predict(fresh_matrix(problem, seed)), int(model._program.length_), None


def run_search_units(problem: Problem, M: np.ndarray, y: np.ndarray, budget: float, seed: int
                     ) -> tuple[str, np.ndarray, int | None, int]:
    return run_search(problem, M, y, budget, seed, units=True)


RUNNERS = {"search": run_search, "search-units": run_search_units, "agent": run_agent,
           "pyoperon": run_operon, "gplearn": run_gplearn}


def run_one(problem: Problem, family: str, method: str, M: np.ndarray, y: np.ndarray,
            budget: float, seed: int) -> Mark:
    truth = engine_complexity(problem.formula) or 0
    started = time.perf_counter()
    try:
        formula, predicted, complexity, evaluated = RUNNERS[method](problem, M, y, budget, seed)
    except Exception as error:  # noqa: BLE001 - a method's failure is a result
        return Mark(problem.name, family, method, False, None, False, None, truth,
                    time.perf_counter() - started, f"failed: {error!r:.100}")
    seconds = time.perf_counter() - started
    exact, r2 = judge(problem, predicted, seed)
    good = r2 is not None and r2 > R2_THRESHOLD
    simple = good and complexity is not None and complexity <= truth + COMPLEXITY_SLACK
    front = FRONT_SIMPLE.pop(problem.name, None) if method.startswith("search") else None
    return Mark(problem.name, family, method, exact, r2, simple, complexity, truth, seconds,
                formula, evaluated, front, symbolic_mark(problem, formula, r2))


def symbolic_mark(problem: Problem, formula: str, r2: float | None) -> bool:
    from srh_core.benchmark.judge import symbolic_solution

    if not formula or formula.startswith("failed:"):
        return False
    text = formula.replace("^", "**")  # pyoperon's power
    return symbolic_solution(text, problem.formula, r2_test=r2).symbolic_solution


def summary(marks: Sequence[Mark], methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    totals = {}
    for method in methods:
        rows = [m for m in marks if m.method == method]
        misses = Counter(m.family for m in rows if not m.exact)
        totals[method] = {
            "problems": len(rows), "exact": sum(m.exact for m in rows),
            "symbolic": sum(m.symbolic for m in rows),
            "r2_above_0.999": sum(1 for m in rows if m.r2 is not None and m.r2 > R2_THRESHOLD),
            "simple_and_r2": sum(m.simple for m in rows),
            "front_has_simple_and_r2": sum(1 for m in rows if m.front_simple),
            "seconds": round(sum(m.seconds for m in rows), 1),
            "exact_misses_by_family": dict(sorted(misses.items())),
            "evaluated_per_second": _rate(rows)}
    return totals


def _rate(rows: Sequence[Mark]) -> float | None:
    counted = [m for m in rows if m.evaluated]
    if not counted:
        return None
    return round(sum(m.evaluated for m in counted) / sum(m.seconds for m in counted), 1)


def print_table(marks: Sequence[Mark], methods: Sequence[str], totals: dict[str, Any]) -> None:
    print(f"{'problem':24}{'family':16}" + "".join(f"{m + ' (exact r2 simple s)':>30}"
                                                  for m in methods))
    by_key = {(m.problem, m.method): m for m in marks}
    for name in dict.fromkeys(m.problem for m in marks):
        family = next(m.family for m in marks if m.problem == name)
        cells = []
        for method in methods:
            mark = by_key.get((name, method))
            r2 = "n/a" if mark is None or mark.r2 is None else f"{min(mark.r2, 9.99999):.5f}"
            cells.append(f"{'-':>30}" if mark is None else
                         f"{'OK' if mark.exact else 'no':>8} {r2:>8} "
                         f"{'yes' if mark.simple else 'no':>4} {mark.seconds:6.1f}s")
        print(f"{name[:24]:24}{family[:16]:16}" + "".join(cells))
    for method in methods:
        t = totals[method]
        print(f"{method}: exact {t['exact']}/{t['problems']}, symbolic {t['symbolic']}, "
              f"R2>0.999 {t['r2_above_0.999']}, "
              f"R2>0.999 and complexity<=truth+4 {t['simple_and_r2']} (on the front: "
              f"{t['front_has_simple_and_r2']}), {t['seconds']}s, "
              f"evaluated/s {t['evaluated_per_second']}, exact misses by family "
              f"{t['exact_misses_by_family']}")


def speed(rows: int = 2000, seconds: float = 3.0) -> dict[str, float]:
    """Raw speed at ``rows`` rows: enumerated forms/s and evolved trees/s."""
    from srh_engine.search.budget import Budget
    from srh_engine.search.budget import Counter as Count
    from srh_engine.search.enumeration import Enumeration
    from srh_engine.search.evolution import Evolution
    from srh_engine.search.operators import resolve_operators

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (rows, 4))
    y = X[:, 0] * np.sin(X[:, 1]) / (X[:, 2] + X[:, 3]) + np.exp(-X[:, 0] * X[:, 3])
    binary, unary = resolve_operators(None)
    enumeration = Enumeration(X, y[None, :], binary, unary)
    started = time.perf_counter()
    budget = Budget(time.monotonic() + seconds, Count())
    for level in range(2, 12):
        if not enumeration.grow(level, budget.over):
            break
    enumerated = enumeration.evaluated / (time.perf_counter() - started)
    evolution = Evolution([X[:, i] for i in range(4)], y, binary, unary, 25)
    evolution.seed_population([])
    started = time.perf_counter()
    evolution.run(Budget(time.monotonic() + seconds, Count()).over, stop_nmse=-1.0)
    evolved = evolution.evaluated / (time.perf_counter() - started)
    return {"rows": rows, "enumerated_forms_per_second": round(enumerated),
            "evolved_trees_per_second": round(evolved)}


def families(path: str) -> dict[str, str]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(p.get("name") or p["id"]): str(p.get("family", "")) for p in
            document.get("problems", [])}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", required=True, help="suite JSON (scripts/gen_problems.py)")
    parser.add_argument("--problems", nargs="*", default=None, help="names or ids to run")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per problem")
    parser.add_argument("--noise", type=float, default=0.0, help="noise share of RMS(y)")
    parser.add_argument("--methods", default="search,pyoperon,gplearn")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--speed", action="store_true", help="also measure the raw speed")
    parser.add_argument("--subset", type=int, default=None, metavar="N",
                        help="a random subset of N problems (drawn with --subset-seed)")
    parser.add_argument("--subset-seed", type=int, default=0)
    parser.add_argument("--cores", type=int, default=2,
                        help="cores per method: search islands, pyoperon threads, gplearn jobs")
    args = parser.parse_args(argv)
    unknown = [m for m in args.methods.split(",") if m not in METHODS]
    if unknown or args.budget <= 0 or args.noise < 0:
        parser.error(f"unknown methods {unknown}" if unknown else "budget > 0, noise >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global CORES
    args = parse_args(argv)
    CORES = args.cores
    methods = args.methods.split(",")
    suite, family_of = load_suite(args.suite), families(args.suite)
    marks: list[Mark] = []
    problems = suite.select(args.problems)
    if args.subset is not None and args.subset < len(problems):
        chosen = np.random.default_rng(args.subset_seed).choice(len(problems), args.subset,
                                                               replace=False)
        problems = [problems[i] for i in sorted(chosen)]
    for problem in problems:
        X, y = problem.sample(args.samples, seed=args.seed, noise=args.noise)
        M = np.column_stack([X[name] for name in problem.feature_names])
        for method in methods:
            mark = run_one(problem, family_of.get(problem.name, ""), method, M, y, args.budget,
                           args.seed)
            marks.append(mark)
            print(f"  {method}={'OK' if mark.exact else 'no'} {mark.seconds:.1f}s "
                  f"{problem.name}: {mark.formula[:70]}", file=sys.stderr, flush=True)
    totals = summary(marks, methods)
    print_table(marks, methods, totals)
    document: dict[str, Any] = {"suite": suite.name, "budget": args.budget, "noise": args.noise,
                                "samples": args.samples, "seed": args.seed,
                                "problems": [p.name for p in problems],
                                "platform": platform.platform(), "summary": totals,
                                "marks": [asdict(m) for m in marks]}
    if args.speed:
        document["speed"] = speed()
        print(f"speed at 2,000 rows: {document['speed']}")
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
