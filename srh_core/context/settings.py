"""The runtime settings an :class:`AgentContext` reads, resolved and checked once.

The context never mutates the ``args`` object it is given (it may be shared by
agents, tools and workers); it reads these attributes with ``getattr`` and the
defaults below, and :func:`resolve_context_settings` validates them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from srh_core.errors import ConfigurationError, did_you_mean

SplitBy = Literal["random", "ood"]

DEFAULT_VALIDATION_FRACTION = 0.0
DEFAULT_SPLIT_BY: SplitBy = "random"
DEFAULT_SPLIT_RANDOM_STATE = 42
MAX_MIN_ROWS = 1_000_000


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """Validated settings that decide how a context is split and fitted.

    Attributes:
        validation_fraction: Share of samples held out for validation, in [0, 1);
            0 disables the validation split.
        split_by: "random" (seeded permutation) or "ood" (train on the low
            values of ``split_ood_variable``, validate on the high tail).
        split_ood_variable: Variable ordering the OOD split; required for "ood".
        split_random_state: Seed of the split (and of OOD tie breaking).
        fit_constants: Whether numeric constants of a formula become fitted
            parameters (passed to the engine's ``fit``).
        fit_method: Optimiser name passed to the engine's ``fit``.
        min_train_rows: When set (a search's settings set it), committing data
            with a target refuses fewer training rows than this, and a validation
            split that would hold out no row; None accepts any length.
        weights: The data column of per-row weights (weighted fits and metrics; not a
            feature), or None.
    """

    validation_fraction: float = DEFAULT_VALIDATION_FRACTION
    split_by: SplitBy = DEFAULT_SPLIT_BY
    split_ood_variable: str | None = None
    split_random_state: int = DEFAULT_SPLIT_RANDOM_STATE
    fit_constants: bool = False
    fit_method: str = "auto"
    min_train_rows: int | None = None
    weights: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict."""
        return asdict(self)


def resolve_context_settings(args: Any) -> ContextSettings:
    """Read and validate the context settings carried by ``args``.

    Args:
        args: A Namespace, settings object or mapping; missing attributes take
            their defaults.

    Returns:
        The validated, frozen settings.

    Raises:
        ConfigurationError: A setting has the wrong type or is out of range; the
            error's ``setting`` names it.
    """
    read = _reader(args)
    return ContextSettings(
        validation_fraction=_fraction(read("validation_fraction", DEFAULT_VALIDATION_FRACTION)),
        split_by=_split_by(read("split_by", DEFAULT_SPLIT_BY)),
        split_ood_variable=_optional_name(read("split_ood_variable", None)),
        split_random_state=_seed(read("split_random_state", DEFAULT_SPLIT_RANDOM_STATE)),
        fit_constants=_flag("fit_constants", read("fit_constants", False)),
        fit_method=_fit_method(read("fit_method", "auto")),
        min_train_rows=_min_rows(read("min_train_rows", None)),
        weights=_weights_column(read("weights", None)),
    )


def _reader(args: Any) -> Any:
    if isinstance(args, dict):
        return lambda name, default: args.get(name, default)
    return lambda name, default: getattr(args, name, default)


def _weights_column(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.isidentifier():
        raise ConfigurationError(f"The 'weights' setting must be the name of a data column or "
                                 f"None. Got {value!r} instead.", setting="weights")
    return value


def _min_rows(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MIN_ROWS:
        raise ConfigurationError(
            f"The 'min_train_rows' setting must be an int in [1, {MAX_MIN_ROWS}] or None. "
            f"Got {value!r} instead.", setting="min_train_rows")
    return value


def _fraction(value: Any) -> float:
    number = None if isinstance(value, bool) or isinstance(value, str) else _as_float(value)
    if number is None or not (0.0 <= number < 1.0):
        raise ConfigurationError(
            "The 'validation_fraction' setting must be a float in [0, 1) "
            f"(0 disables validation). Got {value!r} instead.",
            setting="validation_fraction",
        )
    return number


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _split_by(value: Any) -> SplitBy:
    choices = get_args(SplitBy)
    if value not in choices:
        hint = did_you_mean(str(value), choices)
        raise ConfigurationError(
            f"The 'split_by' setting must be one of {list(choices)}. Got {value!r} instead.{hint}",
            setting="split_by",
        )
    return value


def _optional_name(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigurationError(
            f"The 'split_ood_variable' setting must be a variable name. Got {value!r} instead.",
            setting="split_ood_variable",
        )
    return value


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise ConfigurationError(
            f"The 'split_random_state' setting must be an int in [0, 2**32). "
            f"Got {value!r} instead.",
            setting="split_random_state",
        )
    return int(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"The {name!r} setting must be a bool. Got {value!r} instead.", setting=name
        )
    return value


def _fit_method(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigurationError(
            f"The 'fit_method' setting must be a non-empty string. Got {value!r} instead.",
            setting="fit_method",
        )
    return value
