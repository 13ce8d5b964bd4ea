#!/usr/bin/env python
"""Build the packaged benchmark suites: the full AI Feynman suite and LSR-Transform.

Run from the repository root (the sources are public; bring PMLB here with
``fetch github:EpistasisLab/pmlb`` or ``git clone``)::

    .venv/bin/python scripts/build_benchmark_suites.py \\
        --pmlb /work/.mirror/EpistasisLab+pmlb/repo \\
        --csv FeynmanEquations.csv --bonus-csv BonusEquations.csv

``feynman`` (``srh_core/problems/feynman.json``): the 100 AI Feynman
equations and the 20 bonus ones. Each is read from PMLB's
``datasets/feynman_*/metadata.yaml`` (formula, ranges, the quantity and units
of every variable); the AI Feynman CSV tables are the cross-check: every
equation present in both is sampled on the PMLB ranges and the two formulas
must agree (CSV copies in circulation write ``~`` for minus, drop trailing
zeros of ids, I.15.10 becomes I.15.1, and miscount variables; the check
reports each difference it repairs). An equation PMLB lacks (II.11.17) is
taken from the CSV, its units from the variables of the same name elsewhere.
SRBench's three excluded problems carry ``excluded`` with the reason.

``lsr-transform-all`` (``srh_core/problems/lsr_transform_all.json``):
LLM-SRBench's construction on every included equation. Each Feynman equation
``y = f(x1..xn)`` (the bonus ones too) is solved with SymPy, every symbol
positive, for each input ``xi`` that has a closed-form solution (each solve
bounded by ``--solve-seconds``); a solution becomes a problem
``xi = g(y, x\\i)`` named ``<id>_<xi>_<k>`` (k numbers the closed-form
solutions of that variable) when data drawn from the original ranges keeps,
after filtering the points where ``g`` is real, finite and gives back ``xi``,
at least ``MIN_ACCEPTANCE`` of them, and when it has more SymPy operations
than the original (our filter, not LLM-SRBench's: its published set keeps
forms no more complex than their originals, such as II.37.1_0_0,
``mom = E_n/(B*(1 + chi))``).

``lsr-transform`` (``srh_core/problems/lsr_transform.json``): the 111
problems LLM-SRBench published, by the names in ``llmsrbench_lsr_transform.txt``
(``<CSV id>_<input index>_<solution index>``; that file says where the list
comes from). Each is rebuilt the same way, solving without assumptions: the
problem is the one solution that is a branch of the original relation on its
ranges (see :func:`build_published`). The selection is the published list,
not a rule: no rule we could state reproduces it (I.34.27, ``E_n =
h/(2*pi)*omega``, is left out while III.12.43, ``L = n*h/(2*pi)``, is in).

In both, the out-of-domain set is the top ``OOD_FRACTION`` of the solved
variable's original range; the in-domain data is drawn below it.
The runtime never calls SymPy: the solved forms are data.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.problems import Problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "srh_core" / "problems"
CHECK_SAMPLES = 2_000
SRBENCH_EXCLUDED = ("left out of SRBench's ground-truth results (its "
                    "postprocessing/collate_groundtruth_results.py excludes it)")
EXCLUDED = {
    "test_10": SRBENCH_EXCLUDED,
    "I.26.2": SRBENCH_EXCLUDED,
    "I.30.5": SRBENCH_EXCLUDED,
}
UNIT_CORRECTIONS = {
    ("I.43.16", "mu_drift"): ("s^1 * kg^(-1)", "s^(-1) * kg^1 in PMLB's metadata: a mobility "
                              "(v = mu*F), as mob of I.43.31; the published units contradict "
                              "the formula"),
}
"""Units of PMLB's metadata that make their own formula dimensionally inconsistent, with the
units the formula needs and why (the only such one of the 120; a test checks them all)."""
MIN_ACCEPTANCE = 0.05
OOD_FRACTION = 0.1
PUBLISHED_NAMES = Path(__file__).resolve().parent / "llmsrbench_lsr_transform.txt"


# --- Feynman -----------------------------------------------------------------

def pmlb_entries(pmlb: Path) -> dict[str, dict[str, Any]]:
    """PMLB's Feynman datasets by AI Feynman id ("I.6.2a", "test_1")."""
    import yaml

    names = subprocess.run(["git", "-C", str(pmlb), "ls-tree", "--name-only", "HEAD",
                            "datasets/"], capture_output=True, text=True, check=True).stdout
    entries = {}
    for folder in sorted(n for n in names.split() if n.startswith("datasets/feynman_")):
        text = subprocess.run(["git", "-C", str(pmlb), "show", f"HEAD:{folder}/metadata.yaml"],
                              capture_output=True, text=True, check=True).stdout
        entry = pmlb_entry(yaml.safe_load(text))
        entries[entry["id"]] = entry
    return entries


def pmlb_entry(meta: dict[str, Any]) -> dict[str, Any]:
    dataset = meta["dataset"].removeprefix("feynman_")
    ident = dataset if dataset.startswith("test_") else dataset.replace("_", ".")
    lines = [line.strip() for line in meta["description"].splitlines() if line.strip()]
    equation = next(line for line in lines if "=" in line and " in [" not in line)
    output, formula = (part.strip() for part in equation.split("=", 1))
    ranges = {}
    for line in lines:
        if match := re.fullmatch(r"(\w+) in \[([-\d.e]+),\s*([-\d.e]+)\]", line):
            ranges[match[1]] = (float(match[2]), float(match[3]))
    variables = []
    for feature in meta["features"]:
        low, high = ranges[feature["name"]]
        variables.append({"name": feature["name"], "low": low, "high": high,
                          **quantity(feature.get("description", ""))})
    target = meta["target"]["description"]
    return {"id": ident, "name": f"feynman-{ident}", "output": output, "formula": formula,
            "variables": variables,
            "output_units": quantity(target.split(",", 1)[1] if "," in target else "")}


def quantity(text: str) -> dict[str, str]:
    """``"Velocity, m^1 * s^(-1)"`` -> {"quantity": "Velocity", "units": "m^1 * s^(-1)"}."""
    text = text.strip()
    if not text or text.lower() == "dimensionless":
        return {"quantity": "Dimensionless", "units": "1"}
    name, _, units = text.partition(",")
    return {"quantity": name.strip(), "units": units.strip() or "1"}


def csv_entries(path: Path, bonus: bool) -> dict[str, dict[str, Any]]:
    entries = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if not row["Filename"]:
                continue
            variables = []
            for i in range(1, 11):
                name = (row.get(f"v{i}_name") or "").strip()
                if name:
                    variables.append({"name": name, "low": float(row[f"v{i}_low"]),
                                      "high": float(row[f"v{i}_high"])})
            entries[row["Filename"]] = {
                "id": row["Filename"], "output": row["Output"],
                "formula": row["Formula"].replace("~", "-"), "variables": variables,
                "declared": int(row["# variables"]),
                **({"title": row["Name"]} if bonus and row.get("Name") else {})}
    return entries


def agree(a: str, b: str, variables: list[dict[str, Any]]) -> bool:
    problem = Problem.from_dict({"id": "check", "output": "y", "formula": a,
                                 "variables": variables})
    X, y = problem.sample(CHECK_SAMPLES, seed=7)
    other = np.asarray(Problem.from_dict({"id": "check", "output": "y", "formula": b,
                                          "variables": variables}).expression().evaluate(X))
    with np.errstate(all="ignore"):
        both = np.isfinite(y) & np.isfinite(other)
        return bool(both.mean() > 0.99 and np.allclose(y[both], other[both], rtol=1e-9))


def build_feynman(pmlb: Path, csv_path: Path, bonus_path: Path) -> list[dict[str, Any]]:
    entries = pmlb_entries(pmlb)
    table = csv_entries(csv_path, bonus=False) | csv_entries(bonus_path, bonus=True)
    table = {_repair_id(ident, entries): entry for ident, entry in table.items()}
    units_by_name = {v["name"]: {"quantity": v["quantity"], "units": v["units"]}
                     for entry in entries.values() for v in entry["variables"]}
    outputs = {e["output"]: e["output_units"] for e in entries.values()}
    for ident, row in table.items():
        if len(row["variables"]) != row["declared"]:
            print(f"  csv {ident}: declares {row['declared']} variables, lists "
                  f"{len(row['variables'])} (repaired: the list is used)")
        if ident not in entries:
            print(f"  {ident}: not in PMLB; taken from the CSV, units by variable name")
            entries[ident] = {
                "id": ident, "name": f"feynman-{ident}", "output": row["output"],
                "formula": row["formula"],
                "variables": [v | units_by_name.get(v["name"], quantity("")) for v in
                              row["variables"]],
                "output_units": outputs.get(row["output"], quantity(""))}
            continue
        entry = entries[ident]
        if "title" in row:
            entry["title"] = row["title"]
        same_ranges = ({v["name"]: (v["low"], v["high"]) for v in entry["variables"]}
                       == {v["name"]: (v["low"], v["high"]) for v in row["variables"]})
        if not same_ranges:
            print(f"  {ident}: ranges differ between PMLB and the CSV (PMLB's kept)")
        if not agree(entry["formula"], row["formula"], entry["variables"]):
            raise SystemExit(f"{ident}: PMLB's {entry['formula']!r} and the CSV's "
                             f"{row['formula']!r} disagree")
    missing = set(entries) - set(table)
    if missing:
        raise SystemExit(f"not in the CSV tables: {sorted(missing)}")
    problems = []
    for ident in sorted(entries, key=_order):
        entry = entries[ident]
        entry["bonus"] = ident.startswith("test_")
        for variable in entry["variables"]:
            correction = UNIT_CORRECTIONS.get((ident, variable["name"]))
            if correction is not None:
                variable["units"], variable["units_corrected"] = correction
        if ident in EXCLUDED:
            entry["excluded"] = EXCLUDED[ident]
        check_samples(entry)
        problems.append(entry)
    return problems


def _repair_id(ident: str, known: dict[str, Any]) -> str:
    """CSV copies drop a trailing zero ("I.15.1" for "I.15.10")."""
    return ident if ident in known or f"{ident}0" not in known else f"{ident}0"


def _order(ident: str) -> tuple[Any, ...]:
    if ident.startswith("test_"):
        return (9, int(ident[5:]))
    part, *rest = ident.split(".")
    return (len(part), *[int(re.sub(r"\D", "", r) or 0) for r in rest], ident)


def check_samples(entry: dict[str, Any]) -> None:
    problem = Problem.from_dict(entry)
    _, y = problem.sample(CHECK_SAMPLES, seed=0)
    finite = np.isfinite(y).mean()
    if finite < 1.0 and "excluded" not in entry:
        raise SystemExit(f"{entry['id']}: {1 - finite:.1%} of sampled values are not finite")


# --- LSR-Transform -------------------------------------------------------------

def _solve(job: tuple[str, str, str, list[str], bool], out: Any) -> None:
    import sympy as sp

    from srh_core.symbolic import to_sympy
    from srh_engine import parse

    formula, output, variable, names, positive = job
    assumptions = {"positive": True} if positive else {}
    symbols = {name: sp.Symbol(name, **assumptions) for name in [*names, output]}
    original = to_sympy(parse(formula), symbols=symbols)
    try:
        solutions = sp.solve(sp.Eq(symbols[output], original), symbols[variable])
    except (NotImplementedError, ValueError, TypeError):
        solutions = []
    out.put([(sp.sstr(s), int(sp.count_ops(s)), int(sp.count_ops(original)),
              not s.has(sp.LambertW, sp.RootOf, sp.Piecewise, sp.I, sp.Integral))
             for s in solutions])


def solve_for(formula: str, output: str, variable: str, names: list[str],
              seconds: float, positive: bool = True
              ) -> list[tuple[str, int, int, bool]] | None:
    """SymPy's solutions for ``variable``, in ``solve``'s order: (text, its operation
    count, the original's, whether it is a closed form with no imaginary unit); None
    when the solve ran out of time. ``positive`` declares every symbol positive (the
    full construction); LLM-SRBench's names index the list solved without it."""
    context = multiprocessing.get_context("fork")
    queue: Any = context.Queue()
    process = context.Process(target=_solve,
                              args=((formula, output, variable, names, positive), queue))
    process.start()
    try:
        return queue.get(timeout=seconds)
    except Exception:  # queue.Empty: out of time (or the child died)
        return None
    finally:
        process.kill()
        process.join()


def engine_text(sympy_text: str) -> str:
    """SymPy's printed form in engine syntax (``asin`` -> ``arcsin``, ``log`` stays)."""
    for old, new in (("asin(", "arcsin("), ("acos(", "arccos("), ("atan(", "arctan(")):
        sympy_text = re.sub(rf"(?<![a-z]){re.escape(old)}", new, sympy_text)
    return sympy_text


def transform_entry(entry: dict[str, Any], variable: str, k: int, solved: str,
                    ident: str | None = None) -> dict[str, Any] | None:
    """The problem ``variable = solved`` (id ``ident``, else ``<id>_<variable>_<k>``),
    or None when too few drawn points are valid for it."""
    inputs = [v for v in entry["variables"] if v["name"] != variable]
    solved_var = next(v for v in entry["variables"] if v["name"] == variable)
    ident = ident or f"{entry['id']}_{variable}_{k}"
    candidate = {
        "kind": "transform", "id": ident, "name": f"lsr-{ident}", "output": variable,
        "formula": engine_text(solved),
        "source": {"id": entry["id"], "output": entry["output"], "formula": entry["formula"],
                   "variables": entry["variables"]},
        "inputs": [v["name"] for v in inputs] + [entry["output"]],
        "ood_fraction": OOD_FRACTION,
        "units": {v["name"]: v["units"] for v in entry["variables"]}
        | {entry["output"]: entry["output_units"]["units"]},
        "output_units": solved_var["units"],
    }
    from srh_core.problems.transform import TransformProblem
    from srh_engine import EngineError

    try:
        problem = TransformProblem.from_dict(candidate)
        acceptance = problem.acceptance(CHECK_SAMPLES, seed=0)
    except EngineError as error:
        print(f"    {candidate['id']}: {solved!r} does not parse ({error})")
        return None
    if acceptance < MIN_ACCEPTANCE:
        print(f"    {candidate['id']}: only {acceptance:.1%} of points valid")
        return None
    from srh_core.errors import ConfigurationError

    try:
        X, y = problem.sample(200, seed=0)
        X_ood, y_ood = problem.sample_ood(200, seed=0)
    except ConfigurationError as error:
        print(f"    {candidate['id']}: {error}")
        return None
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(y_ood)) and np.ptp(y) > 0):
        return None
    candidate["acceptance"] = round(acceptance, 4)
    return candidate


def build_lsr(feynman: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    import sympy  # noqa: F401  (imported once here, inherited by every forked solve)

    problems = []
    for entry in feynman:
        if "excluded" in entry:
            continue
        names = [v["name"] for v in entry["variables"]]
        for variable in names:
            solutions = solve_for(entry["formula"], entry["output"], variable, names, seconds)
            if solutions is None:
                print(f"  {entry['id']} for {variable}: the solve ran out of {seconds:g} s")
                continue
            usable = [solution[:3] for solution in solutions if solution[3]]
            for k, (solved, operations, original) in enumerate(usable):
                if operations <= original:
                    continue  # not a new form: no more complex than the original
                made = transform_entry(entry, variable, k, solved)
                if made is not None:
                    problems.append(made)
        print(f"  {entry['id']}: {sum(p['source']['id'] == entry['id'] for p in problems)} kept")
    return problems


def published_names(path: Path = PUBLISHED_NAMES) -> list[str]:
    """LLM-SRBench's LSR-Transform names, one a line (``#`` starts a comment)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text("utf-8").splitlines())
    return [line for line in lines if line]


def build_published(feynman: list[dict[str, Any]], names: list[str], seconds: float
                    ) -> list[dict[str, Any]]:
    """The named problems. ``<id>_<i>_<k>`` solves equation ``id`` for its i-th input
    (no assumptions on the symbols, as the names' solution counts show); the problem
    is the one solution that is a branch of the original relation on its ranges.
    ``k`` indexes LLM-SRBench's SymPy's list, whose order other versions do not
    keep (I.10.7_1_0 is the second of this SymPy's two), so it is checked only to
    exist; a name with no such branch or with two stops the build."""
    entries = {entry["id"]: entry for entry in feynman}
    problems = []
    for name in names:
        match = re.fullmatch(r"(.+)_(\d+)_(\d+)", name)
        ident = match and _repair_id(match[1], entries)
        if match is None or ident not in entries:
            raise SystemExit(f"{name}: not <feynman id>_<input index>_<solution index>")
        entry, index, k = entries[ident], int(match[2]), int(match[3])
        inputs = [v["name"] for v in entry["variables"]]
        if index >= len(inputs):
            raise SystemExit(f"{name}: {ident} has {len(inputs)} inputs")
        solutions = solve_for(entry["formula"], entry["output"], inputs[index], inputs,
                              seconds, positive=False)
        if solutions is None:
            raise SystemExit(f"{name}: the solve ran out of {seconds:g} s")
        branches = [made for j, (solved, _, _, closed) in enumerate(solutions) if closed
                    and (made := transform_entry(entry, inputs[index], j, solved, name))]
        if k >= len(solutions) or len(branches) != 1:
            raise SystemExit(f"{name}: {len(solutions)} solutions for {inputs[index]}, "
                             f"{len(branches)} of them a branch of the original")
        problems.append(branches[0])
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pmlb", type=Path, help="PMLB git directory (for feynman)")
    parser.add_argument("--csv", type=Path, help="FeynmanEquations.csv (for feynman)")
    parser.add_argument("--bonus-csv", type=Path, help="BonusEquations.csv (for feynman)")
    parser.add_argument("--solve-seconds", type=float, default=20.0)
    parser.add_argument("--only", choices=("feynman", "lsr-transform", "lsr-transform-all"),
                        default=None)
    args = parser.parse_args()
    feynman_path = ROOT / "feynman.json"
    if args.only in (None, "feynman"):
        if None in (args.pmlb, args.csv, args.bonus_csv):
            parser.error("building feynman needs --pmlb, --csv and --bonus-csv")
        print("feynman: reading PMLB and the CSV tables")
        problems = build_feynman(args.pmlb, args.csv, args.bonus_csv)
        write(feynman_path, "feynman", "AI Feynman equations (100 + 20 bonus) from PMLB's "
              "metadata, cross-checked against FeynmanEquations.csv / BonusEquations.csv",
              problems)
        print(f"feynman: {len(problems)} problems -> {feynman_path}")
    feynman = json.loads(feynman_path.read_text(encoding="utf-8"))["problems"]
    if args.only in (None, "lsr-transform"):
        published = build_published(feynman, published_names(), args.solve_seconds)
        path = ROOT / "lsr_transform.json"
        write(path, "lsr-transform", "LLM-SRBench's published LSR-Transform selection (111 "
              f"names, {PUBLISHED_NAMES.name}), each rebuilt from its AI Feynman equation",
              published)
        print(f"lsr-transform: {len(published)} problems -> {path}")
    if args.only in (None, "lsr-transform-all"):
        lsr = build_lsr(feynman, args.solve_seconds)
        path = ROOT / "lsr_transform_all.json"
        write(path, "lsr-transform-all", "LLM-SRBench's LSR-Transform construction on the "
              "AI Feynman suite: each equation solved with SymPy for its inputs", lsr)
        print(f"lsr-transform-all: {len(lsr)} problems -> {path}")


def write(path: Path, suite: str, source: str, problems: list[dict[str, Any]]) -> None:
    # AI Feynman's unit tables write a temperature as T (kelvin), which SI reads as tesla
    document = {"suite": suite, "source": source,
                "syntax": "numpy names; ln is the natural logarithm",
                "unit_symbols": {"T": "K"}, "problems": problems}
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
