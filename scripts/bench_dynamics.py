#!/usr/bin/env python
"""Dynamics benchmark: derivative targets of the Strogatz ODEs and of network dynamics.

Run alone, or through ``scripts/bench_search.py --suite strogatz|network``::

    .venv/bin/python scripts/bench_dynamics.py [--suite strogatz|network|FILE]
        [--problems A B ...] [-R 1 -C 2 -L 6 -K 2] [--samples 2000] [--seed 0]
        [--baselines gplearn,pyoperon | none] [--baseline-seconds S] [--json out.json]

Protocol (``srh_core/problems/dynamics.py`` and ``network.py``): every method
gets the same search data (trajectories from seeded initial conditions, the
exact derivative as target; features: the states and the time ``t``) and is
judged on fresh trajectories (seed ``[seed, 1]``) by

- fresh-point error: ``max |f - y| / max |y|``; *exact* below 1e-6;
- rollout error: the problem's state integrated with the model (the other
  states observed) from each fresh initial condition, RMSE / std(state);
- solved = exact and rollout error below 1e-3;
- system rollout: for a Strogatz system, both found derivatives integrated
  together from fresh initial conditions (relative RMSE over both states).

Our agent runs the R-C-L-K search with the default ``offline`` provider. The
baselines (gplearn, pyoperon) get the same derivative targets and features at
the same wall-clock budget per problem as ours (``--baseline-seconds`` fixes
it instead). On network problems the baselines see each node's own values as
rows (``x_i``, node constants, ``t``): they cannot read the graph, so coupling
terms are out of their reach; that is reported, not hidden.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.problems import load_suite  # noqa: E402
from srh_core.problems.dynamics import ROLLOUT_TOLERANCE, SOLVED_TOLERANCE  # noqa: E402

DYNAMICS_SUITES = ("strogatz", "network")
GPLEARN_POPULATION = 1000
GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sin", "cos", "inv")
OPERON_SYMBOLS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"
OPERON_UNBOUNDED = 10**9
FORMULA_CHARS = 70

Predictor = Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Outcome:
    problem: str
    method: str
    solved: bool
    exact: bool
    point_error: float | None
    rollout_error: float | None
    r2: float | None
    seconds: float
    formula: str
    note: str = ""


@dataclass(slots=True)
class Settings:
    R: int = 1
    C: int = 2
    L: int = 6
    K: int = 2
    samples: int = 2000
    seed: int = 0
    baselines: tuple[str, ...] = ("gplearn", "pyoperon")
    baseline_seconds: float | None = None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


# ------------------------------------------------------------------ judging
def _fresh(problem: Any, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    if problem.kind == "network":
        states, truth = problem.simulate(max(1000 // problem.num_nodes,
                                             2 * problem.trajectories),
                                         np.random.default_rng([seed, 1]))
        return dict(problem.values(states)), truth
    data = problem.simulate(1000, np.random.default_rng([seed, 1]))
    return {**data.states, "t": data.times}, data.derivatives[problem.state]


def rows(problem: Any, data: dict[str, np.ndarray]) -> np.ndarray:
    """The baselines' design matrix: one row per sample (per sample and node on graphs)."""
    if problem.kind == "network":
        n, nodes = data[problem.state].shape
        columns = [data[problem.state].reshape(-1)]
        columns += [data[f.name].reshape(-1) for f in problem.fields]
        columns.append(np.repeat(np.asarray(data["t"]).reshape(-1), nodes))
        return np.column_stack(columns)
    return np.column_stack([data[name] for name in problem.feature_names])


def judge_predictor(problem: Any, predict: Predictor, seed: int) -> tuple[bool, bool, Any, Any,
                                                                           Any]:
    """(solved, exact, point error, rollout error, R^2) of any predictor."""
    from srh_core.evaluator.dynamics import RolloutError
    from srh_core.problems.dynamics import scale_error

    data, truth = _fresh(problem, seed)
    try:
        with np.errstate(all="ignore"):
            predicted = np.asarray(predict(data), dtype=float).reshape(truth.shape)
    except (ValueError, ArithmeticError):
        return False, False, None, None, None
    worst, r2 = scale_error(truth, predicted)
    try:
        rollout = predictor_rollout(problem, predict, data)
    except (RolloutError, ValueError, ArithmeticError):
        rollout = None
    exact = worst < SOLVED_TOLERANCE
    solved = exact and rollout is not None and rollout < ROLLOUT_TOLERANCE
    return solved, exact, _finite(worst), _finite(rollout), _finite(r2)


def predictor_rollout(problem: Any, predict: Predictor, data: dict[str, np.ndarray]) -> float:
    """Relative rollout RMSE of the problem's state driven by ``predict``."""
    from scipy.interpolate import CubicSpline

    from srh_core.evaluator.dynamics import BLOWUP_FACTOR, integrate_system, trajectory_segments

    times = np.asarray(data["t"], dtype=float).reshape(-1)
    observed = np.asarray(data[problem.state], dtype=float)
    bound = BLOWUP_FACTOR * (1 + float(np.max(np.abs(observed))))
    rolled = np.empty_like(observed)
    for segment in trajectory_segments(times):
        t = times[segment]
        others = {k: np.asarray(v)[segment] for k, v in data.items()
                  if k not in (problem.state, "t") and np.shape(v)[:1] == times.shape}
        splines = {k: CubicSpline(t, v, axis=0) for k, v in others.items()}
        fixed = {k: v for k, v in data.items() if k not in others and k not in
                 (problem.state, "t")}
        shape = observed.shape[1:]

        def rhs(at: float, y: np.ndarray, splines: dict = splines, shape: tuple = shape,
                fixed: dict = fixed) -> np.ndarray:
            point = {**fixed, **{k: s(at)[None, ...] for k, s in splines.items()}}
            point[problem.state] = y.reshape((1, *shape))
            point["t"] = np.full((1, *np.shape(data["t"])[1:]), at)
            return np.asarray(predict(point), dtype=float).reshape(-1)

        rolled[segment] = integrate_system(rhs, observed[segment][0].reshape(-1), t,
                                           bound=bound, time_limit=30.0).reshape(
                                               (-1, *shape))
    rmse = float(np.sqrt(np.mean((rolled - observed) ** 2)))
    return rmse / (float(np.std(observed)) or 1.0)


def formula_predictor(problem: Any, formula: str) -> Predictor:
    from srh_engine import parse

    expression = parse(formula)
    nodes = getattr(problem, "num_nodes", None)

    def predict(data: dict[str, np.ndarray]) -> np.ndarray:
        values = dict(data)
        if nodes is not None:
            values = {k: (np.asarray(v)[:, None] if np.ndim(v) == 1 and k != "A" else v)
                      for k, v in values.items()}
        return expression.evaluate(values, num_nodes=nodes)

    return predict


def model_predictor(problem: Any, model: Any) -> Predictor:
    def predict(data: dict[str, np.ndarray]) -> np.ndarray:
        return model.predict(rows(problem, data))

    return predict


def system_rollout(problems: list[Any], predictors: dict[str, Predictor], seed: int
                   ) -> float | None:
    """Relative RMSE of a whole Strogatz system driven by the found derivatives together."""
    from srh_core.evaluator.dynamics import RolloutError, integrate_system, trajectory_segments

    first = problems[0]
    data = first.simulate(1000, np.random.default_rng([seed, 1]))
    states = first.states
    observed = np.column_stack([data.states[s] for s in states])
    by_state = {p.state: predictors[p.name] for p in problems if p.name in predictors}
    if set(by_state) != set(states):
        return None
    rolled = np.empty_like(observed)

    def rhs(at: float, y: np.ndarray) -> np.ndarray:
        point = {s: np.array([y[k]]) for k, s in enumerate(states)} | {"t": np.array([at])}
        return np.array([float(np.asarray(by_state[s](point)).reshape(-1)[0]) for s in states])

    try:
        for segment in trajectory_segments(data.times):
            rolled[segment] = integrate_system(rhs, observed[segment][0], data.times[segment],
                                               bound=1e3 * (1 + np.max(np.abs(observed))),
                                               time_limit=60.0)
    except (RolloutError, ValueError, ArithmeticError):
        return None
    return float(np.sqrt(np.mean((rolled - observed) ** 2)) / (np.std(observed) or 1.0))


# ------------------------------------------------------------------ methods
def run_ours(problem: Any, X: Any, y: np.ndarray, settings: Settings) -> tuple[Outcome, str]:
    from srh_core.agent import SRAgent

    agent = SRAgent(max_restart_loop=settings.R, global_width=settings.C,
                    max_refinement_depth=settings.L, local_sample_size=settings.K,
                    seed=settings.seed, run_id=f"bench-{problem.id}")
    started = time.perf_counter()
    result = agent.run(X, {problem.output: y}, f"Find {problem.output}")
    seconds = time.perf_counter() - started
    best = result.get("best_candidate")
    formula = result["candidates"][best]["formula"] if best is not None else ""
    if not formula:
        return Outcome(problem.name, "srharness", False, False, None, None, None, seconds, "",
                       "no candidate"), ""
    solved, exact, point, rollout, r2 = judge_predictor(
        problem, formula_predictor(problem, formula), settings.seed)
    return Outcome(problem.name, "srharness", solved, exact, point, rollout, r2, seconds,
                   formula, f"{result.get('status')}, {agent.store.node_count} nodes"), formula


def run_gplearn(problem: Any, X: Any, y: np.ndarray, budget: float, seed: int
                ) -> tuple[Outcome, Predictor]:
    from bench_search import evolve_gplearn
    from gplearn.genetic import SymbolicRegressor

    model = SymbolicRegressor(population_size=GPLEARN_POPULATION, generations=1,
                              function_set=GPLEARN_FUNCTIONS, random_state=seed,
                              warm_start=True)
    generation, seconds = evolve_gplearn(model, rows(problem, X), np.asarray(y).reshape(-1),
                                         budget)
    return _baseline(problem, "gplearn", model, seed, seconds, str(model._program),
                     f"{generation} generations")


def run_operon(problem: Any, X: Any, y: np.ndarray, budget: float, seed: int
               ) -> tuple[Outcome, Predictor]:
    from pyoperon.sklearn import SymbolicRegressor

    limit = max(1, round(budget))
    model = SymbolicRegressor(allowed_symbols=OPERON_SYMBOLS, max_time=limit, n_threads=1,
                              generations=OPERON_UNBOUNDED, max_evaluations=OPERON_UNBOUNDED,
                              random_state=seed)
    started = time.perf_counter()
    model.fit(rows(problem, X), np.asarray(y).reshape(-1))
    seconds = time.perf_counter() - started
    return _baseline(problem, "pyoperon", model, seed, seconds,
                     model.get_model_string(model.model_, 6), f"max_time={limit}s")


def _baseline(problem: Any, method: str, model: Any, seed: int, seconds: float, formula: str,
              note: str) -> tuple[Outcome, Predictor]:
    predictor = model_predictor(problem, model)
    solved, exact, point, rollout, r2 = judge_predictor(problem, predictor, seed)
    if problem.kind == "network":
        note += "; node-local features only (no graph)"
    return Outcome(problem.name, method, solved, exact, point, rollout, r2, seconds, formula,
                   note), predictor


BASELINES: dict[str, tuple[str, Callable[..., tuple[Outcome, Predictor]]]] = {
    "gplearn": ("gplearn.genetic", run_gplearn), "pyoperon": ("pyoperon.sklearn", run_operon),
}


def available(requested: Sequence[str]) -> tuple[list[str], list[str]]:
    usable, notes = [], []
    for name in requested:
        try:
            __import__(BASELINES[name][0])
        except ImportError as error:
            notes.append(f"{name} skipped: not importable ({error})")
        else:
            usable.append(name)
    return usable, notes


# ---------------------------------------------------------------------- run
def run_problem(problem: Any, settings: Settings, baselines: Sequence[str]
                ) -> tuple[list[Outcome], dict[str, Predictor]]:
    X, y = problem.sample(settings.samples, seed=settings.seed)
    ours, formula = run_ours(problem, X, y, settings)
    outcomes, found = [ours], {}
    if formula:
        found["srharness"] = formula_predictor(problem, formula)
    for name in baselines:
        budget = settings.baseline_seconds or ours.seconds
        try:
            outcome, found[name] = BASELINES[name][1](problem, X, y, budget, settings.seed)
        except Exception as error:  # noqa: BLE001 - a baseline's failure is a result
            outcome = Outcome(problem.name, name, False, False, None, None, None, 0.0, "",
                              f"failed: {error!r:.120}")
        outcomes.append(outcome)
    return outcomes, found


def summary(outcomes: Sequence[Outcome], methods: Sequence[str]) -> dict[str, Any]:
    totals = {}
    for method in methods:
        mine = [o for o in outcomes if o.method == method]
        rollouts = [o.rollout_error for o in mine if o.rollout_error is not None]
        totals[method] = {"solved": sum(o.solved for o in mine),
                          "exact": sum(o.exact for o in mine), "problems": len(mine),
                          "seconds": sum(o.seconds for o in mine),
                          "median_rollout_error": float(np.median(rollouts)) if rollouts
                          else None, "rollouts_failed": sum(o.rollout_error is None
                                                           for o in mine)}
    return totals


def _cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return f"{'-':>30}"
    rollout = "fail" if outcome.rollout_error is None else f"{outcome.rollout_error:.1e}"
    mark = "OK" if outcome.solved else ("ex" if outcome.exact else "no")
    return f"{mark:>3} {rollout:>8} {outcome.seconds:6.1f}s      "


def print_table(outcomes: Sequence[Outcome], methods: Sequence[str],
                systems: dict[str, dict[str, float | None]], notes: Sequence[str]) -> None:
    names = list(dict.fromkeys(o.problem for o in outcomes))
    key = {(o.problem, o.method): o for o in outcomes}
    print(f"{'problem':24}" + "".join(f"{m + ' (solved rollout time)':>30}" for m in methods))
    for name in names:
        print(f"{name[:24]:24}" + "".join(_cell(key.get((name, m))) for m in methods))
    totals = summary(outcomes, methods)
    print(f"{'TOTAL solved/exact':24}" + "".join(
        f"{totals[m]['solved']:>8}/{totals[m]['exact']:<3}of {totals[m]['problems']:<3}"
        f"{totals[m]['seconds']:8.1f}s    " for m in methods))
    if systems:
        print("\nsystem rollout error (both found derivatives integrated together):")
        for system, values in systems.items():
            cells = "  ".join(f"{m}={'fail' if v is None else f'{v:.2e}'}"
                              for m, v in values.items())
            print(f"  {system:12} {cells}")
    print("\nbest formula per problem (ours):")
    for o in outcomes:
        if o.method == "srharness":
            print(f"  {o.problem[:24]:24} {o.formula[:FORMULA_CHARS]}")
    for note in notes:
        print(f"note: {note}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="strogatz", help="strogatz, network or a suite file")
    parser.add_argument("--problems", nargs="*", default=None)
    for flag, default in (("-R", 1), ("-C", 2), ("-L", 6), ("-K", 2), ("--samples", 2000),
                          ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--tool-parser", default="openai", help="accepted for bench_search "
                        "compatibility; the offline model is parser-independent")
    parser.add_argument("--baselines", default="gplearn,pyoperon")
    parser.add_argument("--baseline-seconds", type=float, default=None)
    parser.add_argument("--json", default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    requested = [] if args.baselines == "none" else [b for b in args.baselines.split(",") if b]
    settings = Settings(args.R, args.C, args.L, args.K, args.samples, args.seed,
                        tuple(requested), args.baseline_seconds)
    suite = load_suite(args.suite)
    baselines, notes = available(requested)
    methods = ["srharness", *baselines]
    outcomes: list[Outcome] = []
    found: dict[str, dict[str, Predictor]] = {}
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else []
    problems = suite.select(args.problems)
    for problem in problems:
        mine, predictors = run_problem(problem, settings, baselines)
        outcomes += mine
        for method, predictor in predictors.items():
            found.setdefault(method, {})[problem.name] = predictor
        print("  ".join(f"{o.method}={'OK' if o.solved else 'no'} {o.seconds:.1f}s"
                        for o in mine) + f"  {problem.name}", file=sys.stderr, flush=True)
    systems: dict[str, dict[str, float | None]] = {}
    for system in dict.fromkeys(getattr(p, "system_id", None) for p in problems):
        group = [p for p in problems if getattr(p, "system_id", None) == system]
        if system is None or len(group) < 2:
            continue
        systems[system] = {m: system_rollout(group, found.get(m, {}), settings.seed)
                           for m in methods}
    print_table(outcomes, methods, systems, notes)
    print(f"loadavg at start: {' '.join(load)}")
    document = {"suite": suite.name, "settings": asdict(settings), "notes": notes,
                "platform": platform.platform(), "loadavg": load,
                "summary": summary(outcomes, methods), "systems": systems,
                "outcomes": [asdict(o) for o in outcomes]}
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
