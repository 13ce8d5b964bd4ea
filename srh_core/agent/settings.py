"""SearchSettings: every setting of a search, validated once, serialisable.

The constructor arguments of :class:`~srh_core.agent.SRAgent` (the
reference's names) land here untouched by the caller; pydantic validates
types and ranges and the model is frozen, so a run's settings cannot drift.
Settings load from TOML (a ``[search]`` table or a flat file) and are written
into the run directory as ``settings.json``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from srh_core.errors import ConfigurationError, did_you_mean

ToolParserName = Literal["openai", "json", "text", "xml"]


class SearchSettings(BaseModel):
    """Validated settings of one R-C-L-K search.

    Attributes:
        llm_provider: Provider name ("offline", "openai", "deepseek", ...).
        llm_model: Model name; None uses the provider's default.
        base_url: Endpoint override for OpenAI-compatible providers.
        tools: Tool names to enable; None enables the default catalogue.
        skills: Skill names the model may read; None enables all.
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
        force_initial_diagnostics: Run the analysis tools before L=1.
        auto_routing: Route hard tasks to the strong model.
        strong_llm_provider: Provider of the strong model.
        strong_llm_model: Strong model; None disables routing to it.
        seed: Seed of the model sampling (the offline proposer's choices).
        time_limit: Wall-clock budget of the whole run in seconds.
        tool_timeout: Per-call limit in seconds (enforced when calls run in
            worker processes).
        rollout_state: For a derivative target d(state)/dt: the state variable;
            candidates then also get ``rollout_rmse`` (trajectory rollout error,
            see ``srh_core.evaluator.dynamics``); None disables it.
        rollout_time: Time variable of the rollout.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    llm_provider: str = "offline"
    llm_model: str | None = None
    base_url: str | None = None
    tools: list[str] | None = None
    skills: list[str] | None = None
    verbose: bool = False
    tool_parser: ToolParserName = "openai"
    save_path: str | None = None
    run_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    local_sample_size: int = Field(default=1, ge=1, le=64)
    max_refinement_depth: int = Field(default=20, ge=1, le=1000)
    global_width: int = Field(default=1, ge=1, le=256)
    max_restart_loop: int = Field(default=1, ge=1, le=256)
    restart_top_k: int = Field(default=1, ge=0, le=100)
    llm_max_tokens: int = Field(default=4096, ge=16, le=1_000_000)
    llm_temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    max_workers: int = Field(default=0, ge=0, le=256)
    validation_fraction: float = Field(default=0.2, ge=0.0, lt=1.0)
    split_by: Literal["random", "ood"] = "random"
    split_ood_variable: str | None = None
    split_random_state: int = 42
    ranking_metric: str = "mse"
    larger_is_better: bool = False
    early_stop: bool = True
    exact_fit_threshold: float = 1.0
    exact_fit_metric: str = "r2"
    force_initial_diagnostics: bool = False
    auto_routing: bool = True
    strong_llm_provider: str | None = None
    strong_llm_model: str | None = None
    seed: int = 0
    time_limit: float | None = Field(default=None, gt=0)
    tool_timeout: float = Field(default=120.0, gt=0)
    rollout_state: str | None = None
    rollout_time: str = "t"

    @field_validator("split_ood_variable")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be None or a non-empty variable name")
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
        """Load a TOML file (a ``[search]`` table, or top-level keys) plus overrides."""
        try:
            document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ConfigurationError(f"Cannot read settings file {path}: {error}") from error
        table = document.get("search", document)
        return cls.build(**{**table, **{k: v for k, v in overrides.items() if v is not None}})

    def replace(self, **changes: Any) -> SearchSettings:
        """A validated copy with ``changes`` applied."""
        return type(self).build(**{**self.model_dump(), **changes})


def _configuration_error(error: ValidationError) -> ConfigurationError:
    first = error.errors()[0]
    setting = ".".join(str(part) for part in first["loc"]) or None
    got = first.get("input")
    message = (f"The {setting!r} setting is invalid: {first['msg']}. Got {got!r} instead."
               if setting else str(error))
    return ConfigurationError(message, setting=setting)
