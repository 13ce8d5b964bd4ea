"""Baselines as agents: gplearn, pyoperon and PySR run through the same loop as srh.

A baseline is an :class:`~srh_core.agent.SRAgent` subclass whose one step
does not ask a model: :meth:`BaselineAgent.request_llm` fits the baseline on
the run's data for the time the run has left and answers with one
``evaluate_formula`` call carrying the baseline's formula (its constants as
fitted, ``fit: false``). Everything after that is the run of any agent: the
tool scores the formula on the run's splits, the node and the candidate are
recorded, the result is written, on the embedded runtime and on the cluster
alike (the worker rebuilds the agent from its import path, as for any
subclass). A sweep variant picks one by ``method``; :func:`method_settings`
gives it one restart, one branch, one step and one sample.

Fairness: a baseline gets the cell's data (the whole training set: train and
validation splits), its ``time_limit`` (less a reserve for scoring; counted from
the same point as every method's: with ``time_limit_clock = "fit"``, a
benchmark's, after the tool processes started and the baseline's package was
imported, :meth:`BaselineAgent.warm_up`) and one
core (gplearn ``n_jobs=1``, pyoperon ``n_threads=1``, PySR ``procs=0``), as an
srh cell runs in one process. The packages are optional (the ``bench`` extra);
a cell of a missing one fails with the line that installs it.

Model text to formulas: gplearn's prefix programs (``add(X0, mul(0.5, X1))``)
are rewritten token by token into engine syntax, with gplearn's protected
operators as their plain forms on the data's domain (``sqrt(abs(x))``,
``log(abs(x))``, ``x / y``, ``1 / x``; the guards near zero are dropped);
pyoperon's infix text needs ``^`` as ``**``; PySR's SymPy text is read by the
same parser as call_pysr. Nothing is evaluated as Python.
"""

from __future__ import annotations

import importlib.util
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srh_core.agent import SRAgent
from srh_core.api.response import ModelResponse
from srh_core.benchmark.protocol import renamed_formula
from srh_core.errors import ConfigurationError, SRHarnessError, did_you_mean
from srh_core.tools.pysr import FEATURE_PREFIX
from srh_core.types import ToolCall
from srh_engine import EngineError

#: The methods a benchmark or sweep variant may name; "srh" is the agent itself.
METHODS = ("srh", "gplearn", "pyoperon", "pysr")
#: A baseline's run: one restart, one branch, one step, one sample.
BASELINE_SHAPE: dict[str, Any] = {"max_restart_loop": 1, "global_width": 1,
                                  "max_refinement_depth": 1, "local_sample_size": 1}
#: Fit time when a baseline's run has no time limit.
DEFAULT_BUDGET_SECONDS = 60.0
#: Seconds kept back from the fit for scoring the formula and writing the result.
RESERVE_SECONDS = 0.5
RESERVE_FRACTION = 0.1
GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sqrt", "log", "sin", "cos", "inv")
GPLEARN_POPULATION = 1000
GPLEARN_PACE = 1.5
"""The next generation is assumed to take this many times the last one (programs grow)."""
OPERON_SYMBOLS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"
OPERON_UNBOUNDED = 10**9
"""Generations and evaluations given to pyoperon: its time limit is the stopping rule."""
INSTALL = {"gplearn": "pip install 'srh[bench]' (or: pip install gplearn)",
           "pyoperon": "pip install 'srh[bench]' (or: pip install pyoperon)",
           "pysr": "pip install pysr (it also needs Julia)"}
PACKAGES = {"gplearn": "gplearn", "pyoperon": "pyoperon", "pysr": "pysr"}
#: The module each fit imports: imported by :meth:`BaselineAgent.warm_up`, so a run whose
#: clock is its fit time (``time_limit_clock = "fit"``) does not count the import.
FIT_MODULES = {"gplearn": "gplearn.genetic", "pyoperon": "pyoperon.sklearn", "pysr": "pysr"}


class BaselineUnavailableError(SRHarnessError):
    """The baseline's package is not installed where the cell runs."""


class ModelTextError(SRHarnessError, ValueError):
    """A baseline's model text could not be read as a formula."""


def check_method(method: str) -> None:
    """Raises ConfigurationError naming the known methods when ``method`` is not one."""
    if method not in METHODS:
        raise ConfigurationError(f"Unknown method {method!r}; known: {', '.join(METHODS)}."
                                 f"{did_you_mean(method, METHODS)}", setting="method")


def method_settings(method: str) -> dict[str, Any]:
    """The search settings a method's runs need (none for srh)."""
    check_method(method)
    return {} if method == "srh" else dict(BASELINE_SHAPE)


def missing_package(method: str) -> str | None:
    """Why ``method`` cannot run here (its package is missing), or None."""
    package = PACKAGES.get(method)
    if package is None or importlib.util.find_spec(package) is not None:
        return None
    return f"{method} is not installed here: {INSTALL[method]}"


def agent_class(method: str) -> type[SRAgent]:
    """The agent class that runs ``method``'s cells."""
    check_method(method)
    return SRAgent if method == "srh" else BASELINE_AGENTS[method]


# ------------------------------------------------------------------ the fits
@dataclass(frozen=True, slots=True)
class BaselineFit:
    formula: str
    """In engine syntax, in the run's feature names."""
    model_text: str
    """What the baseline printed."""
    note: str


def _matrix(X: Mapping[str, Any], names: Sequence[str]) -> np.ndarray:
    return np.ascontiguousarray(np.column_stack([np.asarray(X[name], dtype=np.float64)
                                                 for name in names]))


def evolve_gplearn(model: Any, M: np.ndarray, y: np.ndarray, budget: float, *,
                   pace: float = 1.0) -> tuple[int, float]:
    """Evolve a warm-start gplearn model one generation at a time while the next one,
    at ``pace`` times the last one's time, still fits ``budget`` seconds (at least one);
    return the generations and the seconds used. The benchmark scripts budget gplearn
    this way too."""
    started, generation, last = time.perf_counter(), 0, 0.0
    while generation == 0 or time.perf_counter() - started + pace * last <= budget:
        tick = time.perf_counter()
        generation += 1
        model.set_params(generations=generation)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(M, y)
        last = time.perf_counter() - tick
    return generation, time.perf_counter() - started


def fit_gplearn(X: Mapping[str, Any], y: np.ndarray, names: Sequence[str], budget: float,
                seed: int) -> BaselineFit:
    """gplearn, one generation at a time while the next one (at 1.5 times the last
    one's time) still fits ``budget``; at least one generation."""
    from gplearn.genetic import SymbolicRegressor

    model = SymbolicRegressor(population_size=GPLEARN_POPULATION, generations=1,
                              function_set=GPLEARN_FUNCTIONS, random_state=seed,
                              warm_start=True, n_jobs=1)
    generation, _ = evolve_gplearn(model, _matrix(X, names), y, budget, pace=GPLEARN_PACE)
    text = str(model._program)
    return BaselineFit(gplearn_formula(text, names), text, f"{generation} generations")


def fit_pyoperon(X: Mapping[str, Any], y: np.ndarray, names: Sequence[str], budget: float,
                 seed: int) -> BaselineFit:
    """pyoperon with its time limit in whole seconds (its only time control), one thread."""
    from pyoperon.sklearn import SymbolicRegressor

    limit = max(1, int(budget))
    model = SymbolicRegressor(allowed_symbols=OPERON_SYMBOLS, max_time=limit, n_threads=1,
                              generations=OPERON_UNBOUNDED, max_evaluations=OPERON_UNBOUNDED,
                              random_state=seed)
    # a writable, C-ordered float64 copy: operon's least-squares step rejects a read-only
    # target (the run's data arrays are read-only)
    model.fit(_matrix(X, names), np.array(y, dtype=np.float64, order="C", copy=True))
    placeholders = [f"srhx{index}" for index in range(len(names))]
    text = model.get_model_string(model.model_, 12, placeholders)
    formula = _substituted(text.replace("^", "**"), dict(zip(placeholders, names, strict=True)))
    return BaselineFit(formula, text, f"max_time={limit}s")


def fit_pysr(X: Mapping[str, Any], y: np.ndarray, names: Sequence[str], budget: float,
             seed: int) -> BaselineFit:
    """PySR with ``timeout_in_seconds`` as its stopping rule, serial (``procs=0``)."""
    from pysr import PySRRegressor

    model = PySRRegressor(timeout_in_seconds=max(1.0, budget), niterations=OPERON_UNBOUNDED,
                          procs=0, random_state=seed, deterministic=True,
                          parallelism="serial", progress=False, verbosity=0)
    placeholders = [f"{FEATURE_PREFIX}{index}" for index in range(len(names))]
    model.fit(_matrix(X, names), y, variable_names=placeholders)
    text = str(model.sympy())
    formula = _substituted(text.replace("Abs(", "abs("),
                           dict(zip(placeholders, names, strict=True)))
    return BaselineFit(formula, text, f"timeout={budget:.0f}s")


FITS: dict[str, Callable[..., BaselineFit]] = {"gplearn": fit_gplearn, "pyoperon": fit_pyoperon,
                                              "pysr": fit_pysr}


# ------------------------------------------------------------ model text
_TOKEN = re.compile(r"\s*(?:(?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
                    r"|(?P<punct>[(),]))")
#: gplearn function -> (arity, engine template); protected forms as their plain ones.
_GPLEARN: dict[str, tuple[int, str]] = {
    "add": (2, "({0} + {1})"), "sub": (2, "({0} - {1})"), "mul": (2, "({0} * {1})"),
    "div": (2, "({0} / {1})"), "sqrt": (1, "sqrt(abs({0}))"), "log": (1, "log(abs({0}))"),
    "neg": (1, "(-{0})"), "inv": (1, "(1 / {0})"), "abs": (1, "abs({0})"),
    "sin": (1, "sin({0})"), "cos": (1, "cos({0})"), "tan": (1, "tan({0})"),
}


def gplearn_formula(text: str, names: Sequence[str]) -> str:
    """A gplearn program (prefix text, features ``X0..``) as an engine formula in ``names``.

    Raises:
        ModelTextError: A token, function or feature index the conversion does not know.
    """
    tokens = _tokens(text)
    position = 0

    def take() -> tuple[str, str]:
        nonlocal position
        if position >= len(tokens):
            raise ModelTextError(f"gplearn program ends early: {text!r:.200}")
        position += 1
        return tokens[position - 1]

    def expect(value: str) -> None:
        kind, token = take()
        if token != value:
            raise ModelTextError(f"expected {value!r}, got {token!r} in {text!r:.200}")

    def node() -> str:
        kind, token = take()
        if kind == "number":
            return f"({token})" if token.startswith("-") else token
        if kind != "name":
            raise ModelTextError(f"unexpected {token!r} in {text!r:.200}")
        if re.fullmatch(r"X\d+", token):
            index = int(token[1:])
            if index >= len(names):
                raise ModelTextError(f"feature {token} of a {len(names)}-feature problem")
            return names[index]
        if token not in _GPLEARN:
            raise ModelTextError(f"gplearn function {token!r} has no engine form")
        arity, template = _GPLEARN[token]
        expect("(")
        arguments = [node()]
        for _ in range(arity - 1):
            expect(",")
            arguments.append(node())
        expect(")")
        return template.format(*arguments)

    formula = node()
    if position != len(tokens):
        raise ModelTextError(f"text after the program: {text!r:.200}")
    return formula


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise ModelTextError(f"cannot read {text[position:position + 20]!r} in model text")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def _substituted(formula: str, names: Mapping[str, str]) -> str:
    """``formula`` with the placeholder symbols renamed (through the engine's tree)."""
    try:
        return renamed_formula(formula, {name: placeholder
                                         for placeholder, name in names.items()})
    except EngineError as error:
        raise ModelTextError(f"baseline model text is not a formula: {error}") from error


# ------------------------------------------------------------------ agents
class BaselineAgent(SRAgent):
    """An agent whose single step is a baseline's fit (see the module docstring)."""

    method = ""

    def warm_up(self, *, wait: bool = False) -> float:
        """The tool processes (as any agent's), and the baseline's package imported: the
        same start-up every method has done before a fit clock starts."""
        started = time.monotonic()
        super().warm_up(wait=wait)
        if missing_package(self.method) is None:
            importlib.import_module(FIT_MODULES[self.method])
        return time.monotonic() - started

    def fit_budget(self) -> float:
        """Seconds for the fit: the run's time left, less a reserve for scoring."""
        left = self.seconds_left()
        if left is None:
            return DEFAULT_BUDGET_SECONDS
        return max(0.5, left - max(RESERVE_SECONDS, RESERVE_FRACTION * left))

    def request_llm(self, prompt: list[dict[str, Any]], R: int, L: int, C: int,
                    stream_callback: Callable[[dict[str, Any]], None] | None = None,
                    ) -> tuple[list[ModelResponse], dict[str, Any]]:
        """The baseline's fit, answered as one ``evaluate_formula`` call."""
        why = missing_package(self.method)
        if why is not None:
            raise BaselineUnavailableError(why)
        X, y = self.problem_arrays()
        names = list(X)
        target = np.ascontiguousarray(next(iter(y.values())), dtype=np.float64)
        started = time.monotonic()
        fit = FITS[self.method](X, target, names, self.fit_budget(), self.settings.seed)
        call = ToolCall("evaluate_formula", {"f": fit.formula, "fit": False}, id="call_1")
        content = f"{self.method} ({fit.note}) found: {fit.model_text}"
        response = ModelResponse(content=content, tool_calls=(call,),
                                 message=self.parser.assistant_message(content, [call]),
                                 finish_reason="tool_calls", sample=1)
        return self.recorded_responses(
            {"responses": [response], "usage": {}, "provider": self.method,
             "model": self.method, "latency": time.monotonic() - started,
             "route": {"tier": "baseline"}}, R=R, L=L, C=C)

    def run_calls(self, calls: Sequence[ToolCall], key: str | None = None
                  ) -> list[Any]:
        """The fit's formula is always scored, even when the fit used the run's last
        seconds: under the tool timeout, never under the time left (else a baseline
        that used its whole budget would report nothing)."""
        if self.executor is None:
            return super().run_calls(calls, key)
        return self.executor.run(calls, timeout=self.settings.tool_timeout, key=key)


class GplearnAgent(BaselineAgent):
    """gplearn's SymbolicRegressor as a sweep cell."""

    method = "gplearn"


class PyOperonAgent(BaselineAgent):
    """pyoperon's SymbolicRegressor as a sweep cell."""

    method = "pyoperon"


class PySRAgent(BaselineAgent):
    """PySR's PySRRegressor as a sweep cell (needs pysr and Julia)."""

    method = "pysr"


BASELINE_AGENTS: dict[str, type[BaselineAgent]] = {"gplearn": GplearnAgent,
                                                   "pyoperon": PyOperonAgent,
                                                   "pysr": PySRAgent}
