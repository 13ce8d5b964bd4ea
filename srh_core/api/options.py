"""Per-request sampling options, validated once and frozen.

``api(messages, n=K, **options)`` accepts exactly the fields of
:class:`RequestOptions`; an unknown name is a :class:`ConfigurationError`
with a suggestion, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from srh_core.errors import ConfigurationError, did_you_mean


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """Sampling options of one request; None means "not sent" (provider default).

    Attributes:
        max_tokens: Completion-length limit (``max_tokens``/``max_completion_tokens``/
            ``max_output_tokens`` on the wire).
        temperature: Sampling temperature in [0, 2].
        top_p: Nucleus mass in (0, 1].
        stream: Stream the reply (None: the adapter's default).
        stop: Stop sequences (Chat Completions only).
        seed: Sampling seed, where the provider supports it (Chat Completions only).
        extra_body: Extra provider-specific JSON fields, sent verbatim.
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stream: bool | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] | None = None

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> RequestOptions:
        """Validate keyword options into a frozen instance.

        Raises:
            ConfigurationError: On an unknown option or a value out of range.
        """
        known = {f.name for f in fields(cls)}
        for name in options:
            if name not in known:
                raise ConfigurationError(
                    f"Unknown model request option {name!r}.{did_you_mean(name, known)} "
                    f"Known options: {', '.join(sorted(known))}.", setting=name)
        values = dict(options)
        if isinstance(values.get("stop"), str):
            values["stop"] = (values["stop"],)
        elif values.get("stop") is not None:
            values["stop"] = tuple(values["stop"])
        resolved = cls(**values)
        resolved.validate()
        return resolved

    def validate(self) -> None:
        """Check every set option against its allowed range."""
        _check_number("max_tokens", self.max_tokens, 1, math.inf, integer=True)
        _check_number("temperature", self.temperature, 0.0, 2.0)
        _check_number("top_p", self.top_p, 0.0, 1.0, low_open=True)
        _check_number("seed", self.seed, -math.inf, math.inf, integer=True)
        if self.stream is not None and not isinstance(self.stream, bool):
            raise _invalid("stream", "a bool", self.stream)
        if self.stop is not None and not all(isinstance(s, str) for s in self.stop):
            raise _invalid("stop", "a string or a list of strings", self.stop)
        if self.extra_body is not None and not isinstance(self.extra_body, Mapping):
            raise _invalid("extra_body", "a mapping", self.extra_body)

    def over(self, defaults: RequestOptions) -> RequestOptions:
        """These options, with unset fields taken from ``defaults``."""
        unset = {f.name: getattr(defaults, f.name) for f in fields(self)
                 if getattr(self, f.name) is None}
        return replace(self, **unset)


def _check_number(name: str, value: Any, low: float, high: float, *, integer: bool = False,
                  low_open: bool = False) -> None:
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _invalid(name, "an int" if integer else "a number", value)
    too_low = value <= low if low_open else value < low
    if too_low or value > high or (not integer and not math.isfinite(value)):
        bracket = "(" if low_open else "["
        span = f"{bracket}{low:g}, {high:g}]" if high != math.inf else f">= {low:g}"
        raise _invalid(name, f"{'an int' if integer else 'a number'} in {span}", value)


def _invalid(name: str, expected: str, value: Any) -> ConfigurationError:
    return ConfigurationError(
        f"The {name!r} option of a model request must be {expected}. Got {value!r} instead.",
        setting=name)
