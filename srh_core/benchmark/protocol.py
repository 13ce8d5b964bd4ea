"""SRBench's data protocol, as options of every sweep and benchmark.

One function, :func:`protocol_data`, turns a suite problem, a trial seed and
the protocol options into the data a method sees and the data it is judged
on, the same way every time (the sweep runner calls it when it builds a cell
and again when it judges the cell's result, so no test data travels):

- the problem's ``samples`` points are drawn as :meth:`Problem.sample` draws
  them (``default_rng([seed, 0])``), without noise;
- ``test_fraction`` of them (SRBench: 0.25) are held out as the test set, by
  a permutation from ``default_rng([seed, 2])``; the method never sees them;
- ``max_train_samples`` (optional) caps the training set by a draw without
  replacement from ``default_rng([seed, 3])``;
- noise at level L is added to the training target only:
  N(0, sigma) with sigma = L x RMS of the training target
  (``default_rng([seed, 4])``); the test target stays noise-free.

With ``test_fraction = 0``, no cap and noise on, the data is exactly what
:meth:`Problem.sample` gives (noise on the whole sample), so sweeps written
before these options keep their cells.

Anonymizing (``--anonymize``) renames the inputs ``x1..xn`` (in the problem's
order) and the target ``y``, and the description says nothing of the
physics; :func:`renamed_formula` maps a formula back to the problem's names
before it is judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srh_core.errors import ConfigurationError
from srh_engine import parse, to_str
from srh_engine.nodes import Symbol
from srh_engine.transform import map_postorder

#: SRBench's noise levels (a fraction of the training target's RMS).
SRBENCH_NOISE_LEVELS = (0.0, 0.001, 0.01, 0.1)
#: SRBench's share of each dataset held out for testing.
SRBENCH_TEST_FRACTION = 0.25
#: SRBench's published trial seeds (experiment/seeds.py), in order: trial k is seed k.
SRBENCH_SEEDS = (
    23654, 15795, 860, 5390, 16850, 29910, 4426, 21962, 14423, 28020,
    29802, 21575, 11964, 11284, 22118, 6265, 11363, 27495, 16023, 8322,
    1685, 32052, 769, 26967, 30187, 32157, 23333, 2433, 5311, 5051,
    6420, 17568, 20939, 19769, 28693, 6396, 29419, 27480, 32304, 8666,
    25658, 18942, 24233, 18431, 32219, 2747, 25551, 26382, 189, 31677,
    19118, 3005, 21042, 1899, 24118, 1267, 31551, 17912, 11394, 3556,
    3890, 8838, 30740, 27464, 14502, 21777, 10627, 8792, 10555, 10253,
    8433, 10233, 11016, 23897, 2612, 23425, 25939, 22619, 21870, 23483,
    26054, 15787, 27132, 17159, 12206, 8226, 14541, 3152, 26531, 1585,
    3943, 23939, 19457, 1021, 11653, 10805, 13417, 20227, 7989, 9692,
)
#: How many seeds SRBench's published list holds.
SRBENCH_SEED_COUNT = len(SRBENCH_SEEDS)


def srbench_seeds(n: int) -> list[int]:
    """The first ``n`` trial seeds of SRBench's published list.

    The list is SRBench's own, copied (23654, 15795, 860, 5390, 16850, ...),
    so trial k here is trial k there.
    """
    if not 1 <= n <= SRBENCH_SEED_COUNT:
        raise ConfigurationError(f"SRBench's seed list has {SRBENCH_SEED_COUNT} seeds; asked "
                                 f"for {n}.", setting="seeds")
    return list(SRBENCH_SEEDS[:n])


@dataclass(frozen=True, slots=True)
class Protocol:
    """How a cell's data is made from its problem (see the module docstring)."""

    samples: int = 2000
    noise: float = 0.0
    test_fraction: float = 0.0
    max_train_samples: int | None = None
    anonymize: bool = False
    units: bool = True
    """Whether the method is given the problem's units (when its suite has them)."""

    @property
    def plain(self) -> bool:
        """No split and no cap: the data is :meth:`Problem.sample`'s, as before."""
        return self.test_fraction == 0 and self.max_train_samples is None


@dataclass(frozen=True, slots=True)
class ProtocolData:
    """What a method sees (train) and what it is judged on (test, noise-free)."""

    X_train: dict[str, np.ndarray]
    y_train: np.ndarray
    X_test: dict[str, np.ndarray] | None
    y_test: np.ndarray | None
    names: dict[str, str]
    """The method's name of each of the problem's variables (identity unless anonymized)."""
    target: str
    description: str
    units: dict[str, str] | None = None
    """The units of the inputs and the target in the method's names, when given."""


def protocol_data(problem: Any, seed: int, protocol: Protocol) -> ProtocolData:
    """The cell's data under ``protocol``; features and target named for the method."""
    if protocol.plain:
        X, y = problem.sample(protocol.samples, seed=seed, noise=protocol.noise)
        X_test = y_test = None
    else:
        X, y = problem.sample(protocol.samples, seed=seed, noise=0.0)
        y = np.asarray(y, dtype=float)
        order = np.random.default_rng([seed, 2]).permutation(len(y))
        n_test = int(round(protocol.test_fraction * len(y)))
        test, train = order[:n_test], order[n_test:]
        if protocol.max_train_samples is not None and len(train) > protocol.max_train_samples:
            train = np.sort(np.random.default_rng([seed, 3]).choice(
                train, size=protocol.max_train_samples, replace=False))
        X_test = {name: np.asarray(values)[test] for name, values in X.items()} if n_test else None
        y_test = y[test] if n_test else None
        X = {name: np.asarray(values)[train] for name, values in X.items()}
        y = y[train]
        if protocol.noise > 0:
            sigma = protocol.noise * float(np.sqrt(np.mean(y**2)))
            y = y + np.random.default_rng([seed, 4]).normal(0.0, sigma, size=y.shape)
    names = method_names(problem, protocol)
    target = "y" if protocol.anonymize else problem.output
    if protocol.anonymize:  # else X stays what the problem gave (structured data stays so)
        X = {names[name]: values for name, values in X.items()}
    if X_test is not None:
        X_test = {names[name]: values for name, values in X_test.items()}
    inputs = ", ".join(names[name] for name in problem.feature_names)
    description = f"Find the formula for {target} as a function of {inputs}."
    return ProtocolData(X, np.asarray(y, dtype=float), X_test, y_test, names, target,
                        description, method_units(problem, protocol, names, target))


def method_units(problem: Any, protocol: Protocol, names: Mapping[str, str], target: str
                 ) -> dict[str, str] | None:
    """The problem's units in the method's names (None without units or with units off)."""
    units = problem.si_units() if protocol.units and hasattr(problem, "si_units") else {}
    renamed = {names.get(name, target if name == problem.output else name): text
               for name, text in units.items()}
    return renamed or None


def method_names(problem: Any, protocol: Protocol) -> dict[str, str]:
    """The method's name of each of the problem's variables (identity unless anonymized)."""
    if protocol.anonymize:
        return anonymous_names(problem.feature_names)
    return {name: name for name in problem.feature_names}


def anonymous_names(feature_names: Sequence[str]) -> dict[str, str]:
    """``{original: "x1", ...}`` in the problem's order."""
    return {name: f"x{index}" for index, name in enumerate(feature_names, 1)}


def renamed_formula(formula: str, names: Mapping[str, str]) -> str:
    """``formula`` (written in the method's names) in the problem's names.

    Args:
        formula: A formula in engine syntax.
        names: The problem's name -> the method's name (as :class:`ProtocolData`).

    Raises:
        srh_engine.EngineError: The formula does not parse.
    """
    back = {method: original for original, method in names.items() if method != original}
    if not back:
        return formula

    def rename(node: Any) -> Any:
        if isinstance(node, Symbol) and node.name in back:
            return Symbol(back[node.name])
        return node

    return to_str(map_postorder(parse(formula), rename))
