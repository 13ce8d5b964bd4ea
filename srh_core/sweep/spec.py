"""Sweep files: problems x seeds x settings variants, as a TOML document.

::

    [sweep]
    name = "feynman-small"          # run ids derive from it
    problems = ["feynman-I.12.4", "feynman-I.6.2a"]   # or "all" (the suite's)
    suite = "my_suite.json"         # optional; the built-in suite otherwise
    seeds = [0, 1]
    samples = 2000                  # data points per problem (SRBench protocol)
    noise = 0.0                     # or levels, one cell each: [0, 0.001, 0.01, 0.1]
    test_fraction = 0.25            # optional: held-out test share (SRBench: 0.25)
    max_train_samples = 10000       # optional: cap on the training points
    anonymize = false               # optional: inputs x1..xn, target y, no description
    units = true                    # the suite's units of its problems reach the run
                                    # (false: run without them; [settings] units add to them)
    retries = 1                     # extra attempts for a failed or lost cell
    max_parallel = 16               # runs in flight at once (cluster backend)
    stall_seconds = 180             # no new node for this long: re-send the run's next
                                    # tasks; after two such kicks the cell counts as lost
    max_cost = 5.0                  # optional spend budget of the whole sweep (USD)
    max_tokens = 2_000_000          # optional token budget of the whole sweep

    [settings]                      # SearchSettings for every cell
    max_refinement_depth = 6
    local_sample_size = 2

    [[variants]]                    # optional grid; one cell per variant
    name = "wide"
    global_width = 4

    [[variants]]                    # a baseline: a cell like any other (same data, budget)
    name = "gplearn"
    method = "gplearn"              # srh (default), gplearn, pyoperon or pysr

    [[datasets]]                    # optional real data (no ground truth)
    name = "pendulum"
    path = "pendulum.csv"
    target = "T"
    units = {L = "m", g = "m/s^2", T = "s"}   # optional
    weights = "w"                              # optional: the column of row weights

Every (problem or dataset) x seed x variant (x noise level, when ``noise`` lists
levels) is one cell and one run. ``seeds`` may also be ``"srbench:N"``: the first N
trial seeds of SRBench's published list. How ``noise``, ``test_fraction`` and
``max_train_samples`` make a cell's data: :mod:`srh_core.benchmark.protocol`.

A sweep budget (``max_cost``, ``max_tokens``) caps each run at what the
sweep has left when the cell starts (a run's own ``[settings]`` budget, if
lower, still applies); once the finished cells spent it, no further cell
starts: they are ``skipped`` and a later ``srh sweep`` with a higher budget
runs them. Cells in flight finish under their cap, so with ``max_parallel``
above 1 the sweep can end above its budget by what those cells spent.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from srh_core.agent.settings import RUN_ID_PATTERN, SearchSettings
from srh_core.benchmark.baselines import check_method, method_settings
from srh_core.benchmark.protocol import Protocol, srbench_seeds
from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.input_limits import MAX_CONFIG_BYTES, read_limited_text
from srh_core.problems import load_suite

#: Sweep, variant and dataset names: the run id pattern (no "." or "..", no separators).
NAME_PATTERN = RUN_ID_PATTERN


class Variant(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = Field(min_length=1, pattern=NAME_PATTERN)
    method: str = "srh"
    """Who solves the cell: ``srh`` (the agent) or a baseline of
    :data:`srh_core.benchmark.baselines.METHODS`."""

    def overrides(self) -> dict[str, Any]:
        """The variant's search settings (a baseline's fixed shape first)."""
        return {**method_settings(self.method), **dict(self.model_extra or {})}


class Dataset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, pattern=NAME_PATTERN)
    path: str
    target: str
    description: str = ""
    units: dict[str, str] | None = None
    weights: str | None = None
    """The column of row weights (PySR's ``weights``): the run's ``weights`` setting."""


class SweepSpec(BaseModel):
    """A validated sweep file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=48, pattern=NAME_PATTERN)  # run ids add 16
    problems: list[str] | str = Field(default_factory=list)
    suite: str | None = None
    seeds: list[int] | str = Field(default_factory=lambda: [0], min_length=1)
    samples: int = Field(default=2000, ge=10, le=10_000_000)
    noise: float | list[float] = Field(default=0.0)
    test_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    max_train_samples: int | None = Field(default=None, ge=10)
    anonymize: bool = False
    units: bool = True
    retries: int = Field(default=1, ge=0, le=10)
    max_parallel: int = Field(default=16, ge=1, le=10_000)
    stall_seconds: float = Field(default=180.0, gt=0)
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_tokens: int | None = Field(default=None, ge=0)
    settings: dict[str, Any] = Field(default_factory=dict)
    variants: list[Variant] = Field(default_factory=lambda: [Variant(name="default")])
    datasets: list[Dataset] = Field(default_factory=list)
    base_dir: str = "."

    def search_settings(self, variant: Variant) -> SearchSettings:
        return SearchSettings.build(**{**self.settings, **variant.overrides()})

    def seed_list(self) -> list[int]:
        """The trial seeds (``"srbench:N"``: the first N of SRBench's list)."""
        if isinstance(self.seeds, list):
            return list(self.seeds)

        return srbench_seeds(int(self.seeds.partition(":")[2]))

    def noise_levels(self) -> list[float]:
        return list(self.noise) if isinstance(self.noise, list) else [self.noise]

    def protocol(self, noise: float) -> Any:
        """How a cell at this noise level gets its data (:mod:`srh_core.benchmark.protocol`)."""
        return Protocol(samples=self.samples, noise=noise, test_fraction=self.test_fraction,
                        max_train_samples=self.max_train_samples, anonymize=self.anonymize,
                        units=self.units)

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int] | str) -> list[int] | str:
        if isinstance(value, str) and not re.fullmatch(r"srbench:[1-9][0-9]*", value):
            raise ValueError('seeds must be a list of integers or "srbench:N" (the first N '
                             "of SRBench's published seeds)")
        return value

    @field_validator("noise")
    @classmethod
    def _noise(cls, value: float | list[float]) -> float | list[float]:
        levels = value if isinstance(value, list) else [value]
        if not levels or any(not 0 <= level < 10 for level in levels):
            raise ValueError("noise must be a level >= 0 (a fraction of the target's RMS), "
                             "or a non-empty list of them")
        if len(set(levels)) != len(levels):
            raise ValueError("the noise levels must be distinct")
        return value


@dataclass(frozen=True, slots=True)
class Cell:
    """One run of a sweep: a problem (or dataset), a seed, a variant and its settings.

    A cell is named by ``(problem, seed, variant, settings_hash)``: resubmitting a
    sweep runs only the cells that are missing or failed, and a changed setting
    (or sample count, or noise) makes a new cell instead of reusing the old result.
    A cell whose run is given units (its suite's problem has them and the sweep
    says ``units = true``, or its dataset lists them) computes something else than
    the same cell without: its id ends in ``|units``. A sweep recorded before units
    existed knows its cells by the id without it; they resume as they were, without
    units (:func:`resumed_cells`).
    """

    problem: str
    seed: int
    variant: str
    dataset: bool = False
    settings_hash: str = ""
    noise: float = 0.0
    noise_in_label: bool = False
    """The sweep lists noise levels: the level is part of the label."""
    units: bool = False
    """The run is given the suite's (or the dataset's) units."""

    @property
    def label(self) -> str:
        """What a person reads: ``problem|seed=S|variant`` (``|noise=L`` with levels)."""
        label = f"{self.problem}|seed={self.seed}|{self.variant}"
        return f"{label}|noise={self.noise:g}" if self.noise_in_label else label

    @property
    def cell_id(self) -> str:
        """The cell's key in the sweep's state: the label and the settings hash."""
        named = f"{self.label}|{self.settings_hash}" if self.settings_hash else self.label
        return f"{named}|units" if self.units else named

    def run_id(self, sweep: str, attempt: int) -> str:
        digest = hashlib.sha1(self.cell_id.encode()).hexdigest()[:10]
        return f"{sweep}-{digest}-a{attempt}"


def settings_hash(spec: SweepSpec, variant: Variant, noise: float | None = None) -> str:
    """A short hash of what decides a cell's run besides its problem and seed.

    Only the settings that differ from their defaults count, so a setting added in a
    later version (at its default) leaves every existing cell's identity unchanged; a
    setting given explicitly at its default value is the same cell as one left out.
    The protocol options (split, cap, anonymizing, method) count the same way.
    """
    settings = spec.search_settings(variant).model_dump(mode="json", exclude={"run_id", "seed"},
                                                        exclude_defaults=True)
    level = spec.noise_levels()[0] if noise is None else noise
    document: dict[str, Any] = {"settings": settings, "samples": spec.samples, "noise": level}
    extras = {"test_fraction": spec.test_fraction, "max_train_samples": spec.max_train_samples,
              "anonymize": spec.anonymize, "units": spec.units, "method": variant.method}
    document.update({key: value for key, value in extras.items()
                     if value != _DEFAULTS[key].default})
    return hashlib.sha1(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:8]


#: Where the protocol options' defaults are declared (they count in a hash only when changed).
_DEFAULTS = {**{key: SweepSpec.model_fields[key]
                for key in ("test_fraction", "max_train_samples", "anonymize", "units")},
             "method": Variant.model_fields["method"]}

#: The top-level tables of a sweep file.
SWEEP_TABLES = ("sweep", "settings", "variants", "datasets")


def _check_tables(path: Path, document: dict[str, Any]) -> None:
    """A key outside the sweep file's tables is an error naming it (it was ignored)."""
    for key in document:
        if key not in SWEEP_TABLES:
            kind = "table" if isinstance(document[key], dict | list) else "key"
            raise ConfigurationError(
                f"Sweep file {path}: unknown top-level {kind} {key!r}; a sweep file holds "
                f"the tables {', '.join(f'[{name}]' for name in SWEEP_TABLES)} (sweep keys "
                f"such as 'problems' go in [sweep], search settings in [settings])."
                f"{did_you_mean(key, SWEEP_TABLES)}", setting=key)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; every problem is reported at once.

    Raises:
        ConfigurationError: Unreadable TOML, unknown keys, bad values, unknown
            problems or settings (with the offending field named).
    """
    path = Path(path)
    try:
        document = tomllib.loads(read_limited_text(path, "sweep file", MAX_CONFIG_BYTES))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigurationError(f"Cannot read sweep file {path}: {error}") from error
    _check_tables(path, document)
    body = document.get("sweep", {})
    if not isinstance(body, dict):
        raise ConfigurationError(f"Sweep file {path}: the 'sweep' entry must be a table "
                                 f"([sweep] with name, problems, seeds, ...). Got {body!r} "
                                 "instead.", setting="sweep")
    body = dict(body)
    for table in ("settings", "variants", "datasets"):
        if table in document:
            body[table] = document[table]
    body["base_dir"] = str(path.parent)
    try:
        spec = SweepSpec(**body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigurationError(f"Sweep file {path}: {where}: {first['msg']} "
                                 f"(got {first.get('input')!r}).", setting=where) from None
    _check(spec)
    return spec


def _check(spec: SweepSpec) -> None:
    for variant in spec.variants:
        check_method(variant.method)
        spec.search_settings(variant)  # raises ConfigurationError naming the setting
    for dataset in spec.datasets:
        if dataset.units:
            SearchSettings.build(units=dataset.units)  # names a bad unit
    suite = problem_suite(spec)
    for name in problem_names(spec):
        suite.get(name)
        if not re.fullmatch(NAME_PATTERN, name):  # a custom suite's names name cells too
            raise ConfigurationError(f"Problem name {name!r} cannot name a sweep cell: it "
                                     f"must match {NAME_PATTERN}.", setting="problems")
    if not problem_names(spec) and not spec.datasets:
        raise ConfigurationError("The sweep has no problems and no datasets.", setting="problems")
    for table, names in (("variants", [variant.name for variant in spec.variants]),
                         ("datasets", [dataset.name for dataset in spec.datasets]),
                         ("problems", problem_names(spec) + [d.name for d in spec.datasets])):
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ConfigurationError(f"The sweep's {table} names must be unique (a cell is "
                                     f"named by them); {', '.join(map(repr, repeated))} "
                                     "appears more than once.", setting=table)


def problem_suite(spec: SweepSpec) -> Any:
    return load_suite(Path(spec.base_dir) / spec.suite if spec.suite else None)


def problem_names(spec: SweepSpec) -> list[str]:
    if spec.problems == "all":
        return problem_suite(spec).names()
    if isinstance(spec.problems, str):
        return [spec.problems]
    return list(spec.problems)


def cells(spec: SweepSpec) -> list[Cell]:
    """Every cell, in a stable order (problem, seed, noise level, variant)."""
    suite = problem_suite(spec)
    sources = [(name, False, spec.units and _has_units(suite.get(name)))
               for name in problem_names(spec)]
    sources += [(dataset.name, True, bool(dataset.units)) for dataset in spec.datasets]
    levels, listed = spec.noise_levels(), isinstance(spec.noise, list)
    hashes = {(variant.name, level): settings_hash(spec, variant, level)
              for variant in spec.variants for level in levels}
    return [Cell(name, seed, variant.name, dataset, hashes[variant.name, level], level, listed,
                 units)
            for name, dataset, units in sources for seed in spec.seed_list() for level in levels
            for variant in spec.variants]


def _has_units(problem: Any) -> bool:
    return bool(problem.si_units()) if hasattr(problem, "si_units") else False


def resumed_cells(found: list[Cell], known: Mapping[str, Any]) -> list[Cell]:
    """``found`` with each cell given units whose id the sweep's state does not know, but
    knows without ``|units`` (recorded before units existed), named and run without them."""
    return [replace(cell, units=False) if cell.units and cell.cell_id not in known and
            replace(cell, units=False).cell_id in known else cell for cell in found]
