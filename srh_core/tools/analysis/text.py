"""Compact number formatting shared by the analysis tools' text for the model."""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT_DIGITS = 4


def num(value: Any, digits: int = SIGNIFICANT_DIGITS) -> str:
    """Format a number compactly: ``1.235``, ``-2e-09``, ``nan`` for None or non-finite."""
    if value is None or isinstance(value, bool):
        return "nan" if value is None else str(value)
    number = float(value)
    if not math.isfinite(number):
        return "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")
    if number == 0:
        return "0"
    return f"{number:.{digits}g}"


def percent(fraction: Any) -> str:
    """Format a fraction in [0, 1] as a percentage with up to 3 significant digits."""
    return "nan" if fraction is None else f"{num(100 * float(fraction), 3)}%"
