"""Range checks for numeric tool arguments, with messages that name the allowed range.

The tool boundary has already coerced the types (see
:func:`srh_core.tools.schema.validate_arguments`); these checks add the
ranges, so a model reads e.g. "The 'n_bins' parameter of statistics_analysis
must be an int in [1, 100]. Got 1000 instead."
"""

from __future__ import annotations

import math

from srh_core.errors import ToolArgumentError


def int_in_range(tool: str, name: str, value: int, low: int, high: int) -> int:
    """Return ``value`` when it is an int in ``[low, high]``.

    Raises:
        ToolArgumentError: Otherwise, naming the parameter and the range.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolArgumentError(f"The {name!r} parameter of {tool} must be an int in "
                                f"[{low}, {high}]. Got {value!r} instead.", parameter=name)
    return value


def float_in_range(tool: str, name: str, value: float, low: float, high: float,
                   *, low_open: bool = False) -> float:
    """Return ``value`` as a float when it is finite and in the range.

    Args:
        tool: Tool name, for the message.
        name: Parameter name.
        value: The value.
        low: Lower bound (inclusive unless ``low_open``).
        high: Upper bound (inclusive).
        low_open: Exclude ``low`` itself.

    Raises:
        ToolArgumentError: The value is not a finite number in the range.
    """
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else math.nan
    above_low = number > low if low_open else number >= low
    if not (math.isfinite(number) and above_low and number <= high):
        bracket = "(" if low_open else "["
        raise ToolArgumentError(f"The {name!r} parameter of {tool} must be a number in "
                                f"{bracket}{low:g}, {high:g}]. Got {value!r} instead.",
                                parameter=name)
    return number
