#!/usr/bin/env python
"""Awkward data through the search and the fitting tools: every failure must be a typed one.

    .venv/bin/python scripts/fuzz_inputs.py [--cases 40] [--seed 0] [--budget 1]
        [--tools evaluate_formula,polynomial_fit,...] [--json out.json]

Each case draws a table (1 to 400 rows, 1 to 6 inputs) of one kind: plain, all positive,
a column of zeros, integers, two equal columns, inputs near 1e9 or 1e-9; and a target of
one kind: a product of inputs, zero, a constant, ``exp(300*x)`` (near 1e260), noise,
``1e-300*x``. :func:`srh_engine.search.search` (one process, ``--budget`` seconds) and
every tool of ``--tools`` (default: the closed-form fitting and analysis tools, and
``expression_search`` with the same budget) run on it. A search may raise only
``ValueError`` with a message of its own checks (non-finite data); a tool call may fail
only with a typed error (``ToolArgumentError``, ``FitError``, ``DataError``, the engine's
errors). Anything else (``ZeroDivisionError``, ``IndexError``, numpy's messages, a
search that ran past its budget by more than 3 s) is listed with its case, and the exit
code is 1. Found this way and fixed: a zero target, a target near 1e-300 or 1e260, more
fitted constants than rows, a front of no finite error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TABLES = ("plain", "positive", "zeros", "integers", "equal-columns", "huge", "tiny")
TARGETS = ("product", "zero", "constant", "near-1e260", "noise", "near-1e-300")
DEFAULT_TOOLS = ("evaluate_formula", "polynomial_fit", "power_law_fit", "rational_fit",
                 "monomial_sum_fit", "call_sindy", "statistics_analysis",
                 "relationship_analysis", "expression_search")
TOOL_PARAMS: dict[str, dict[str, Any]] = {"evaluate_formula": {"f": "x1*exp(x1)"}}
TYPED = frozenset({"ToolArgumentError", "FitError", "DataError", "EngineError", "ParseError",
                   "EvaluationError", "UnitError", "ConfigurationError"})
SEARCH_MESSAGES = ("needs finite", "matching rows")
OVERRUN_SECONDS = 3.0


def table(rng: np.random.Generator, kind: str, target: str, rows: int, inputs: int
          ) -> tuple[np.ndarray, np.ndarray]:
    X = rng.uniform(-2, 2, (rows, inputs))
    if kind == "positive":
        X = np.abs(X) + 0.1
    elif kind == "zeros":
        X[:, 0] = 0.0
    elif kind == "integers":
        X = np.round(X)
    elif kind == "equal-columns" and inputs > 1:
        X[:, 1] = X[:, 0]
    elif kind == "huge":
        X = X * 1e9
    elif kind == "tiny":
        X = X * 1e-9
    with np.errstate(all="ignore"):
        y = {"product": lambda: X[:, 0] * X[:, -1], "zero": lambda: np.zeros(rows),
             "constant": lambda: np.full(rows, 2.5),
             "near-1e260": lambda: np.exp(300 * np.clip(X[:, 0], -2, 2)),
             "noise": lambda: rng.normal(size=rows),
             "near-1e-300": lambda: 1e-300 * X[:, 0]}[target]()
    return X, np.asarray(y, dtype=float)


def search_failure(X: np.ndarray, y: np.ndarray, budget: float, seed: int) -> str | None:
    from srh_engine.search import search

    started = time.monotonic()
    try:
        search(X, y, time_budget=budget, seed=seed, workers=1)
    except ValueError as error:
        if any(text in str(error) for text in SEARCH_MESSAGES):
            return None
        return _described(error)
    except Exception as error:  # noqa: BLE001 - what this script looks for
        return _described(error)
    took = time.monotonic() - started
    if took > budget + OVERRUN_SECONDS:
        return f"ran {took:.1f} s on a {budget:g} s budget"
    return None  # an empty front is an answer: no finite formula (squares that overflow)


def tool_failure(name: str, X: np.ndarray, y: np.ndarray, budget: float) -> str | None:
    from srh_core.context import AgentContext
    from srh_core.tools.base import BaseTool

    data = {f"x{i + 1}": X[:, i] for i in range(X.shape[1])} | {"y": y}
    settings = {"validation_fraction": 0.2 if y.size >= 5 else 0.0}
    params = TOOL_PARAMS.get(name, {"time_budget": budget} if name == "expression_search"
                             else {})
    try:
        context = AgentContext(args=settings, data=data, target="y")
        result = BaseTool.get_class(name)(context=context)(**params)
    except Exception as error:  # noqa: BLE001 - a tool call never raises: a finding
        return _described(error)
    kind = (result.meta_data or {}).get("error_type")
    if result.ok or kind in TYPED:
        return None
    return f"{kind}: {result.result_str[:200]}"


def _described(error: BaseException) -> str:
    where = traceback.extract_tb(error.__traceback__)[-1]
    return (f"{type(error).__name__}: {str(error)[:200]} "
            f"({Path(where.filename).name}:{where.lineno})")


def fuzz(cases: int, seed: int, budget: float, tools: list[str]) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    findings = []
    for case in range(cases):
        kind, target = str(rng.choice(TABLES)), str(rng.choice(TARGETS))
        rows, inputs = int(rng.choice([2, 4, 9, 60, 400])), int(rng.choice([1, 2, 3, 6]))
        X, y = table(rng, kind, target, rows, inputs)
        described = {"case": case, "table": kind, "target": target, "rows": rows,
                     "inputs": inputs}
        failures = [("search", search_failure(X, y, budget, case))]
        failures += [(name, tool_failure(name, X, y, budget)) for name in tools]
        findings += [{**described, "where": where, "failure": failure}
                     for where, failure in failures if failure is not None]
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    tools = [name.strip() for name in args.tools.split(",") if name.strip()]
    started = time.monotonic()
    findings = fuzz(args.cases, args.seed, args.budget, tools)
    print(f"{args.cases} cases x (search + {len(tools)} tools), seed {args.seed}: "
          f"{len(findings)} untyped failures, {time.monotonic() - started:.0f} s")
    for item in findings:
        print(f"  case {item['case']:3d} {item['table']:13s} {item['target']:11s} "
              f"{item['rows']:3d}x{item['inputs']} {item['where']}: {item['failure']}")
    if args.json:
        args.json.write_text(json.dumps({"findings": findings, "cases": args.cases,
                                         "seed": args.seed, "tools": tools}, indent=1))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
