"""Checks shared by :class:`AgentContext` commits and the manifest loader.

Every check returns :class:`DataIssue` values instead of raising, so the
manifest inspector can report all of them at once while a context commit
raises the first as a :class:`~srh_core.errors.DataError`.

Data policy (one rule for contexts, manifests and CSV files):

- sample variables (every variable that is neither an axis nor a relation)
  must be numeric (bool, int or float), at least one-dimensional, non-empty,
  and aligned on their leading dimension with the target;
- ``inf`` and ``-inf`` are rejected everywhere;
- ``nan`` marks a missing value and is allowed, but a variable that is
  entirely ``nan`` is rejected; evaluators drop rows with a missing value in
  any variable a formula reads (see ``srh_core.evaluator.default``);
- names are Python identifiers that are not keywords and not reserved by the
  formula language, so a formula can name them: not starting with ``__``,
  not one of the engine's functions or their aliases (``sin``, ``ln``...),
  module prefixes (``np``, ``math``) or parameter builders (``param``). The
  constants ``pi`` and ``e`` stay allowed as names: the engine reads them as
  variables where a caller passes them as ``symbols``;
- for a search (a context whose settings carry ``min_train_rows``, as
  :class:`~srh_core.agent.settings.SearchSettings` do), the data must leave
  at least that many training rows, and a requested validation split must
  hold out at least one row (:func:`check_sample_count`); other contexts
  (views, tools' scratch contexts) may be as short as they like.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from srh_core.errors import DataError, did_you_mean
from srh_engine.functions import FUNCTION_ALIASES, FUNCTIONS
from srh_engine.parser import MODULE_PREFIXES, PARAMETER_BUILDERS

NUMERIC_KINDS = "biuf"
RELATION_WIDTHS = (2, 3)
#: Fewest training rows a search accepts by default (the fitting tools need as many).
MIN_TRAIN_ROWS = 3


@dataclass(frozen=True, slots=True)
class DataIssue:
    """One problem found in a set of arrays and their metadata.

    Attributes:
        variable: The variable (or axis) concerned, or None for the whole set.
        message: What was expected and what came instead.
        hint: How to repair it.
    """

    variable: str | None
    message: str
    hint: str = ""

    def to_error(self, more: int = 0) -> DataError:
        """Return the issue as a DataError; ``more`` counts further issues."""
        tail = f" ({more} more problem(s) not shown.)" if more else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        return DataError(f"{self.message}{hint}{tail}", variable=self.variable)


@dataclass(frozen=True, slots=True)
class DataLayout:
    """Metadata describing how the arrays of a context relate.

    Attributes:
        target: Name of the target variable, or None while none is selected.
        variable_axes: Axis names of each variable (missing or () = undeclared).
        variable_structures: Relation used by each structured variable.
        relation_names: Names of graph or hypergraph relation arrays.
        num_nodes: Number of graph nodes (required with relations).
    """

    target: str | None = None
    variable_axes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    variable_structures: Mapping[str, str] = field(default_factory=dict)
    relation_names: frozenset[str] = frozenset()
    num_nodes: int | None = None

    def axis_names(self) -> tuple[str, ...]:
        """Axis names in first-occurrence order."""
        return tuple(dict.fromkeys(a for axes in self.variable_axes.values() for a in axes))

    def sample_names(self, names: Iterable[str]) -> tuple[str, ...]:
        """Names among ``names`` that are sample variables (not axes, not relations)."""
        excluded = set(self.axis_names()) | set(self.relation_names)
        return tuple(name for name in names if name not in excluded)


def raise_first(issues: list[DataIssue]) -> None:
    """Raise the first issue as a DataError, or return when there is none."""
    if issues:
        raise issues[0].to_error(more=len(issues) - 1)


def check_context_data(
    data: Mapping[str, np.ndarray], layout: DataLayout, *, complete: bool = True
) -> list[DataIssue]:
    """Check arrays and layout; ``complete`` adds the checks views may skip.

    Args:
        data: Arrays by name (already ``np.asarray``-ed).
        layout: Their metadata.
        complete: Also reject empty and all-nan variables (a training or
            validation view may legitimately hold a column that is all nan).

    Returns:
        Every issue found, in a stable order.
    """
    if not data:
        return [DataIssue(None, "The context has no data; expected at least one variable.",
                          "Commit a mapping of variable names to numeric arrays.")]
    issues = [issue for name in data if (issue := check_name(name)) is not None]
    issues += _check_target(data, layout)
    issues += _check_axes(data, layout)
    issues += _check_relations(data, layout)
    for name in layout.sample_names(data):
        issues += check_sample_array(name, data[name], complete=complete)
    issues += check_alignment(data, layout)
    return issues


@lru_cache(maxsize=1)
def reserved_names() -> Mapping[str, str]:
    """Names the formula language gives a meaning, each with what it means there."""
    reserved = {name: "a function of the formula language" for name in FUNCTIONS}
    reserved |= {name: f"an alias of the function {FUNCTION_ALIASES[name]!r}"
                 for name in FUNCTION_ALIASES}
    reserved |= {name: "a module prefix of functions (np.sin)" for name in MODULE_PREFIXES}
    reserved |= {name: "a parameter builder" for name in PARAMETER_BUILDERS}
    return reserved


def check_name(name: object) -> DataIssue | None:
    """Reject names a formula could not reference: non-identifiers, keywords, reserved names."""
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        return DataIssue(
            str(name),
            f"Variable name {name!r} is not usable in a formula; expected a Python identifier "
            "that is not a keyword (letters, digits and '_', not starting with a digit).",
            "Rename the variable, e.g. replace spaces and dashes with '_'.",
        )
    if name.startswith("__"):
        example = (name.strip("_") or "x") + "_"
        return DataIssue(name, f"Variable name {name!r} is reserved: formulas cannot use names "
                         "starting with '__'.", f"Rename it, e.g. {example!r}.")
    meaning = reserved_names().get(name)
    if meaning is not None:
        return DataIssue(name, f"Variable name {name!r} is reserved: in a formula it is "
                         f"{meaning}.", f"Rename it, e.g. {name + '_'!r}.")
    return None


def check_weights(data: Mapping[str, np.ndarray], name: str | None,
                  target: str | None) -> DataIssue | None:
    """The ``weights`` setting's column: one finite weight >= 0 per row, not all 0."""
    if name is None:
        return None
    if name not in data:
        return DataIssue(name, f"The 'weights' setting names {name!r}, which is not in the "
                         f"data ({', '.join(data)}).", "Add the weights column or unset it.")
    if name == target:
        return DataIssue(name, f"The weights column {name!r} is the target.",
                         "Name another column.")
    values = np.asarray(data[name])
    rows = len(data[target]) if target in data else values.shape[0] if values.ndim else 0
    if values.dtype.kind not in "biuf" or values.ndim != 1 or values.shape[0] != rows:
        return DataIssue(name, f"The weights column {name!r} must hold one number per row "
                         f"({rows}); got dtype {values.dtype} and shape {values.shape}.")
    if not (np.all(np.isfinite(values)) and np.all(values >= 0)) or not np.any(values > 0):
        return DataIssue(name, f"The weights column {name!r} must be finite and >= 0, and "
                         "not all 0.")
    return None


def check_sample_count(n_samples: int, validation_fraction: float,
                       min_train_rows: int = MIN_TRAIN_ROWS) -> DataIssue | None:
    """Refuse data too short to fit, or to give the requested validation split.

    Uses the split's own rule (``srh_core.evaluator.splits.split_sizes``):
    ``n_validation = floor(n * fraction + 0.5)``.

    Args:
        n_samples: Rows of the data.
        validation_fraction: The requested validation share (0: none).
        min_train_rows: Fewest rows left to fit on.
    """
    n_validation = math.floor(n_samples * validation_fraction + 0.5)
    n_train = n_samples - n_validation
    if n_train >= min_train_rows and (validation_fraction == 0 or n_validation >= 1):
        return None
    if validation_fraction == 0:
        return DataIssue(None, f"The data has {n_samples} row(s); a search needs at least "
                         f"{min_train_rows} (min_train_rows) to fit a formula.",
                         "Provide more rows.")
    needed = _rows_needed(validation_fraction, min_train_rows)
    return DataIssue(None, f"The data has {n_samples} row(s): too few for a validation split "
                     f"of {validation_fraction:g} ({n_validation} held out, {n_train} left to "
                     f"fit; {min_train_rows} to fit and 1 held out need at least {needed} rows).",
                     "Provide more rows, or set validation_fraction = 0 to fit on all of them.")


def _rows_needed(fraction: float, min_train_rows: int) -> int:
    n = max(min_train_rows, math.ceil(0.5 / fraction) - 1)
    while (n - math.floor(n * fraction + 0.5) < min_train_rows
           or math.floor(n * fraction + 0.5) < 1):
        n += 1
    return n


def check_sample_array(name: str, value: np.ndarray, *, complete: bool = True) -> list[DataIssue]:
    """Check one sample variable: numeric, >= 1-D, finite or nan, not empty."""
    if value.dtype.kind not in NUMERIC_KINDS:
        return [DataIssue(name, f"Variable {name!r} must be numeric (bool, int or float); "
                          f"got dtype {value.dtype}.",
                          "Convert it to numbers, or encode categories as numeric columns.")]
    if value.ndim == 0:
        return [DataIssue(name, f"Variable {name!r} must be an array with one entry per "
                          "sample; got a scalar.", "Store one value per sample.")]
    if complete and value.size == 0:
        return [DataIssue(name, f"Variable {name!r} is empty; expected at least one sample.",
                          "Provide at least one sample.")]
    return _check_values(name, value, complete=complete)


def _check_values(name: str, value: np.ndarray, *, complete: bool) -> list[DataIssue]:
    if value.dtype.kind != "f":
        return []
    infinite = np.isinf(value)
    if infinite.any():
        first = tuple(int(i) for i in np.argwhere(infinite)[0])
        where = first[0] if len(first) == 1 else first
        return [DataIssue(name, f"Variable {name!r} holds {int(infinite.sum())} infinite "
                          f"value(s) (first at index {where}); expected finite numbers or nan.",
                          "Replace inf by nan (missing) or drop those samples.")]
    if complete and np.isnan(value).all():
        return [DataIssue(name, f"Variable {name!r} is entirely nan (missing).",
                          "Drop the variable or provide its values.")]
    return []


def check_alignment(data: Mapping[str, np.ndarray], layout: DataLayout) -> list[DataIssue]:
    """Check that every sample variable has the target's leading length."""
    names = [n for n in layout.sample_names(data) if np.ndim(data[n]) >= 1]
    if not names:
        return []
    reference = layout.target if layout.target in names else names[0]
    expected = len(data[reference])
    return [
        DataIssue(name, f"Variable {name!r} has {len(data[name])} samples; expected {expected} "
                  f"(the length of {reference!r}).",
                  "Give every variable one entry per sample, in the same order.")
        for name in names
        if len(data[name]) != expected
    ]


def _check_target(data: Mapping[str, np.ndarray], layout: DataLayout) -> list[DataIssue]:
    target = layout.target
    if target is None:
        return []
    sample = layout.sample_names(data)
    if target not in data:
        return [DataIssue(target, f"Target {target!r} is not a variable of the data; available: "
                          f"{list(sample)}.{did_you_mean(target, sample)}",
                          "Name one of the available variables as the target.")]
    if target not in sample:
        return [DataIssue(target, f"Target {target!r} is an axis or relation; expected a "
                          "sample variable.", "Choose a sample variable as the target.")]
    return []


def _check_axes(data: Mapping[str, np.ndarray], layout: DataLayout) -> list[DataIssue]:
    issues = [
        DataIssue(name, f"Axes are declared for {name!r}, which is not in the data.",
                  "Remove the entry or add the variable.")
        for name in layout.variable_axes
        if name not in data
    ]
    for axis in layout.axis_names():
        value = data.get(axis)
        if value is None:
            issues.append(DataIssue(axis, f"Axis {axis!r} is declared but has no array.",
                                    "Add the axis values to the data."))
        elif value.ndim != 1 or value.size == 0 or value.dtype.hasobject:
            issues.append(DataIssue(axis, f"Axis {axis!r} must be a non-empty 1-D array of "
                                    f"plain values; got shape {value.shape}, dtype {value.dtype}.",
                                    "Store axis values as a flat numeric or string array."))
    return issues


def _check_relations(data: Mapping[str, np.ndarray], layout: DataLayout) -> list[DataIssue]:
    issues: list[DataIssue] = []
    if layout.relation_names and layout.num_nodes is None:
        issues.append(DataIssue(None, "Relations are declared but num_nodes is missing.",
                                "Set num_nodes to the number of graph nodes."))
    for name in sorted(layout.relation_names):
        issues += _check_relation(name, data.get(name), layout.num_nodes)
    for variable, relation in layout.variable_structures.items():
        if relation not in layout.relation_names or variable not in data:
            issues.append(DataIssue(variable, f"Variable {variable!r} uses structure "
                                    f"{relation!r}, which is not a relation of the data.",
                                    "Reference a declared relation (kind 'relation')."))
        elif relation in data and np.shape(data[variable])[-1:] != (len(data[relation]),):
            issues.append(DataIssue(variable, f"Variable {variable!r} must end in a dimension "
                                    f"of length {len(data[relation])} (the rows of {relation!r});"
                                    f" got shape {np.shape(data[variable])}.",
                                    "Align its last axis with the relation rows."))
    return issues


def _check_relation(name: str, value: np.ndarray | None, num_nodes: int | None) -> list[DataIssue]:
    if value is None:
        return [DataIssue(name, f"Relation {name!r} is declared but has no array.",
                          "Add the relation array to the data.")]
    if value.dtype.kind not in "iu" or value.ndim != 2 or value.shape[1] not in RELATION_WIDTHS:
        return [DataIssue(name, f"Relation {name!r} must be an integer array of shape (E, 2) "
                          f"or (H, 3); got shape {value.shape}, dtype {value.dtype}.",
                          "Store endpoint index pairs (or triples) as integers.")]
    if num_nodes is not None and value.size and (value.min() < 0 or value.max() >= num_nodes):
        return [DataIssue(name, f"Relation {name!r} has endpoints outside [0, {num_nodes}).",
                          "Use zero-based node indices below num_nodes.")]
    return []


def check_descriptions(
    descriptions: Mapping[str, object], names: Iterable[str]
) -> list[DataIssue]:
    """Check that descriptions are strings keyed by known names."""
    known = list(names)
    issues: list[DataIssue] = []
    for name, text in descriptions.items():
        if name not in known:
            issues.append(DataIssue(str(name), f"A description is given for {name!r}, which is "
                                    f"not in the data.{did_you_mean(str(name), known)}",
                                    "Describe only variables that exist."))
        elif not isinstance(text, str):
            issues.append(DataIssue(name, f"The description of {name!r} must be a string; got "
                                    f"{type(text).__name__}.", "Write the description as text."))
    return issues
