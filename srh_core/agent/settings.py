"""SearchSettings: every setting of a search, validated once, serialisable.

The constructor arguments of :class:`~srh_core.agent.SRAgent` (the
reference's names) land here untouched by the caller; pydantic validates
types and ranges and the model is frozen, so a run's settings cannot drift.
Types are strict: nothing is coerced (``max_refinement_depth = true`` and
``time_limit = "10"`` are errors, not 1 and 10.0); an int is accepted where
a float is expected, and any sequence of strings for the list settings.
Settings load from TOML (a ``[search]`` table or a flat file, nothing else:
a key or table outside ``[search]``, or an unknown table, is an error naming
it and where it belongs) and are written into the run directory as
``settings.json``. Every error names the setting and its allowed values, in
one line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

import srh_engine as engine
from srh_core.api.endpoints import ENDPOINT_NAME_PATTERN
from srh_core.api.pricing import price_overrides
from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.input_limits import MAX_CONFIG_BYTES, read_limited_text
from srh_core.operators import check_constraints, check_nested_constraints, check_operators
from srh_engine import UnitError, parse_units

ToolParserName = Literal["openai", "json", "text", "xml"]
#: Run ids name directories and Redis keys: no "." or ".." and no separators.
RUN_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
MAX_SEED = 2**32 - 1
MAX_GUESSES = 20
#: The table of a settings file that holds the settings (a file without it holds them flat).
SEARCH_TABLE = "search"
#: Tables of a sweep file (``srh sweep FILE``), named in the hint when one is given as --config.
SWEEP_FILE_TABLES = frozenset({"sweep", "settings", "variants", "datasets"})


class SearchSettings(BaseModel):
    """Validated settings of one R-C-L-K search.

    Attributes:
        llm_provider: Provider name ("offline", "openai", "deepseek", ...).
        llm_model: Model name; None uses the provider's default.
        base_url: Endpoint override for OpenAI-compatible providers (on a cluster: only
            an operator's endpoint, or with the run's own key; see srh_core.api.endpoints).
        endpoint: Name of an endpoint the operator configured (``SRH_ENDPOINTS``); it
            sets the provider, base URL and key of the run's model.
        tools: Tool names to enable; None enables the default catalogue.
        ban_tools: Tool names never enabled, even when ``tools`` lists them.
        skills: Skill names the model may read; None enables all.
        skills_dir: Folder of custom skills (one sub-folder per skill, with its SKILL.md)
            offered beside the built-in ones; on a cluster its files travel with the run.
        verbose: Debug logging.
        tool_parser: How tool calls are exchanged with the model.
        save_path: Run directory; None keeps the run in memory.
        run_id: Stable run identifier; generated when None.
        local_sample_size: K, model responses per step.
        max_refinement_depth: L, steps per branch.
        global_width: C, branches per restart.
        max_restart_loop: R, restarts.
        restart_top_k: Pool candidates carried into each restart prompt.
        llm_max_tokens: Maximum tokens per model response.
        llm_temperature: Sampling temperature sent to the model.
        llm_stream: Ask an OpenAI-compatible model to stream its replies (an interactive
            run then publishes ``assistant_delta`` events as the text arrives).
        max_workers: Tool-call worker processes; 0 runs calls serially.
        validation_fraction: Share of samples held out; 0 disables.
        split_by: "random" or "ood" validation split.
        split_ood_variable: Variable whose high tail is held out when "ood".
        split_random_state: Seed of the random split.
        ranking_metric: Metric ranking candidates.
        larger_is_better: Direction of the ranking metric.
        early_stop: Stop the search once the best candidate is exact (see the
            next two); False always uses the whole R x C x L x K budget.
        exact_fit_threshold: The best candidate is exact when its train
            ``exact_fit_metric`` reaches this value and it is finite on every
            train row. Default: R^2 of 1.0, i.e. exact up to floating-point
            rounding (residual variance below ~1e-16 of the target's).
        exact_fit_metric: Metric of the early-stop rule (train split); r2,
            pearson and spearman count up, the error metrics down.
        selection: How the run's reported best formula is chosen: "best"
            (PySR's rule: among the Pareto-front candidates within 1.5x of the
            lowest validation loss, the one whose loss falls fastest per unit
            of complexity; see ``srh_core.ranking.select_best``) or "accuracy"
            (the lowest validation error). The ranking, the front and the
            early stop do not depend on it.
        force_initial_diagnostics: Run the analysis tools before L=1.
        auto_routing: Route hard tasks to the strong model.
        strong_llm_provider: Provider of the strong model.
        strong_llm_model: Strong model; None disables routing to it.
        seed: Seed of the model sampling (the offline proposer's choices).
        time_limit: Wall-clock budget of the whole run in seconds.
        time_limit_clock: When ``time_limit`` starts counting. "wall" (default): at the
            run's start, so its start-up (building the tools, starting and importing the
            tool processes) is part of it: the wall time a user asked for (the tool
            processes still start at once, beside the first step). "fit": once the run
            is ready to fit (tools built, tool processes started and imported, a
            baseline's package imported): the method's fit time, what a benchmark's
            budget means (``srh benchmark run`` sets it for every method). On a cluster
            the workers are started already: "wall" counts from the submission, "fit"
            from the start of the run's first task on a worker, so a run that waits in
            the queue (a sweep's cells beyond the free workers) loses none of its budget.
        max_cost: Spend budget of the run in USD (priced responses only); the
            run ends ``interrupted`` (stop reason "budget") before the first
            step that would start with the spend at or above it; resumable
            with a higher budget. None for none.
        max_tokens: Token budget of the run (input plus output tokens), the
            same way. None for none.
        prices: Price overrides, USD per million tokens:
            ``{"provider:model" or "model": {"input": .., "output": ..,
            "cached_input": ..}}``; they win over the built-in table
            (:mod:`srh_core.api.pricing`).
        tool_timeout: Per-call limit in seconds (enforced when calls run in
            worker processes).
        branch_threads: Embedded runtime: how many branches of a restart run
            at once, on threads (model requests are I/O). 1 runs them one
            after another, in branch order. The nodes are the same either way.
        granularity: Celery runtime: "step" runs each refinement step as
            tasks (a model request on the branches queue, one task per
            sample on the tools queue); "run" runs the whole run as one task
            on the tools queue (for steps too cheap to distribute, e.g. the
            offline model); "auto" is "run" for the offline provider and
            "step" otherwise. Either way a lost worker loses nothing.
        workspace: Directory the workspace tools (``workspace_shell``,
            ``workspace_code_executor``) work in; None gives the run no workspace.
        evaluator: A ``.py`` file defining one ``DefaultEvaluator`` subclass, the run's
            evaluator (loaded in this process, as ``load_custom_evaluator`` does: a file
            you trust); None uses DefaultEvaluator. Embedded runs only: a cluster refuses it.
        min_train_rows: Fewest training rows the search accepts; data that
            leaves fewer (or a validation split that holds out no row) is
            refused when it is committed.
        rollout_state: For a derivative target d(state)/dt: the state variable;
            candidates then also get ``rollout_rmse`` (trajectory rollout error,
            see ``srh_core.evaluator.dynamics``); None disables it.
        rollout_time: Time variable of the rollout.
        units: Units of the variables and the target by name (``{"v": "m/s"}``, unit
            text of :func:`srh_engine.parse_units`); the tools check formulas against
            them and the expression search reduces the problem by them. None: no units.
        binary_operators: PySR's binary operators a formula may use (``+ - * / ^``);
            None: no restriction (see :mod:`srh_core.operators`).
        unary_operators: PySR's unary operators a formula may use (``sqrt square cube exp
            log sin cos tanh abs inv neg``); None: no restriction.
        maxsize: Largest complexity (engine nodes) of a candidate and of the native
            search's formulas; None: no bound.
        guesses: Formulas to start from (engine syntax, ``param("a")`` for constants to
            fit): the first step evaluates them, fitted, as candidates.
        nested_constraints: PySR's ``nested_constraints``: ``{"sin": {"sin": 0, "cos": 0}}``
            allows no sin or cos inside a sin; a formula that breaks it is not a candidate
            and the native search's front keeps none. None: no limit.
        constraints: PySR's size ``constraints``: ``{"^": [-1, 1]}`` (a power's exponent at
            most 1 node), ``{"sin": 5}`` (a sin's argument at most 5 nodes); -1 no limit.
        weights: The data column holding each row's weight (PySR's ``weights``,
            scikit-learn's ``sample_weight``): fits minimise the weighted MSE, metrics and
            ranking are weighted, rows of weight 0 take no part; the column is not a
            feature. None: every row weighs the same.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, strict=True)

    llm_provider: str = "offline"
    llm_model: str | None = None
    base_url: str | None = None
    endpoint: str | None = Field(default=None, pattern=ENDPOINT_NAME_PATTERN)
    tools: list[str] | None = Field(default=None, strict=False)
    ban_tools: list[str] = Field(default_factory=list, strict=False)
    skills: list[str] | None = Field(default=None, strict=False)
    skills_dir: str | None = None
    verbose: bool = False
    tool_parser: ToolParserName = "openai"
    save_path: str | None = None
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    local_sample_size: int = Field(default=1, ge=1, le=64)
    max_refinement_depth: int = Field(default=20, ge=1, le=1000)
    global_width: int = Field(default=1, ge=1, le=256)
    max_restart_loop: int = Field(default=1, ge=1, le=256)
    restart_top_k: int = Field(default=1, ge=0, le=100)
    llm_max_tokens: int = Field(default=4096, ge=16, le=1_000_000)
    llm_temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    llm_stream: bool = False
    max_workers: int = Field(default=0, ge=0, le=256)
    validation_fraction: float = Field(default=0.2, ge=0.0, lt=1.0)
    split_by: Literal["random", "ood"] = "random"
    split_ood_variable: str | None = None
    split_random_state: int = Field(default=42, ge=0, le=MAX_SEED)
    ranking_metric: str = "mse"
    larger_is_better: bool = False
    early_stop: bool = True
    exact_fit_threshold: float = Field(default=1.0, allow_inf_nan=False)
    exact_fit_metric: str = "r2"
    selection: Literal["best", "accuracy"] = "best"
    force_initial_diagnostics: bool = False
    auto_routing: bool = True
    strong_llm_provider: str | None = None
    strong_llm_model: str | None = None
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    time_limit_clock: Literal["wall", "fit"] = "wall"
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_tokens: int | None = Field(default=None, ge=0)
    prices: dict[str, dict[str, float]] | None = Field(default=None, strict=False)
    tool_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    branch_threads: int = Field(default=8, ge=1, le=256)
    granularity: Literal["auto", "step", "run"] = "auto"
    workspace: str | None = None
    evaluator: str | None = None
    min_train_rows: int = Field(default=3, ge=1, le=1_000_000)
    rollout_state: str | None = None
    rollout_time: str = "t"
    units: dict[str, str] | None = Field(default=None, strict=False)
    binary_operators: list[str] | None = Field(default=None, strict=False)
    unary_operators: list[str] | None = Field(default=None, strict=False)
    maxsize: int | None = Field(default=None, ge=3, le=60)
    guesses: list[str] = Field(default_factory=list, strict=False, max_length=MAX_GUESSES)
    nested_constraints: dict[str, dict[str, int]] | None = Field(default=None, strict=False)
    constraints: dict[str, int | list[int]] | None = Field(default=None, strict=False)
    weights: str | None = None

    @field_validator("binary_operators", "unary_operators")
    @classmethod
    def _known_operators(cls, value: list[str] | None, info: Any) -> list[str] | None:
        return check_operators(info.field_name.split("_")[0], value)

    @field_validator("nested_constraints", mode="before")
    @classmethod
    def _known_nesting(cls, value: Any) -> Any:
        return check_nested_constraints(value)

    @field_validator("constraints", mode="before")
    @classmethod
    def _known_sizes(cls, value: Any) -> Any:
        return check_constraints(value)

    @field_validator("guesses")
    @classmethod
    def _parsed_guesses(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                engine.parse(text)
            except engine.EngineError as error:
                raise ValueError(f"the guess {text!r} is not a formula: {error}") from None
        return value

    @field_validator("split_ood_variable")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be None or a non-empty variable name")
        return value

    @field_validator("weights")
    @classmethod
    def _column_name(cls, value: str | None) -> str | None:
        if value is not None and not value.isidentifier():
            raise ValueError(f"must be None or the name of a data column; got {value!r}")
        return value

    @field_validator("units")
    @classmethod
    def _valid_units(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name, text in (value or {}).items():
            if not name.isidentifier():
                raise ValueError(f"{name!r} is not a variable name")
            try:
                parse_units(text)
            except UnitError as error:
                raise ValueError(f"units of {name!r}: {error}") from None
        return value or None

    @field_validator("prices")
    @classmethod
    def _valid_prices(cls, value: dict[str, dict[str, float]] | None
                      ) -> dict[str, dict[str, float]] | None:
        try:
            price_overrides(value)
        except ConfigurationError as error:
            raise ValueError(str(error).rstrip(".")) from None
        return value

    @property
    def max_nodes(self) -> int:
        """R x C x L x K, the most model responses this search can make."""
        return (self.max_restart_loop * self.global_width * self.max_refinement_depth
                * self.local_sample_size)

    @classmethod
    def build(cls, **values: Any) -> SearchSettings:
        """Validate ``values``; errors become one ConfigurationError per setting."""
        unknown = [name for name in values if name not in cls.model_fields]
        if unknown:
            name = unknown[0]
            raise ConfigurationError(
                f"Unknown setting {name!r}.{did_you_mean(name, cls.model_fields)}", setting=name)
        try:
            return cls(**values)
        except ValidationError as error:
            raise _configuration_error(error) from None

    @classmethod
    def from_toml(cls, path: str | Path, **overrides: Any) -> SearchSettings:
        """Load a TOML file (a ``[search]`` table, or top-level keys) plus overrides.

        Raises:
            ConfigurationError: The file cannot be read or parsed; a key or table
                is outside ``[search]`` or unknown (the message names it and where
                it belongs); a setting is invalid.
            InputTooLargeError: The file is larger than ``MAX_CONFIG_BYTES``.
        """
        try:
            document = tomllib.loads(read_limited_text(path, "settings file", MAX_CONFIG_BYTES))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigurationError(f"Cannot read settings file {path}: {error}",
                                     setting="config") from error
        table = settings_table(document, path)
        given = {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls.build(**{**table, **given})
        except ConfigurationError as error:
            if error.setting in table and error.setting not in given:
                where = f"{path}, [search]" if table is not document else str(path)
                raise ConfigurationError(f"{where}: {error}", setting=error.setting) from None
            raise

    def replace(self, **changes: Any) -> SearchSettings:
        """A validated copy with ``changes`` applied."""
        return type(self).build(**{**self.model_dump(), **changes})


def settings_table(document: Mapping[str, Any], path: str | Path) -> Mapping[str, Any]:
    """The settings of a settings file: its ``[search]`` table, or else its top-level keys.

    A file with a ``[search]`` table holds nothing else; a file without one
    holds settings only (a setting's own table, such as ``[prices]``, included).
    Unknown settings inside the table are :meth:`SearchSettings.build`'s to report.

    Raises:
        ConfigurationError: ``search`` is not a table, or a key or table is outside
            ``[search]`` or is not a setting; the message names it and where it belongs.
    """
    if SEARCH_TABLE not in document:
        for key, value in document.items():
            if isinstance(value, Mapping) and key not in SearchSettings.model_fields:
                raise _unknown_table(key, value, path)
        return document
    table = document[SEARCH_TABLE]
    if not isinstance(table, Mapping):
        raise ConfigurationError(
            f"The 'search' entry of {path} must be a table of settings ([search] with "
            f"key = value lines). Got {table!r} instead.", setting=SEARCH_TABLE)
    for key, value in document.items():
        if key != SEARCH_TABLE:
            raise _outside_search(key, value, path)
    return table


def _outside_search(key: str, value: Any, path: str | Path) -> ConfigurationError:
    """The error for ``key`` found at the top level of a file that has a ``[search]`` table."""
    if key in SearchSettings.model_fields and isinstance(value, Mapping):
        message = (f"{path}: the [{key}] table is outside the [search] table; settings "
                   f"belong in [search]: write it as [search.{key}].")
    elif key in SearchSettings.model_fields:
        message = (f"{path}: the setting {key!r} is at the top level, outside the [search] "
                   "table, where settings belong; move it below the [search] line.")
    elif isinstance(value, Mapping):
        return _unknown_table(key, value, path)
    else:
        message = (f"{path}: unknown key {key!r} at the top level, outside the [search] "
                   f"table; a file with a [search] table holds nothing else."
                   f"{did_you_mean(key, SearchSettings.model_fields)}")
    return ConfigurationError(message, setting=key)


def _unknown_table(key: str, value: Mapping[str, Any], path: str | Path) -> ConfigurationError:
    keys = ", ".join(repr(name) for name in list(value)[:3]) or "no keys"
    message = (f"{path}: unknown table [{key}] (holding {keys}); settings belong in the "
               f"[search] table.{did_you_mean(key, (SEARCH_TABLE, 'prices'))}")
    if key in SWEEP_FILE_TABLES:
        message += f" [{key}] is a table of sweep files: run one with `srh sweep FILE`."
    return ConfigurationError(message, setting=key)


def _configuration_error(error: ValidationError) -> ConfigurationError:
    first = error.errors()[0]
    location = [str(part) for part in first["loc"]]
    if not location:
        return ConfigurationError(str(error).replace("\n", " "))
    setting, got = location[0], first.get("input")
    allowed = allowed_values().get(setting)
    if allowed is None or first["type"] == "value_error":
        reason = first["msg"].removeprefix("Value error, ")
        message = f"The {setting!r} setting is invalid: {reason}. Got {got!r} instead."
    else:
        message = f"The {setting!r} setting must be {allowed}. Got {got!r} instead."
    return ConfigurationError(message, setting=setting)


@lru_cache(maxsize=1)
def allowed_values() -> dict[str, str]:
    """Each setting's allowed values in words ("an int in [1, 1000]"), from the schema."""
    properties = SearchSettings.model_json_schema()["properties"]
    return {name: _describe(schema) for name, schema in properties.items()}


def _describe(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_describe(option) for option in schema["anyOf"])
    if "enum" in schema or "const" in schema:
        return "one of " + ", ".join(repr(v) for v in schema.get("enum", [schema.get("const")]))
    kind = schema.get("type")
    if kind == "array":
        return f"a list of {_describe(schema.get('items', {})).removeprefix('a ')}s"
    words = {"integer": "an int", "number": "a number", "boolean": "a bool",
             "string": "a string", "null": "None"}.get(kind, "a value")
    if "pattern" in schema:
        words += f" matching {schema['pattern']}"
    return words + _range(schema)


def _range(schema: Mapping[str, Any]) -> str:
    low = ("[", schema["minimum"]) if "minimum" in schema else (
        ("(", schema["exclusiveMinimum"]) if "exclusiveMinimum" in schema else None)
    high = ("]", schema["maximum"]) if "maximum" in schema else (
        (")", schema["exclusiveMaximum"]) if "exclusiveMaximum" in schema else None)
    if low and high:
        return f" in {low[0]}{_number(low[1])}, {_number(high[1])}{high[0]}"
    if low:
        return f" {'>=' if low[0] == '[' else '>'} {_number(low[1])}"
    if high:
        return f" {'<=' if high[0] == ']' else '<'} {_number(high[1])}"
    return ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
