#!/usr/bin/env python
"""Search benchmark: the offline agent against gplearn and pyoperon on a problem suite.

Run alone::

    .venv/bin/python scripts/bench_search.py [--suite FILE] [--problems A B ...]
        [-R 1 -C 2 -L 6 -K 2] [--samples 2000] [--seed 0] [--tool-parser openai]
        [--baselines gplearn,pyoperon | none] [--baseline-seconds S] [--json out.json]

With ``--budget S`` it runs the fixed-budget comparison of
``scripts/bench_search_budget.py`` instead (srh_engine.search, the agent
with ``time_limit=S``, pyoperon and gplearn, S seconds each per problem,
optional ``--noise``); see that script for its options.

Protocol (``srh_core/problems``, the SRBench/Feynman one at our sizes): every
method gets the same ``--samples`` search points of each problem (seeded by
``--seed``); every model is judged on 1,000 fresh, independently seeded points:
solved = max relative error < 1e-6, and R^2 is reported.

Our agent runs the R-C-L-K search with the default ``offline`` provider (the
deterministic, rule-based proposer: no model, no network). The baselines are
optional extras, skipped with a note when they are not importable; each gets a
per-problem wall-clock budget equal to our time on that problem: pyoperon
through its ``max_time`` (whole seconds, at least 1), gplearn by evolving one
generation at a time (``warm_start``) while the next generation, at the pace
of the last one, still fits the budget (at least one generation). Both run
single-threaded, as our agent does. ``--baseline-seconds S`` gives each
baseline a fixed S seconds per problem instead (ours stays as it is), to see
what they reach with more time than we needed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.benchmark.baselines import evolve_gplearn  # noqa: E402,F401 - the other scripts import it from here
from srh_core.problems import JUDGE_SAMPLES, SOLVED_TOLERANCE, TINY, Problem, load_suite  # noqa: E402

METHODS = ("srharness", "gplearn", "pyoperon")
GPLEARN_POPULATION = 1000
GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sqrt", "log", "sin", "cos", "inv")
OPERON_SYMBOLS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"
OPERON_UNBOUNDED = 10**9
"""Generations and evaluations given to pyoperon: its time limit is the stopping rule."""

FORMULA_CHARS = 70


@dataclass(frozen=True, slots=True)
class Outcome:
    """One method on one problem."""

    problem: str
    method: str
    solved: bool
    r2: float | None
    max_relative_error: float | None
    seconds: float
    formula: str
    note: str = ""


@dataclass(slots=True)
class Settings:
    """The search budget and protocol of a benchmark run."""

    R: int = 1
    C: int = 2
    L: int = 6
    K: int = 2
    samples: int = 2000
    seed: int = 0
    tool_parser: str = "openai"
    baselines: list[str] = field(default_factory=lambda: ["gplearn", "pyoperon"])
    baseline_seconds: float | None = None
    """Fixed per-problem budget of each baseline (None: our time on the problem)."""


# ------------------------------------------------------------------ judging
def fresh_inputs(problem: Problem, seed: int) -> dict[str, np.ndarray]:
    """The judging points: exactly those :meth:`Problem.judge` draws."""
    return problem.sample_inputs(JUDGE_SAMPLES, np.random.default_rng([seed, 1]))


def judge_predictions(problem: Problem, predicted: np.ndarray, seed: int
                      ) -> tuple[bool, float | None, float | None]:
    """(solved, max relative error, R^2) of predictions on the fresh points."""
    truth = np.asarray(problem.expression().evaluate(fresh_inputs(problem, seed)), dtype=float)
    with np.errstate(all="ignore"):
        predicted = np.broadcast_to(np.asarray(predicted, dtype=float), truth.shape)
        relative = np.abs(predicted - truth) / np.maximum(np.abs(truth), TINY)
        worst = float(np.max(relative)) if np.all(np.isfinite(relative)) else math.inf
        residual = float(np.sum((truth - predicted) ** 2))
        total = float(np.sum((truth - truth.mean()) ** 2))
    r2 = 1.0 - residual / total if total > 0 and math.isfinite(residual) else None
    return worst < SOLVED_TOLERANCE, (worst if math.isfinite(worst) else None), r2


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


# --------------------------------------------------------------------- ours
def run_ours(problem: Problem, X: dict[str, np.ndarray], y: np.ndarray,
             settings: Settings) -> Outcome:
    """The offline agent's R-C-L-K search, judged like every method."""
    from srh_core.agent import SRAgent

    agent = SRAgent(max_restart_loop=settings.R, global_width=settings.C,
                    max_refinement_depth=settings.L, local_sample_size=settings.K,
                    seed=settings.seed, tool_parser=settings.tool_parser,
                    run_id=f"bench-{problem.id}")
    started = time.perf_counter()
    result = agent.run(X, {problem.output: y}, f"Find {problem.output}")
    seconds = time.perf_counter() - started
    best = result.get("best_candidate")
    formula = result["candidates"][best]["formula"] if best is not None else ""
    if not formula:
        return Outcome(problem.name, "srharness", False, None, None, seconds, "", "no candidate")
    judgement = problem.judge(formula, seed=settings.seed)
    return Outcome(problem.name, "srharness", judgement.solved, _finite(judgement.r2),
                   _finite(judgement.max_relative_error), seconds, formula,
                   f"{result.get('status')}, {agent.store.node_count} nodes")


# ---------------------------------------------------------------- baselines
def matrix(problem: Problem, data: dict[str, np.ndarray]) -> np.ndarray:
    return np.column_stack([data[name] for name in problem.feature_names])


def run_gplearn(problem: Problem, X: dict[str, np.ndarray], y: np.ndarray, budget: float,
                seed: int) -> Outcome:
    """gplearn, one generation at a time while the next one fits the budget."""
    from gplearn.genetic import SymbolicRegressor

    model = SymbolicRegressor(population_size=GPLEARN_POPULATION, generations=1,
                              function_set=GPLEARN_FUNCTIONS, random_state=seed,
                              warm_start=True)
    generation, seconds = evolve_gplearn(model, matrix(problem, X), y, budget)
    predicted = model.predict(matrix(problem, fresh_inputs(problem, seed)))
    return _baseline_outcome(problem, "gplearn", predicted, seed, seconds, str(model._program),
                             f"{generation} generations")


def run_operon(problem: Problem, X: dict[str, np.ndarray], y: np.ndarray, budget: float,
               seed: int) -> Outcome:
    """pyoperon with a whole-second time limit (its only time control)."""
    from pyoperon.sklearn import SymbolicRegressor

    limit = max(1, round(budget))
    model = SymbolicRegressor(allowed_symbols=OPERON_SYMBOLS, max_time=limit, n_threads=1,
                              generations=OPERON_UNBOUNDED, max_evaluations=OPERON_UNBOUNDED,
                              random_state=seed)
    started = time.perf_counter()
    model.fit(matrix(problem, X), y)
    seconds = time.perf_counter() - started
    predicted = model.predict(matrix(problem, fresh_inputs(problem, seed)))
    formula = model.get_model_string(model.model_, 6, problem.feature_names)
    return _baseline_outcome(problem, "pyoperon", predicted, seed, seconds, formula,
                             f"max_time={limit}s")


def _baseline_outcome(problem: Problem, method: str, predicted: np.ndarray, seed: int,
                      seconds: float, formula: str, note: str) -> Outcome:
    solved, worst, r2 = judge_predictions(problem, predicted, seed)
    return Outcome(problem.name, method, solved, r2, worst, seconds, formula, note)


BASELINES: dict[str, tuple[str, Callable[..., Outcome]]] = {
    "gplearn": ("gplearn.genetic", run_gplearn), "pyoperon": ("pyoperon.sklearn", run_operon),
}


def available_baselines(requested: Sequence[str]) -> tuple[list[str], list[str]]:
    """The requested baselines that import, and a note for each one that does not."""
    usable, notes = [], []
    for name in requested:
        module, _ = BASELINES[name]
        try:
            __import__(module)
        except ImportError as error:
            notes.append(f"{name} skipped: not importable ({error})")
        else:
            usable.append(name)
    return usable, notes


# ---------------------------------------------------------------------- run
def run_problem(problem: Problem, settings: Settings, baselines: Sequence[str],
                ) -> list[Outcome]:
    """Every method on one problem, on the same search data."""
    X, y = problem.sample(settings.samples, seed=settings.seed)
    ours = run_ours(problem, X, y, settings)
    outcomes = [ours]
    for name in baselines:
        try:
            budget = settings.baseline_seconds or ours.seconds
            outcomes.append(BASELINES[name][1](problem, X, y, budget, settings.seed))
        except Exception as error:  # noqa: BLE001 - a baseline's failure is a result
            outcomes.append(Outcome(problem.name, name, False, None, None, 0.0, "",
                                    f"failed: {error!r:.120}"))
    return outcomes


def summary(outcomes: Sequence[Outcome], methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per method: solved count, problems, total and mean time, median R^2."""
    totals = {}
    for method in methods:
        rows = [o for o in outcomes if o.method == method]
        r2 = [o.r2 for o in rows if o.r2 is not None]
        seconds = sum(o.seconds for o in rows)
        totals[method] = {"solved": sum(o.solved for o in rows), "problems": len(rows),
                          "r2_above_0.999": sum(1 for v in r2 if v > 0.999),
                          "median_r2": float(np.median(r2)) if r2 else None,
                          "seconds": seconds, "mean_seconds": seconds / max(len(rows), 1)}
    return totals


def _cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return f"{'-':>24}"
    r2 = "  n/a" if outcome.r2 is None else f"{min(outcome.r2, 9.99999):.5f}"
    return f"{'OK' if outcome.solved else 'no':>3} {r2:>8} {outcome.seconds:6.1f}s  "


def print_table(outcomes: Sequence[Outcome], methods: Sequence[str], notes: Sequence[str],
                ) -> None:
    names = list(dict.fromkeys(o.problem for o in outcomes))
    by_key = {(o.problem, o.method): o for o in outcomes}
    print(f"{'problem':26}" + "".join(f"{m + ' (solved R2 time)':>26}" for m in methods))
    for name in names:
        print(f"{name[:26]:26}" + "".join(_cell(by_key.get((name, m))) for m in methods))
    totals = summary(outcomes, methods)
    print(f"{'TOTAL solved / time':26}" + "".join(
        f"{totals[m]['solved']:>9}/{totals[m]['problems']:<3} {totals[m]['seconds']:8.1f}s    "
        for m in methods))
    print("\nbest formula per problem (ours):")
    for o in outcomes:
        if o.method == "srharness":
            print(f"  {o.problem[:26]:26} {o.formula[:FORMULA_CHARS]}")
    for note in notes:
        print(f"note: {note}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default=None, help="suite JSON (default: the public suite)")
    parser.add_argument("--problems", nargs="*", default=None, help="names or ids to run")
    for flag, default, text in (("-R", 1, "restarts"), ("-C", 2, "branches per restart"),
                                ("-L", 6, "steps per branch"), ("-K", 2, "samples per step"),
                                ("--samples", 2000, "search points"), ("--seed", 0, "seed")):
        parser.add_argument(flag, type=int, default=default, help=text)
    parser.add_argument("--tool-parser", default="openai",
                        choices=["openai", "text", "json", "xml"])
    parser.add_argument("--baselines", default="gplearn,pyoperon",
                        help="comma-separated baselines, or 'none'")
    parser.add_argument("--baseline-seconds", type=float, default=None,
                        help="fixed per-problem budget of each baseline (default: our time)")
    parser.add_argument("--json", default=None, help="write every outcome to this file")
    args = parser.parse_args(argv)
    if args.baseline_seconds is not None and args.baseline_seconds <= 0:
        parser.error("--baseline-seconds must be > 0")
    return args


DYNAMICS_SUITES = ("strogatz", "network")
"""Suites of derivative targets, benchmarked by scripts/bench_dynamics.py."""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if "--budget" in arguments:  # the fixed-budget comparison of srh_engine.search
        from bench_search_budget import main as run_budget

        return run_budget(arguments)
    args = parse_args(argv)
    if args.suite in DYNAMICS_SUITES:
        from bench_dynamics import main as run_dynamics

        return run_dynamics(sys.argv[1:] if argv is None else list(argv))
    requested = [] if args.baselines == "none" else [b for b in args.baselines.split(",") if b]
    unknown = [b for b in requested if b not in BASELINES]
    if unknown:
        raise SystemExit(f"unknown baseline(s) {unknown}; choose from {sorted(BASELINES)}")
    settings = Settings(args.R, args.C, args.L, args.K, args.samples, args.seed,
                        args.tool_parser, requested, args.baseline_seconds)
    suite = load_suite(args.suite)
    baselines, notes = available_baselines(requested)
    methods = ["srharness", *baselines]
    outcomes: list[Outcome] = []
    for problem in suite.select(args.problems):
        found = run_problem(problem, settings, baselines)
        outcomes += found
        print("  ".join(f"{o.method}={'OK' if o.solved else 'no'} {o.seconds:.1f}s"
                        for o in found) + f"  {problem.name}", file=sys.stderr, flush=True)
    print_table(outcomes, methods, notes)
    if args.json:
        document = {"suite": suite.name, "settings": asdict(settings), "notes": notes,
                    "platform": platform.platform(), "summary": summary(outcomes, methods),
                    "outcomes": [asdict(o) for o in outcomes]}
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
