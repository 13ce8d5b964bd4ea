"""SRHarnessRegressor: the R-C-L-K search as a scikit-learn regressor.

With scikit-learn installed (``pip install 'srh[sklearn]'``) the estimator is
a real ``BaseEstimator``/``RegressorMixin``: it validates input with
scikit-learn's own helpers, passes ``check_estimator`` (see
:func:`expected_failed_checks`) and works in ``Pipeline``, ``GridSearchCV``,
``cross_val_score`` and ``clone``. Without scikit-learn the same class works
alone, on the stand-ins of :mod:`srh_core.estimator_compat`.

Every parameter is a :class:`~srh_core.agent.SearchSettings` field (same name,
same default) except ``problem_description``, ``warm_start``, ``verbosity`` and
PySR's ``X_units`` / ``y_units``, which make the ``units`` setting
(:data:`ESTIMATOR_ONLY`); they are stored untouched and
validated when ``fit`` builds the settings. The fitted formula is
the search's best candidate; when the search found none, it is the mean of
``y`` (a constant) and a :class:`NoFormulaFoundWarning` says so.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.agent import SRAgent
from srh_core.agent.settings import MAX_GUESSES, SearchSettings
from srh_core.cli.display import StepLog
from srh_core.errors import ConfigurationError, SRHarnessError, did_you_mean
from srh_core.estimator_compat import ParamsBase, RegressorScoreMixin, validate_input
from srh_core.symbolic import to_sympy
from srh_core.types import SearchResult

try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.exceptions import NotFittedError as _NotFittedBase
    from sklearn.utils.validation import validate_data
except ImportError:  # scikit-learn is an optional extra
    BaseEstimator, RegressorMixin = ParamsBase, RegressorScoreMixin  # type: ignore[misc]
    validate_data = None  # type: ignore[assignment]

    class _NotFittedBase(ValueError, AttributeError):  # type: ignore[no-redef]
        pass

SKLEARN_AVAILABLE = validate_data is not None
ESTIMATOR_ONLY = ("problem_description", "warm_start", "verbosity", "X_units", "y_units")
"""Parameters of the estimator that are not search settings."""
_NAME_CHARACTERS = re.compile(r"\W+")
_REFIT_COMPARISONS = ("check_fit_idempotent", "check_supervised_y_2d", "check_regressors_int",
                      "check_regressor_data_not_an_array")
"""scikit-learn checks that fit twice on equal data and compare the predictions."""


class NotFittedError(SRHarnessError, _NotFittedBase):
    """``predict``, ``score`` or an accessor was called before ``fit``."""


class NoFormulaFoundWarning(UserWarning):
    """The search found no candidate; the estimator predicts the mean of ``y``."""


class SRHarnessRegressor(RegressorMixin, BaseEstimator):
    """Symbolic regression estimator: ``fit`` runs an embedded R-C-L-K search.

    Args:
        llm_provider: Model provider ("offline", "openai", "deepseek", ...).
        llm_model: Model name; None uses the provider's default.
        base_url: Endpoint override for OpenAI-compatible providers.
        endpoint: Name of an endpoint of the operator's ``SRH_ENDPOINTS`` file.
        tools: Tool names to enable; None enables the default catalogue.
        ban_tools: Tool names never enabled; None bans none.
        skills: Skill names the model may read; None enables all.
        skills_dir: Folder of custom skills offered beside the built-in ones.
        tool_parser: How tool calls are exchanged ("openai", "json", "text", "xml").
        local_sample_size: K, model responses per step.
        max_refinement_depth: L, steps per branch.
        global_width: C, branches per restart.
        max_restart_loop: R, restarts.
        restart_top_k: Pool candidates carried into each restart prompt.
        llm_max_tokens: Maximum tokens per model response.
        llm_temperature: Sampling temperature.
        llm_stream: Ask an OpenAI-compatible model to stream its replies.
        max_workers: Tool-call worker processes; 0 runs calls serially.
        validation_fraction: Share of samples held out inside the search; 0 disables.
        split_by: "random" or "ood" validation split.
        split_ood_variable: Variable whose high tail is held out when "ood".
        split_random_state: Seed of the validation split.
        ranking_metric: Metric ranking candidates.
        larger_is_better: Direction of the ranking metric.
        early_stop: Stop once the best candidate is exact.
        exact_fit_threshold: Value of ``exact_fit_metric`` that counts as exact.
        exact_fit_metric: Metric of the early-stop rule.
        selection: How the best formula is chosen: "best" (complexity-aware,
            PySR's rule on the Pareto front) or "accuracy" (lowest validation error).
        force_initial_diagnostics: Run the analysis tools before the first step.
        auto_routing: Route hard tasks to the strong model.
        strong_llm_provider: Provider of the strong model.
        strong_llm_model: Strong model; None disables routing to it.
        seed: Seed of the model sampling (the offline proposer's choices).
        time_limit: Wall-clock budget of one fit in seconds; None for none.
        time_limit_clock: When ``time_limit`` starts counting: "wall" (default, at the
            fit's start, start-up included) or "fit" (once the tool processes are up).
        max_cost: Spend budget of one fit in USD; None for none.
        max_tokens: Token budget of one fit (input + output); None for none.
        prices: Price overrides, ``{"provider:model": {"input": .., "output": ..}}``
            in USD per million tokens; None uses the built-in table.
        tool_timeout: Per-call tool limit in seconds.
        save_path: Run directory of each fit; None keeps runs in memory.
        workspace: Directory of the workspace tools; None for none.
        branch_threads: Branches of a restart stepping at once, on threads.
        granularity: How a cluster run is cut into tasks (unused by ``fit``).
        min_train_rows: Fewest training rows a fit accepts.
        rollout_state: For a derivative target: its state variable (adds rollout_rmse).
        rollout_time: Time variable of the rollout.
        verbose: Debug logging.
        binary_operators: PySR's binary operators a formula may use ("+", "-", "*", "/",
            "^"); None: no restriction. An unknown name is a ConfigurationError.
        unary_operators: PySR's unary operators a formula may use ("sqrt", "square",
            "cube", "exp", "log", "sin", "cos", "tanh", "abs", "inv", "neg"); None: no
            restriction.
        maxsize: Largest complexity (engine nodes) of a formula found; None: no bound.
        guesses: Formulas to start from (engine syntax; ``param("a")`` for a constant to
            fit), evaluated with their constants fitted at the first step.
        nested_constraints: PySR's ``{"sin": {"sin": 0, "cos": 0}}``: how many of an
            operator a formula may nest inside another; None: no limit.
        constraints: PySR's size constraints, ``{"^": (-1, 1), "sin": 5}``: the largest
            argument(s) of an operator (-1: no limit); None: no limit.
        evaluator: A ``.py`` file defining the run's evaluator (a ``DefaultEvaluator``
            subclass, loaded as ``load_custom_evaluator`` does); None: the default.
        warm_start: A second ``fit`` starts from the previous fit's Pareto front (its
            formulas join ``guesses``) when the variables are the same.
        verbosity: 0 silent; 1 one line per restart and per step on stdout (where the
            search is, the best formula so far and its ranking metric).
        problem_description: What the data is, for the model.
        X_units: Units of X's columns (PySR's parameter): one unit text per column
            (``["kg", "m/s"]``) or a mapping by variable name; None for none.
        y_units: Units of y (``"kg*m^2/s^2"``); None for none.

    Attributes:
        formula_: The formula ``predict`` evaluates (engine syntax, in ``variable_names_``).
        best_formula_: The search's best formula, or None when it found none.
        pareto_front_: The Pareto front, best first, as candidate dicts.
        result_: The full :class:`~srh_core.types.SearchResult`.
        variable_names_: The engine variable of each column of X.
        n_features_in_: Number of columns of X.
        feature_names_in_: Column names of X, when X had string column names.
    """

    def __init__(
        self, *, llm_provider: str = "offline", llm_model: str | None = None,
        base_url: str | None = None, endpoint: str | None = None,
        tools: Sequence[str] | None = None,
        ban_tools: Sequence[str] | None = None, skills: Sequence[str] | None = None,
        skills_dir: str | None = None, tool_parser: str = "openai", local_sample_size: int = 1,
        max_refinement_depth: int = 20,
        global_width: int = 1, max_restart_loop: int = 1, restart_top_k: int = 1,
        llm_max_tokens: int = 4096, llm_temperature: float = 1.0, llm_stream: bool = False,
        max_workers: int = 0,
        validation_fraction: float = 0.2, split_by: str = "random",
        split_ood_variable: str | None = None, split_random_state: int = 42,
        ranking_metric: str = "mse", larger_is_better: bool = False, early_stop: bool = True,
        exact_fit_threshold: float = 1.0, exact_fit_metric: str = "r2", selection: str = "best",
        force_initial_diagnostics: bool = False, auto_routing: bool = True,
        strong_llm_provider: str | None = None, strong_llm_model: str | None = None,
        seed: int = 0, time_limit: float | None = None, time_limit_clock: str = "wall",
        max_cost: float | None = None,
        max_tokens: int | None = None, prices: Mapping[str, Mapping[str, float]] | None = None,
        tool_timeout: float = 120.0,
        save_path: str | None = None, workspace: str | None = None, branch_threads: int = 8,
        granularity: str = "auto", min_train_rows: int = 3, rollout_state: str | None = None,
        rollout_time: str = "t", verbose: bool = False,
        binary_operators: Sequence[str] | None = None,
        unary_operators: Sequence[str] | None = None, maxsize: int | None = None,
        guesses: Sequence[str] | None = None, evaluator: str | None = None,
        nested_constraints: Mapping[str, Mapping[str, int]] | None = None,
        constraints: Mapping[str, int | Sequence[int]] | None = None,
        warm_start: bool = False, verbosity: int = 0,
        problem_description: str = "",
        X_units: Sequence[str] | Mapping[str, str] | None = None, y_units: str | None = None,
    ) -> None:
        self.llm_provider = llm_provider
        self.llm_model = llm_model
        self.base_url = base_url
        self.endpoint = endpoint
        self.tools = tools
        self.ban_tools = ban_tools
        self.skills = skills
        self.skills_dir = skills_dir
        self.tool_parser = tool_parser
        self.local_sample_size = local_sample_size
        self.max_refinement_depth = max_refinement_depth
        self.global_width = global_width
        self.max_restart_loop = max_restart_loop
        self.restart_top_k = restart_top_k
        self.llm_max_tokens = llm_max_tokens
        self.llm_temperature = llm_temperature
        self.llm_stream = llm_stream
        self.max_workers = max_workers
        self.validation_fraction = validation_fraction
        self.split_by = split_by
        self.split_ood_variable = split_ood_variable
        self.split_random_state = split_random_state
        self.ranking_metric = ranking_metric
        self.larger_is_better = larger_is_better
        self.early_stop = early_stop
        self.exact_fit_threshold = exact_fit_threshold
        self.exact_fit_metric = exact_fit_metric
        self.selection = selection
        self.force_initial_diagnostics = force_initial_diagnostics
        self.auto_routing = auto_routing
        self.strong_llm_provider = strong_llm_provider
        self.strong_llm_model = strong_llm_model
        self.seed = seed
        self.time_limit = time_limit
        self.time_limit_clock = time_limit_clock
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.prices = prices
        self.tool_timeout = tool_timeout
        self.save_path = save_path
        self.workspace = workspace
        self.branch_threads = branch_threads
        self.granularity = granularity
        self.min_train_rows = min_train_rows
        self.rollout_state = rollout_state
        self.rollout_time = rollout_time
        self.verbose = verbose
        self.binary_operators = binary_operators
        self.unary_operators = unary_operators
        self.maxsize = maxsize
        self.guesses = guesses
        self.evaluator = evaluator
        self.nested_constraints = nested_constraints
        self.constraints = constraints
        self.warm_start = warm_start
        self.verbosity = verbosity
        self.problem_description = problem_description
        self.X_units = X_units
        self.y_units = y_units

    # ----------------------------------------------------------- settings
    def _resolve(self) -> Any:
        """The validated SearchSettings of the current parameters.

        Raises:
            ConfigurationError: A parameter is invalid (a ValueError naming it).
        """
        values = {name: value for name, value in self.get_params(deep=False).items()
                  if name not in ESTIMATOR_ONLY}
        for name in ("tools", "skills", "binary_operators", "unary_operators"):
            values[name] = None if values[name] is None else list(values[name])
        values["ban_tools"] = list(values["ban_tools"] or [])
        values["guesses"] = list(values["guesses"] or [])
        for name in ("nested_constraints", "constraints"):
            if isinstance(values[name], Mapping):
                values[name] = {key: dict(limit) if isinstance(limit, Mapping) else
                                list(limit) if isinstance(limit, Sequence) else limit
                                for key, limit in values[name].items()}
        if isinstance(values["prices"], Mapping):
            values["prices"] = {key: dict(rates) if isinstance(rates, Mapping) else rates
                                for key, rates in values["prices"].items()}
        return SearchSettings.build(**values)

    def set_params(self, **params: Any) -> SRHarnessRegressor:
        """Set parameters; an unknown name is a ValueError with a "did you mean"."""
        names = self._get_param_names()
        for name in params:
            if name not in names:
                raise ConfigurationError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}."
                    f"{did_you_mean(name, names)} Valid parameters are: {names}.", setting=name)
        return super().set_params(**params)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self._search_varies()
        return tags

    def _search_varies(self) -> bool:
        """A model's replies vary; the offline proposer with a seed and no clock does not."""
        return self.llm_provider != "offline" or self.time_limit is not None

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "formula_")

    # ------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any, variable_names: Sequence[str] | None = None,
            problem_description: str | None = None,
            sample_weight: Any = None) -> SRHarnessRegressor:
        """Search for a formula y = f(X).

        Args:
            X: ``(n_samples, n_features)`` array-like or DataFrame.
            y: ``(n_samples,)`` array-like.
            variable_names: Variable names of X's columns in formulas (default:
                DataFrame column names when they are usable identifiers, else x1, x2, ...).
            problem_description: Overrides the ``problem_description`` parameter.
            sample_weight: ``(n_samples,)`` weights >= 0 (scikit-learn's name; PySR's
                ``weights``): every fit minimises the weighted MSE, the metrics (``mse``,
                ``r2``...) and the ranking are weighted, and rows of weight 0 take no
                part. None (or equal weights): unweighted.

        Returns:
            self.
        """
        settings = self._resolve()
        if not isinstance(self.verbosity, int) or isinstance(self.verbosity, bool) or \
                self.verbosity not in (0, 1):
            raise ConfigurationError("The 'verbosity' parameter of SRHarnessRegressor must be "
                                     f"0 or 1. Got {self.verbosity!r} instead.",
                                     setting="verbosity")
        previous = self._warm_front()
        matrix, vector = self._validate(X, y, reset=True)
        names = _variable_names(variable_names or getattr(self, "feature_names_in_", None),
                                matrix.shape[1])
        _check_guesses(settings.guesses, names)
        if previous and previous[0] == names:
            settings = settings.replace(guesses=list(dict.fromkeys(
                [*settings.guesses, *previous[1]]))[:MAX_GUESSES])
        target = _free_name("y", names)
        units = _units(self.X_units, self.y_units, names, target)
        if units:
            settings = settings.replace(units=units)
        data = {name: matrix[:, i] for i, name in enumerate(names)}
        weights = _sample_weight(sample_weight, len(vector))
        if weights is not None:  # a column of the data the settings name, not a feature
            column = _free_name("sample_weight", [*names, target])
            data[column] = weights
            settings = settings.replace(weights=column)
        text = self.problem_description if problem_description is None else problem_description
        agent = SRAgent(settings)
        if self.verbosity:
            agent.observers.append(StepLog(agent))
        result = SearchResult.from_dict(agent.run(data, {target: vector}, text))
        self.result_ = result
        self.variable_names_ = names
        self.best_formula_ = result.best.formula if result.best is not None else None
        self.pareto_front_ = [candidate.to_dict() for candidate in result.front()]
        self.formula_ = self.best_formula_ or repr(float(np.mean(vector)))
        if self.best_formula_ is None:
            warnings.warn(f"The search found no formula ({result.stop_reason or result.status});"
                          " predicting the mean of y.", NoFormulaFoundWarning, stacklevel=2)
        return self

    def _warm_front(self) -> tuple[list[str], list[str]] | None:
        """``(variable names, front formulas)`` of the previous fit when ``warm_start``."""
        if not self.warm_start or not self.__sklearn_is_fitted__():
            return None
        return list(self.variable_names_), [row["formula"] for row in self.pareto_front_]

    def _validate(self, X: Any, y: Any = None, *, reset: bool) -> Any:
        if validate_data is None:
            return validate_input(self, X, y, reset=reset)
        if y is None and not reset:
            return validate_data(self, X, reset=False, dtype=np.float64)
        return validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True,
                             ensure_min_samples=2)

    # --------------------------------------------------------- prediction
    def predict(self, X: Any) -> np.ndarray:
        """Evaluate the fitted formula on X (the columns of ``fit``).

        Returns:
            ``(n_samples,)`` float predictions.
        """
        self._check_fitted()
        matrix = self._validate(X, reset=False)
        values = {name: matrix[:, i] for i, name in enumerate(self.variable_names_)}
        with np.errstate(all="ignore"):
            predicted = engine.parse(self.formula_).evaluate(values)
        return np.broadcast_to(np.asarray(predicted, dtype=float), (len(matrix),)).copy()

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call fit(X, y) first.")

    # ---------------------------------------------------------- accessors
    def expression(self, index: int | None = None) -> engine.Expression:
        """The engine expression of the fitted formula, or of row ``index`` of the front."""
        self._check_fitted()
        if index is None:
            return engine.parse(self.formula_)
        return engine.parse(self.pareto_front_[index]["formula"])

    def sympy(self, index: int | None = None) -> Any:
        """The fitted formula (or front row ``index``) as a SymPy expression."""
        return to_sympy(self.expression(index))

    def latex(self, index: int | None = None) -> str:
        """The fitted formula (or front row ``index``) as LaTeX."""
        return engine.to_str(self.expression(index), latex=True)

    def front_table(self) -> list[dict[str, Any]]:
        """The Pareto front, best first: formula, complexity, the ranking split and its metrics."""
        self._check_fitted()
        return [candidate.display_dict() for candidate in self.result_.front()]

    @property
    def equations_(self) -> Any:
        """The Pareto front as a pandas DataFrame (PySR's name; needs pandas)."""
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("equations_ needs pandas, part of the sklearn extra "
                              "(pip install 'srh[sklearn]'); front_table() gives the same rows "
                              "as dicts.") from error
        return pd.DataFrame(self.front_table())


def expected_failed_checks(estimator: SRHarnessRegressor) -> dict[str, str]:
    """scikit-learn checks that cannot apply to a formula search, with the reason.

    A search whose replies vary between fits (a language model, or a time
    limit that cuts the search at a different point) cannot pass the checks
    that fit twice and compare the predictions; with the offline proposer and
    no time limit the search is deterministic and those checks apply. Integer
    weights are not repeated rows (the one check that compares them is expected
    to fail for every search). Pass
    it to ``check_estimator(est, expected_failed_checks=expected_failed_checks(est))``
    or ``parametrize_with_checks(..., expected_failed_checks=expected_failed_checks)``.
    """
    weights = {"check_sample_weight_equivalence_on_dense_data": (
        "a row of weight 2 and the same row twice are different data to the search: the "
        "validation split, the row samples and the sample count the model reads differ")}
    if not estimator._search_varies():
        return weights
    return {**weights, **dict.fromkeys(_REFIT_COMPARISONS, "two searches on the same data "
                                       "may return different formulas (model replies or the "
                                       "time limit vary)")}


def _units(X_units: Sequence[str] | Mapping[str, str] | None, y_units: str | None,
           names: Sequence[str], target: str) -> dict[str, str]:
    """The ``units`` setting from ``X_units`` / ``y_units`` (checked by the settings).

    Raises:
        ConfigurationError: ``X_units`` does not give one unit per column, or names a
            variable that is not one of X's.
    """
    units: dict[str, str] = {}
    if isinstance(X_units, Mapping):
        unknown = [name for name in X_units if name not in names]
        if unknown:
            raise ConfigurationError(
                f"The 'X_units' parameter names {unknown[0]!r}, which is not a variable of X "
                f"({', '.join(names)}).{did_you_mean(str(unknown[0]), names)}",
                setting="X_units")
        units.update({str(name): text for name, text in X_units.items()})
    elif X_units is not None:
        listed = [X_units] if isinstance(X_units, str) else list(X_units)
        if len(listed) != len(names):
            raise ConfigurationError(
                f"The 'X_units' parameter must give one unit per column of X ({len(names)}); "
                f"got {len(listed)}.", setting="X_units")
        units.update(dict(zip(names, listed, strict=True)))
    if y_units is not None:
        units[target] = y_units
    return units


def _sample_weight(sample_weight: Any, n_samples: int) -> np.ndarray | None:
    """``sample_weight`` as float weights, or None when absent or all equal.

    Raises:
        ConfigurationError: Not one finite weight >= 0 per sample, or all 0.
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=float)
    except (TypeError, ValueError):
        weights = np.asarray([np.nan])
    if weights.ndim == 0:
        weights = np.full(n_samples, float(weights))
    if weights.shape != (n_samples,) or not np.all(np.isfinite(weights)) or \
            np.any(weights < 0):
        raise ConfigurationError(
            f"sample_weight must be {n_samples} finite numbers >= 0 (one per row of X); got "
            f"shape {weights.shape}.", setting="sample_weight")
    if not np.any(weights > 0):
        raise ConfigurationError("sample_weight must hold at least one weight above zero; "
                                 "every weight is zero.", setting="sample_weight")
    return None if weights.min() == weights.max() else weights.copy()


def _check_guesses(guesses: Sequence[str], names: Sequence[str]) -> None:
    """Every variable of a guess is a column of X.

    Raises:
        ConfigurationError: A guess names another variable (with a "did you mean").
    """
    for guess in guesses:
        for name in engine.symbols(engine.parse(guess)):
            if name not in names:
                raise ConfigurationError(
                    f"The guess {guess!r} uses {name!r}, which is not a variable of X "
                    f"({', '.join(names)}).{did_you_mean(name, names)}", setting="guesses")


def _variable_names(given: Sequence[Any] | None, n_features: int) -> list[str]:
    """One distinct engine variable name per column: usable given names, else x1, x2, ...
    (1-based, like the native search's and the built-in problems' names)."""
    names: list[str] = []
    for i in range(n_features):
        default = f"x{i + 1}"
        name = str(given[i]) if given is not None and i < len(given) else default
        name = name if _usable(name) else _usable_or(_NAME_CHARACTERS.sub("_", name), default)
        names.append(_free_name(name, names))
    return names


def _usable(name: str) -> bool:
    """Whether ``name`` parses as the engine variable ``name`` (not e, pi, sin, ...)."""
    if not name.isidentifier():
        return False
    try:
        parsed = engine.parse(name)
    except engine.EngineError:
        return False
    return isinstance(parsed, engine.Symbol) and parsed.name == name


def _usable_or(name: str, fallback: str) -> str:
    return name if _usable(name) else fallback


def _free_name(name: str, taken: Sequence[str]) -> str:
    candidate, suffix = name, 1
    while candidate in taken:
        candidate, suffix = f"{name}_{suffix}", suffix + 1
    return candidate
