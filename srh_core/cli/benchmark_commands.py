"""``srh benchmark run|judge``: SRBench-style benchmarks as sweeps whose variants are methods.

``srh benchmark run`` writes a sweep (``OUT/benchmark.toml``, the record of
what was asked) whose variants are the methods, with SRBench's protocol (a
25 % test split, trial seeds from SRBench's published list, noise levels as
given), and runs it like any sweep: embedded, or on the cluster with
``--backend celery``. Every method's cell gets the same data, split, budget
and one process. Run again, it skips the cells already done and re-runs the
failed ones (the sweep's resume). ``OUT/results.jsonl`` gets a line as each
cell finishes (so a run that is killed keeps the rows of what finished; a
re-run cell may then have two lines, the last one counts); at the end of
every invocation it is rewritten whole, one line per cell, from the sweep's
state, and ``OUT/summary.json`` with it, each atomically, so both are valid
on every rerun.

``srh benchmark judge FORMULA --truth TRUTH`` prints the judge's verdict for
one pair (:mod:`srh_core.benchmark.judge`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srh_core.errors import ConfigurationError

#: The fields of one benchmark row (``--json``), in order.
ROW_FIELDS = ("problem", "seed", "method", "noise", "status", "symbolic_solution",
              "symbolic_solution_positive", "accuracy_solution", "exact", "r2_test", "nmse_id",
              "nmse_ood", "complexity", "seconds", "tokens", "best_formula", "symbolic_reason",
              "error")
DEFAULT_SUITE = "feynman"
DEFAULT_METHODS = "srh,gplearn,pyoperon"


def register(subparsers: Any) -> None:
    from srh_engine.processes import available_cores

    benchmark = subparsers.add_parser(
        "benchmark", help="SRBench-style benchmarks: methods x problems x seeds x noise",
        description="Benchmarks as sweeps whose variants are methods (srh and the baselines "
                    "gplearn, pyoperon, pysr), under SRBench's protocol, judged by SRBench's "
                    "symbolic and accuracy solutions and LLM-SRBench's measures.")
    actions = benchmark.add_subparsers(dest="benchmark_action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run", help="run (or resume) a benchmark and print its table",
        description="Run every cell (problem x seed x noise x method); run again, the cells "
                    "done are skipped and the failed ones re-run.")
    run.add_argument("--suite", default=DEFAULT_SUITE,
                     help="built-in suite (feynman, feynman-public, lsr-transform, ...) or a "
                          "suite JSON file (default %(default)s)")
    run.add_argument("--problems", type=int, default=None, metavar="N",
                     help="the first N problems of the suite (default: all but the ones the "
                          "suite marks excluded)")
    run.add_argument("--problem", action="append", default=None, metavar="NAME",
                     help="one problem by name (repeatable; instead of --problems)")
    run.add_argument("--include-excluded", action="store_true",
                     help="keep the problems the suite marks excluded (SRBench's three)")
    trials = run.add_mutually_exclusive_group()
    trials.add_argument("--seeds", type=int, default=1, metavar="N",
                        help="trials: the first N of SRBench's seed list (default 1)")
    trials.add_argument("--trial", type=int, action="append", default=None, metavar="K",
                        help="trial K only: SRBench's K-th seed (repeatable), e.g. a "
                             "later trial run on its own")
    run.add_argument("--noise", default="0", metavar="L[,L...]",
                     help="noise levels, a fraction of the training target's RMS "
                          "(SRBench: 0,0.001,0.01,0.1; default 0)")
    run.add_argument("--methods", default=DEFAULT_METHODS,
                     help="comma-separated methods (default %(default)s)")
    run.add_argument("--budget", type=float, required=True, metavar="SECONDS",
                     help="budget of every cell: each method's fit time, counted once its "
                          "tool processes and packages are started (wall-clock)")
    run.add_argument("--samples", type=int, default=2000,
                     help="points per problem before the split (default %(default)s)")
    run.add_argument("--test-fraction", type=float, default=0.25,
                     help="share held out for testing (SRBench: %(default)s)")
    run.add_argument("--max-train-samples", type=int, default=None, metavar="N",
                     help="cap on the training points (SRBench's option)")
    run.add_argument("--anonymize", action="store_true",
                     help="inputs x1..xn, target y, no description: nothing of the physics")
    run.add_argument("--no-units", dest="units", action="store_false",
                     help="do not give the methods the suite's units (Feynman has them)")
    run.add_argument("--llm", default=None, metavar="PROVIDER[:MODEL]",
                     help="the srh method's model (default: the offline provider)")
    run.add_argument("--name", default=None,
                     help="the benchmark's (sweep's) name (default bench-SUITE)")
    run.add_argument("--out", default=None, help="output directory (default benchmarks/NAME)")
    run.add_argument("--backend", default="embedded", help="embedded (default) or celery")
    run.add_argument("--jobs", type=int, default=available_cores(), metavar="N",
                     help="embedded: cells at once, one process each (default %(default)s)")
    output = run.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="rows and summary as JSON")
    output.add_argument("--format", choices=("md",), default=None,
                        help="md: a Markdown table laid out like SRBench's ground-truth table")
    run.set_defaults(handler=handle_benchmark_run)
    judge = actions.add_parser("judge", help="is FORMULA a symbolic solution of TRUTH?",
                               description="SRBench's symbolic-solution test of one pair "
                                           "(no data: the R^2 gate is not applied).")
    judge.add_argument("formula")
    judge.add_argument("--truth", required=True)
    judge.add_argument("--positive", default="", metavar="NAMES",
                       help="comma-separated variables to declare positive (default: none, "
                            "SRBench's rule)")
    judge.add_argument("--json", action="store_true")
    judge.set_defaults(handler=handle_benchmark_judge)


def handle_benchmark_judge(args: argparse.Namespace) -> int:
    from srh_core.benchmark.judge import judge_pair

    positive = [name.strip() for name in args.positive.split(",") if name.strip()]
    verdict = judge_pair(args.formula, args.truth, positive)
    if args.json:
        print(json.dumps(verdict))
    else:
        answer = "a symbolic solution" if verdict["symbolic_solution"] else "not a solution"
        print(f"{answer}: {verdict['reason']}")
    return 0 if verdict["symbolic_solution"] else 1


def parse_levels(text: str) -> list[float]:
    try:
        levels = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigurationError(f"--noise takes levels like 0,0.01; got {text!r}.",
                                 setting="noise") from None
    if not levels:
        raise ConfigurationError("--noise needs at least one level.", setting="noise")
    return levels


def trial_seeds(args: argparse.Namespace) -> list[int] | str:
    """``--trial K ...`` as SRBench's K-th seeds, else ``--seeds N`` as its first N."""
    from srh_core.benchmark.protocol import SRBENCH_SEED_COUNT, SRBENCH_SEEDS

    if not args.trial:
        if not 1 <= args.seeds <= SRBENCH_SEED_COUNT:
            raise ConfigurationError(f"--seeds takes 1..{SRBENCH_SEED_COUNT} (the first N of "
                                     f"SRBench's seed list); got {args.seeds}.",
                                     setting="seeds")
        return f"srbench:{args.seeds}"
    for k in args.trial:
        if not 1 <= k <= SRBENCH_SEED_COUNT:
            raise ConfigurationError(f"--trial takes 1..{SRBENCH_SEED_COUNT} (SRBench's seed "
                                     f"list); got {k}.", setting="trial")
    return list(dict.fromkeys(SRBENCH_SEEDS[k - 1] for k in args.trial))


def benchmark_spec(args: argparse.Namespace) -> Any:
    """The sweep of a ``srh benchmark run`` command line."""
    from pydantic import ValidationError

    from srh_core.benchmark.baselines import check_method
    from srh_core.problems import load_suite
    from srh_core.sweep.spec import SweepSpec, Variant

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or len(set(methods)) != len(methods):
        raise ConfigurationError(f"--methods needs distinct methods; got {args.methods!r}.",
                                 setting="methods")
    for method in methods:
        check_method(method)
    if args.budget <= 0:
        raise ConfigurationError(f"--budget must be > 0 seconds; got {args.budget}.",
                                 setting="budget")
    suite = load_suite(args.suite)
    if args.problem:
        problems = [suite.get(name).name for name in args.problem]
    else:
        chosen = [p for p in suite.problems
                  if args.include_excluded or not getattr(p, "excluded", None)]
        if args.problems is not None:
            if args.problems < 1:
                raise ConfigurationError(f"--problems must be at least 1; got {args.problems}.",
                                         setting="problems")
            chosen = chosen[:args.problems]
        problems = [p.name for p in chosen]
    # the budget is every method's fit time: its start-up (tool processes, imports) is not
    # in it (SearchSettings.time_limit_clock), the same rule for srh and the baselines
    settings: dict[str, Any] = {"time_limit": args.budget, "time_limit_clock": "fit"}
    variants = []
    for method in methods:
        overrides: dict[str, Any] = {}
        if method == "srh" and args.llm:
            provider, _, model = args.llm.partition(":")
            overrides = {"llm_provider": provider, **({"llm_model": model} if model else {})}
        variants.append(Variant(name=method, method=method, **overrides))
    name = args.name or re.sub(r"[^A-Za-z0-9_-]+", "-", f"bench-{Path(args.suite).stem}")[:48]
    levels = parse_levels(args.noise)
    try:
        return SweepSpec(name=name, suite=args.suite, problems=problems,
                         seeds=trial_seeds(args), samples=args.samples,
                         noise=levels if len(levels) > 1 else levels[0],
                         test_fraction=args.test_fraction,
                         max_train_samples=args.max_train_samples, anonymize=args.anonymize,
                         units=getattr(args, "units", True), settings=settings, variants=variants,
                         base_dir=str(Path.cwd()))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigurationError(f"Invalid benchmark: {where}: {first['msg']} (got "
                                 f"{first.get('input')!r}).", setting=where) from None


def handle_benchmark_run(args: argparse.Namespace) -> int:
    from srh_core.cli.commands import drive_sweep

    if args.jobs < 1:  # before anything is written
        raise ConfigurationError(f"--jobs must be at least 1; got {args.jobs}.", setting="jobs")
    spec = benchmark_spec(args)
    out = Path(args.out or Path("benchmarks") / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    write_spec(out / "benchmark.toml", spec)
    print(f"Benchmark {spec.name}: {len(spec.problems)} problems x {len(spec.seed_list())} seeds x "
          f"{len(spec.noise_levels())} noise levels x {len(spec.variants)} methods, "
          f"{args.budget:g} s per cell -> {out}", file=sys.stderr)
    return drive_sweep(args, spec, out, lambda rows: finish(args, spec, out, rows),
                       on_final=lambda row: append_row(out / "results.jsonl", row))


def append_row(path: Path, sweep_row: Mapping[str, Any]) -> None:
    """One finished cell's benchmark row, appended to ``results.jsonl`` (one write)."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(json.dumps(benchmark_row(sweep_row), default=str) + "\n")


def write_spec(path: Path, spec: Any) -> None:
    """The benchmark as a sweep file (``srh sweep run`` can run it too)."""
    from srh_core.jsonio import atomic_write_text

    lines = [f"# written by srh benchmark run; `srh sweep run {path.name}` resumes it too",
             f"name = {json.dumps(spec.name)}", f"suite = {json.dumps(spec.suite)}",
             f"problems = {json.dumps(spec.problems)}", f"seeds = {json.dumps(spec.seeds)}",
             f"samples = {spec.samples}", f"noise = {json.dumps(spec.noise)}",
             f"test_fraction = {spec.test_fraction}", f"anonymize = {str(spec.anonymize).lower()}",
             f"units = {str(spec.units).lower()}"]
    if spec.max_train_samples is not None:
        lines.append(f"max_train_samples = {spec.max_train_samples}")
    lines += ["", "[settings]"] + [f"{k} = {json.dumps(v)}" for k, v in spec.settings.items()]
    for variant in spec.variants:
        lines += ["", "[[variants]]", f"name = {json.dumps(variant.name)}",
                  f"method = {json.dumps(variant.method)}"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in (variant.model_extra or {}).items()]
    atomic_write_text(path, "\n".join(lines) + "\n")


def benchmark_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A sweep row as a benchmark row; a cell that did not finish has no solution."""
    done = row.get("status") == "done"
    values = {field: row.get(field) for field in ROW_FIELDS}
    values["method"] = row.get("method") or row.get("variant")
    values["exact"] = row.get("solved") is True
    for field in ("symbolic_solution", "symbolic_solution_positive", "accuracy_solution"):
        values[field] = bool(done and row.get(field) is True)
    return values


def summary(rows: Sequence[Mapping[str, Any]], resamples: int = 2000) -> list[dict[str, Any]]:
    """Rates with 95 % bootstrap CIs per method and noise level (unfinished cells count)."""
    from srh_core.sweep.report import bootstrap_ci, finite_median

    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["method"], float(row.get("noise") or 0.0)), []).append(row)
    result = []
    for (method, noise), group in groups.items():
        entry: dict[str, Any] = {"method": method, "noise": noise, "cells": len(group),
                                 "done": sum(r.get("status") == "done" for r in group)}
        for field, name in (("symbolic_solution", "symbolic_solution_rate"),
                            ("symbolic_solution_positive", "symbolic_solution_positive_rate"),
                            ("accuracy_solution", "accuracy_solution_rate"),
                            ("exact", "exact_rate")):
            outcomes = [bool(r.get(field)) for r in group]
            entry[name] = sum(outcomes) / len(outcomes)
            entry[f"{name}_ci"] = bootstrap_ci(outcomes, resamples=resamples)
        entry["median_r2_test"] = finite_median([r.get("r2_test") for r in group])
        entry["median_seconds"] = finite_median([r.get("seconds") for r in group])
        entry["tokens"] = sum(int(r.get("tokens") or 0) for r in group)
        result.append(entry)
    return result


def finish(args: argparse.Namespace, spec: Any, out: Path, sweep_rows: list[dict[str, Any]]
           ) -> int:
    from srh_core.jsonio import atomic_write_json, atomic_write_text

    rows = [benchmark_row(row) for row in sweep_rows]
    table = summary(rows)
    atomic_write_text(out / "results.jsonl",
                      "".join(json.dumps(row, default=str) + "\n" for row in rows))
    atomic_write_json(out / "summary.json", {"benchmark": spec.name, "suite": spec.suite,
                                             "budget_seconds": spec.settings["time_limit"],
                                             "summary": table})
    if args.json:
        print(json.dumps({"rows": rows, "summary": table}, default=str))
    elif args.format == "md":
        print(markdown(spec, table))
    else:
        print(text_table(spec, table, out))
    unfinished = [row for row in rows if row["status"] != "done"]
    for row in unfinished:
        print(f"  must be re-run: {row['problem']} seed {row['seed']} {row['method']} "
              f"noise {row['noise']} ({row['status']}: {row['error']})", file=sys.stderr)
    return 0 if not unfinished else 1


def _rate(entry: Mapping[str, Any], name: str) -> str:
    ci = entry.get(f"{name}_ci")
    interval = f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci else ""
    return f"{entry[name] * 100:.1f}%{interval}"


def markdown(spec: Any, table: Sequence[Mapping[str, Any]]) -> str:
    """SRBench's ground-truth table: one row per method, a column pair per noise level."""
    levels = sorted({entry["noise"] for entry in table})
    methods = list(dict.fromkeys(entry["method"] for entry in table))
    by = {(entry["method"], entry["noise"]): entry for entry in table}
    header = ["Method"] + [f"{label} (noise {level:g})" for level in levels
                           for label in ("Symbolic solution", "Accuracy solution")]
    lines = [f"Benchmark {spec.name} (suite {spec.suite}): rates in % with 95 % bootstrap "
             "CIs", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for method in methods:
        cells = [method]
        for level in levels:
            entry = by.get((method, level))
            cells += ([_rate(entry, "symbolic_solution_rate"),
                       _rate(entry, "accuracy_solution_rate")] if entry else ["", ""])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def text_table(spec: Any, table: Sequence[Mapping[str, Any]], out: Path) -> str:
    lines = [f"Benchmark {spec.name}: results in {out / 'results.jsonl'}, summary in "
             f"{out / 'summary.json'}",
             f"  {'method':<10} {'noise':>6} {'cells':>5}  {'symbolic solution':<24} "
             f"{'accuracy solution':<24} {'exact':>6}  symbolic, inputs positive"]
    for entry in table:
        lines.append(f"  {entry['method']:<10} {entry['noise']:>6g} {entry['cells']:>5}  "
                     f"{_rate(entry, 'symbolic_solution_rate'):<24} "
                     f"{_rate(entry, 'accuracy_solution_rate'):<24} "
                     f"{entry['exact_rate'] * 100:>5.1f}%  "
                     f"{entry['symbolic_solution_positive_rate'] * 100:.1f}%")
    return "\n".join(lines)
