"""Suites of problems: built-in ones (kept as JSON data) and suite files (see
:mod:`srh_core.problems`); an entry's ``kind`` picks its problem class."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.input_limits import MAX_JSON_BYTES, read_limited_text
from srh_core.json_limits import depth_problem
from srh_core.problems.dynamics import OdeProblem
from srh_core.problems.formula import Problem
from srh_core.problems.network import NetworkProblem
from srh_core.problems.transform import TransformProblem

#: Deepest nesting of arrays and objects in a suite file (the format needs 4).
MAX_SUITE_DEPTH = 32
BUILTIN_SUITE = "feynman_public.json"
DEFAULT_SUITE = "feynman-public"
BUILTIN_SUITES = {DEFAULT_SUITE: BUILTIN_SUITE, "feynman": "feynman.json",
                  "lsr-transform": "lsr_transform.json",
                  "lsr-transform-all": "lsr_transform_all.json", "strogatz": "strogatz.json",
                  "network": "network.json"}
"""Built-in suite name -> packaged file (the default first)."""


def problem_from_dict(data: Mapping[str, Any]) -> Any:
    """A problem of the class its ``kind`` names (formula, ode or network)."""
    kind = data.get("kind", "formula") if isinstance(data, Mapping) else "formula"
    try:
        if kind == "ode":
            return OdeProblem.from_dict(data)
        if kind == "network":
            return NetworkProblem.from_dict(data)
        if kind == "transform":
            return TransformProblem.from_dict(data)
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigurationError(f"Malformed {kind} problem entry {data!r:.120}: {error!r}"
                                 ) from None
    if kind != "formula":
        raise ConfigurationError(f"Unknown problem kind {kind!r}; expected formula, ode, "
                                 "network or transform.")
    return Problem.from_dict(data)


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    problems: tuple[Any, ...]
    builtin: str | None = None
    """The built-in suite's key ("feynman"...), None for a suite file."""

    def names(self) -> list[str]:
        return [problem.name for problem in self.problems]

    def get(self, name: str) -> Problem:
        """Find a problem by name ("feynman-I.6.2a") or id ("I.6.2a").

        Raises:
            ConfigurationError: No problem has that name, with a suggestion.
        """
        for problem in self.problems:
            if name in (problem.name, problem.id):
                return problem
        if self.builtin is not None:
            for other in BUILTIN_SUITES:
                if other != self.builtin and (found := _builtin(other).find(name)) is not None:
                    return found
        choices = self.names() + [problem.id for problem in self.problems]
        raise ConfigurationError(f"Unknown problem {name!r} in suite {self.name!r}."
                                 f"{did_you_mean(name, choices)} `srh problems` lists them.",
                                 setting="problem")

    def find(self, name: str) -> Any:
        """The problem named ``name`` (or with that id) in this suite only, else None."""
        return next((p for p in self.problems if name in (p.name, p.id)), None)

    def select(self, names: Sequence[str] | None) -> list[Any]:
        return list(self.problems) if not names else [self.get(name) for name in names]


def _builtin(name: str) -> Suite:
    file = BUILTIN_SUITES[name]
    text = resources.files("srh_core.problems").joinpath(file).read_text(encoding="utf-8")
    suite = _parse_suite(text, file, checked=False)  # shipped files, checked by the tests
    return Suite(name=suite.name, problems=suite.problems, builtin=name)


def _parse_suite(text: str, origin: str, checked: bool = True) -> Suite:
    """The suite of a JSON text; ``checked``: every formula problem can be sampled
    (:meth:`Problem.check`: its formula parses and names its variables only)."""
    if problem := depth_problem(text, MAX_SUITE_DEPTH, f"Suite file {origin}"):
        raise ConfigurationError(problem, setting="suite")
    try:
        document = json.loads(text)
        symbols = document.get("unit_symbols")
        problems = tuple(problem_from_dict(
            {"unit_symbols": symbols, **entry} if symbols and isinstance(entry, Mapping)
            else entry) for entry in document["problems"])
        for problem in problems if checked else ():
            if isinstance(problem, Problem):
                problem.check()
    except ConfigurationError as error:  # a problem's own, naming it
        raise ConfigurationError(f"Suite file {origin}: {error}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"Suite file {origin} is malformed: {error!r}") from None
    return Suite(name=str(document.get("suite", Path(origin).stem)), problems=problems)


def load_suite(path: str | Path | None = None) -> Suite:
    """Load a suite: a JSON file, a built-in suite name, or the Feynman subset (None).

    A path that is not a file but whose name is a built-in suite's
    (``strogatz``, ``network``, ``feynman``) loads that suite, so sweep files
    may say ``suite = "strogatz"``.

    Raises:
        ConfigurationError: The file cannot be read, nests deeper than
            ``MAX_SUITE_DEPTH`` or is not a valid suite.
        InputTooLargeError: The file is larger than ``MAX_JSON_BYTES``.
    """
    if path is None:
        return _builtin(DEFAULT_SUITE)
    if str(path) in BUILTIN_SUITES or (not Path(path).is_file()
                                       and Path(path).name in BUILTIN_SUITES):
        return _builtin(Path(path).name)
    try:
        text = read_limited_text(path, "suite file", MAX_JSON_BYTES)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"Cannot read suite file {path}: {error}") from error
    return _parse_suite(text, str(path))
