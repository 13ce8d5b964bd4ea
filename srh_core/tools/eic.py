"""evaluate_eic (alias eic): per-subtree numerical information-loss diagnostics of a formula.

Following the EIC recursion (https://github.com/tsinghua-fib-lab/EIC): every
operation's output is perturbed by relative Gaussian noise ``noise_level``
and the perturbations propagate upwards. At each subtree the relative
deviation from the clean value has variance ``noise_level**2 * A``; the
subtree's EIC is ``max(0, log10(A) / 2)``: 0 means the noise is not
amplified, 1 means ten times, ``SATURATED_EIC`` means the output is lost
(non-finite). The formula's EIC is the maximum over its subtrees (mean over
``repeats``), so an unstable inner part shows even when an outer operation
hides it. A subtree's output impact is the relative RMS change of the whole
output when the subtree is replaced by 0 (a redundancy hint).

Runs on the training split, evenly subsampled so that nodes x (repeats + 1)
x rows stays below ``MAX_EIC_WORK``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool, formula_text
from srh_core.tools.polynomial import subsample_rows

MAX_REPEATS = 100
MAX_EIC_ROWS = 2_000
MIN_EIC_ROWS = 16
MAX_EIC_WORK = 20_000_000
SATURATED_EIC = 30.0
MAX_REPORTED_SUBTREES = 60
"""Subtrees (preorder, plus the worst) reported with their output impact."""
LEAVES = (engine.Number, engine.Symbol, engine.Parameter, engine.GroupedParameter)
Path = tuple[int, ...]


def subtrees(expression: engine.Expression) -> list[tuple[Path, engine.Expression]]:
    """Every node with its path (child indices from the root), in preorder."""
    found: list[tuple[Path, engine.Expression]] = []
    stack: list[tuple[Path, engine.Expression]] = [((), expression)]
    while stack:
        path, node = stack.pop()
        found.append((path, node))
        if not isinstance(node, LEAVES):
            stack.extend((path + (i,), child) for i, child in
                         reversed(list(enumerate(node.operands))))
    return found


def replace_at(expression: engine.Expression, path: Path,
               new: engine.Expression) -> engine.Expression:
    """The tree with the node at ``path`` replaced by ``new``."""
    if not path:
        return new
    children = list(expression.operands)
    children[path[0]] = replace_at(children[path[0]], path[1:], new)
    return expression.with_operands(tuple(children))


def relative_eic(clean: np.ndarray, noisy: np.ndarray, noise: float, zero: float) -> float:
    """``max(0, log10(var(relative deviation) / noise**2) / 2)``; saturated when lost."""
    with np.errstate(all="ignore"):
        relative = (noisy - clean) / np.where(clean == 0, zero, clean)
    valid = relative[np.isfinite(relative)]
    if valid.size == 0:
        return SATURATED_EIC
    amplification = float(np.var(valid)) / noise ** 2
    if not math.isfinite(amplification):
        return SATURATED_EIC
    return max(0.0, 0.5 * math.log10(min(max(amplification, 1e-30), 1e30)))


class _Propagation:
    """Clean and noisy values of every subtree on one data sample."""

    def __init__(self, nodes: list[tuple[Path, engine.Expression]], data: dict[str, Any]) -> None:
        self.nodes = nodes
        self.local = {path: node.with_operands(tuple(engine.Symbol(f"_eic{i}")
                                                     for i in range(len(node.operands))))
                      for path, node in nodes if not isinstance(node, LEAVES)}
        self.clean = self._run(lambda path, value: value, data)

    def _run(self, perturb: Any, data: dict[str, Any]) -> dict[Path, np.ndarray]:
        values: dict[Path, np.ndarray] = {}
        for path, node in reversed(self.nodes):  # reversed preorder: children first
            if isinstance(node, LEAVES):
                values[path] = np.asarray(engine.evaluate(node, data), dtype=float)
                continue
            operands = {f"_eic{i}": values[path + (i,)] for i in range(len(node.operands))}
            values[path] = perturb(path, np.asarray(engine.evaluate(self.local[path], operands),
                                                    dtype=float))
        return values

    def noisy(self, rng: np.random.Generator, noise: float,
              data: dict[str, Any]) -> dict[Path, np.ndarray]:
        def perturb(path: Path, value: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):
                return value * (1.0 + noise * rng.standard_normal(value.shape))

        return self._run(perturb, data)


@BaseTool.register("evaluate_eic", aliases=("eic",))
class EICTool(FormulaTool):
    """Numerical stability of a formula: where does it amplify noise or lose information?"""

    def execute(self, f: str, noise_level: float = 1e-3, repeats: int = 8, random_state: int = 0,
                zero_epsilon: float = 1e-6) -> dict[str, Any]:
        """Diagnose numerical information loss in a formula, subtree by subtree (EIC).

        Use it on a good candidate to find fragile structure: cancellations
        such as (x + 1e6) - 1e6, near-singular divisions, or parts that barely
        change the output. Each operation's output is perturbed by relative
        noise; the EIC of a subtree is log10 of the noise amplification (0 is
        stable, above 1 is fragile, 30 means lost); the formula's EIC is the
        worst subtree's. Also reports the formula's metrics (no fitting).

        Args:
            f: The formula to assess (parameters must have values).
            noise_level: Relative noise injected after each operation, in (0, 0.1].
            repeats: Independent noise draws averaged, 1 to 100.
            random_state: Seed of the noise, 0 to 2**32 - 1.
            zero_epsilon: Stand-in denominator where a clean subtree value is exactly 0,
                in (0, 1].
        """
        noise = self.check_float("noise_level", noise_level, 0.0, 0.1, open_low=True)
        repeats = self.check_int("repeats", repeats, 1, MAX_REPEATS)
        seed = self.check_int("random_state", random_state, 0, 2**32 - 1)
        zero = self.check_float("zero_epsilon", zero_epsilon, 0.0, 1.0, open_low=True)
        formula = self.parse_text(f, "f", allow_parameters=True)
        if engine.unbound_parameters(formula):
            raise ToolArgumentError("The formula has parameters without values; fit it first "
                                    "(evaluate with fit=true) and pass the fitted formula.",
                                    parameter="f")
        nodes = subtrees(formula)
        data = self._sample(len(nodes), repeats)
        propagation = _Propagation(nodes, data)
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(repeats):
            self.check_cancelled()
            noisy = propagation.noisy(rng, noise, data)
            draws.append([relative_eic(propagation.clean[p], noisy[p], noise, zero)
                          if not isinstance(node, LEAVES) else 0.0 for p, node in nodes])
        report = self._report(formula, nodes, np.asarray(draws), propagation, data)
        report |= {"noise_level": noise, "repeats": repeats, "n_rows": _rows_of(data)}
        return self._with_evaluation(formula, report)

    def _sample(self, n_nodes: int, repeats: int) -> dict[str, Any]:
        """Train-split data, evenly subsampled to the work budget."""
        train = self.require_context().train_split
        budget = min(MAX_EIC_ROWS, MAX_EIC_WORK // (n_nodes * (repeats + 1)))
        if budget < MIN_EIC_ROWS:
            raise ToolArgumentError(f"A formula of {n_nodes} nodes with {repeats} repeats exceeds "
                                    "the eic work budget; use fewer repeats.", parameter="repeats")
        rows = subsample_rows(train.n_samples, 1, limit=budget)
        return {name: value[rows] if value.ndim and value.shape[0] == train.n_samples else value
                for name, value in train.data.items()}

    def _report(self, formula: engine.Expression, nodes: list, draws: np.ndarray,
                propagation: _Propagation, data: dict[str, Any]) -> dict[str, Any]:
        mean, spread = draws.mean(axis=0), draws.std(axis=0)
        by_path = {path: i for i, (path, _) in enumerate(nodes)}
        worst = int(np.argmax(mean))
        # Impacts cost one evaluation of the whole formula each: only for reported subtrees.
        reported = sorted(set(range(min(len(nodes), MAX_REPORTED_SUBTREES))) | {worst})
        output = propagation.clean[()]
        rows = {}
        for i in reported:
            path, node = nodes[i]
            children = [mean[by_path[path + (j,)]] for j in range(len(node.operands))
                        if path + (j,) in by_path]
            rows[i] = {"path": _path_text(path), "expression": formula_text(node),
                       "eic": float(mean[i]), "eic_std": float(spread[i]),
                       "introduced_eic": float(max(0.0, mean[i] - max(children, default=0.0))),
                       "output_impact": _impact(formula, path, data, output)}
        overall = draws.max(axis=1)
        return {"eic": float(overall.mean()), "eic_std": float(overall.std()),
                "output_eic": rows[0]["eic"], "worst_subtree": rows[worst],
                "subtrees": list(rows.values()), "n_subtrees": len(nodes),
                "finite_fraction": float(np.mean(np.isfinite(output)))}

    def _with_evaluation(self, formula: engine.Expression, report: dict[str, Any]) -> dict:
        summary = {key: report[key] for key in ("eic", "eic_std", "output_eic", "noise_level",
                                                "repeats")}
        summary["worst_subtree"] = {k: report["worst_subtree"][k] for k in
                                    ("path", "expression", "eic")}
        context = self.require_context()
        if context.target is None:
            return {"formula": formula_text(formula), "eic": report, "diagnostics": summary}
        target = DataTerm(context.target, engine.Symbol(context.target), is_target=True)
        result = self.score_formula(formula, target, show_diagnostics=False)
        return result | {"eic": report, "diagnostics": {"eic": summary}}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """EIC summary, the most fragile subtrees, then the formula's metrics."""
        report = result["eic"]
        worst = report["worst_subtree"]
        lines = [f"EIC of the formula (max over subtrees): {report['eic']:.3g} "
                 f"+- {report['eic_std']:.2g}; at the output: {report['output_eic']:.3g}; "
                 f"finite outputs: {report['finite_fraction']:.1%} of {report['n_rows']} rows",
                 f"Worst subtree {worst['path'][:60]}: {worst['expression'][:120]} "
                 f"(EIC {worst['eic']:.3g})",
                 "Most fragile subtrees (EIC, introduced here, output impact if removed):"]
        ranked = sorted(report["subtrees"], key=lambda row: -row["eic"])[:8]
        lines += [f"  {row['path'][:60]}: {row['expression'][:80]}  EIC={row['eic']:.3g}, "
                  f"introduced={row['introduced_eic']:.3g}, impact={_text(row['output_impact'])}"
                  for row in ranked if row["eic"] > 0]
        if "metrics" in result:
            lines.append(cls.format_evaluation_result(result, title="Fit of the same formula"))
        return "\n".join(lines)


def _impact(formula: engine.Expression, path: Path, data: dict[str, Any],
            output: np.ndarray) -> float | None:
    """Relative RMS change of the output when the subtree at ``path`` becomes 0."""
    masked = np.asarray(engine.evaluate(replace_at(formula, path, engine.Number(0)), data),
                        dtype=float)
    masked, baseline = np.broadcast_arrays(masked, output)
    valid = np.isfinite(masked) & np.isfinite(baseline)
    if not valid.any():
        return None
    with np.errstate(all="ignore"):
        scale = float(np.sqrt(np.mean(baseline[valid] ** 2)))
        error = float(np.sqrt(np.mean((masked[valid] - baseline[valid]) ** 2)))
    return error / scale if scale > 0 and math.isfinite(error) else None


def _path_text(path: Path) -> str:
    return "root" + "".join(f"/{i}" for i in path)


def _rows_of(data: dict[str, Any]) -> int:
    return max((np.shape(value)[0] for value in data.values() if np.ndim(value)), default=0)


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
