"""Physical dimensions: an exact algebra over the SI base dimensions, and unit text.

A :class:`Dimension` is a vector of rational exponents over the seven SI base
dimensions (mass ``kg``, length ``m``, time ``s``, current ``A``, temperature
``K``, amount ``mol``, luminous intensity ``cd``). Only dimensions are kept,
never scale: ``km`` and ``m`` are both a length, ``eV`` and ``J`` both an energy.

:func:`parse_units` reads unit text, by a small recursive-descent parser (no
``eval``):

* products ``kg*m``, ``kg m`` or ``kg·m``; quotients ``m/s``; parentheses;
* powers ``^`` or ``**`` with an integer or rational exponent: ``s^-1``,
  ``s^(-2)``, ``m^(1/2)``, ``m**2``;
* ``1`` for dimensionless (``1/s``);
* the SI base units, the derived ones (N J W Pa C V F Ohm/ohm/Ω S T Wb H Hz),
  ``g``, ``eV``, ``min``, ``h``, ``rad``/``sr`` (dimensionless), and a decimal
  prefix on any of them (``km``, ``mV``, ``us``/``µs``, ``GHz``).

Bad text raises :class:`~srh_engine.errors.UnitError` naming the bad token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from .errors import UnitError

__all__ = ["BASE_DIMENSIONS", "DIMENSIONLESS", "Dimension", "UNITS", "parse_units"]

BASE_DIMENSIONS: tuple[str, ...] = ("kg", "m", "s", "A", "K", "mol", "cd")
"""The SI base units, in the order of :attr:`Dimension.exponents`."""

MAX_UNIT_TEXT = 200
"""Longest unit text accepted."""
MAX_EXPONENT = 64
"""Largest |numerator| or denominator of an exponent."""
MAX_NESTING = 16


@dataclass(frozen=True, slots=True, repr=False)
class Dimension:
    """A product of SI base dimensions with rational exponents.

    Attributes:
        exponents: One exponent per entry of :data:`BASE_DIMENSIONS`.
    """

    exponents: tuple[Fraction, ...] = (Fraction(0),) * len(BASE_DIMENSIONS)

    def __post_init__(self) -> None:
        exponents = tuple(Fraction(e) for e in self.exponents)
        if len(exponents) != len(BASE_DIMENSIONS):
            raise ValueError(f"a Dimension has {len(BASE_DIMENSIONS)} exponents "
                             f"({', '.join(BASE_DIMENSIONS)}); got {len(exponents)}")
        object.__setattr__(self, "exponents", exponents)

    @classmethod
    def of(cls, **powers: int | Fraction) -> Dimension:
        """``Dimension.of(kg=1, m=2, s=-2)``: an energy."""
        unknown = set(powers) - set(BASE_DIMENSIONS)
        if unknown:
            raise ValueError(f"unknown base dimension(s) {sorted(unknown)}; "
                             f"expected some of {list(BASE_DIMENSIONS)}")
        return cls(tuple(Fraction(powers.get(name, 0)) for name in BASE_DIMENSIONS))

    @property
    def dimensionless(self) -> bool:
        return not any(self.exponents)

    def __mul__(self, other: Dimension) -> Dimension:
        return Dimension(tuple(a + b for a, b in zip(self.exponents, other.exponents, strict=True)))

    def __truediv__(self, other: Dimension) -> Dimension:
        return Dimension(tuple(a - b for a, b in zip(self.exponents, other.exponents, strict=True)))

    def __pow__(self, power: int | Fraction) -> Dimension:
        power = Fraction(power)
        return Dimension(tuple(e * power for e in self.exponents))

    def __repr__(self) -> str:
        return f"Dimension({str(self)!r})"

    def __str__(self) -> str:
        """Canonical text that :func:`parse_units` reads back: ``kg*m^2*s^-2``, ``1``."""
        parts = []
        for name, exponent in zip(BASE_DIMENSIONS, self.exponents, strict=True):
            if exponent == 1:
                parts.append(name)
            elif exponent.denominator == 1 and exponent:
                parts.append(f"{name}^{exponent.numerator}")
            elif exponent:
                parts.append(f"{name}^({exponent})")
        return "*".join(parts) or "1"


DIMENSIONLESS = Dimension()


def _d(**powers: int) -> Dimension:
    return Dimension.of(**powers)


UNITS: dict[str, Dimension] = {
    "kg": _d(kg=1), "g": _d(kg=1), "m": _d(m=1), "s": _d(s=1), "A": _d(A=1), "K": _d(K=1),
    "mol": _d(mol=1), "cd": _d(cd=1),
    "N": _d(kg=1, m=1, s=-2), "J": _d(kg=1, m=2, s=-2), "W": _d(kg=1, m=2, s=-3),
    "Pa": _d(kg=1, m=-1, s=-2), "C": _d(A=1, s=1), "V": _d(kg=1, m=2, s=-3, A=-1),
    "F": _d(kg=-1, m=-2, s=4, A=2), "Ohm": _d(kg=1, m=2, s=-3, A=-2),
    "S": _d(kg=-1, m=-2, s=3, A=2), "T": _d(kg=1, s=-2, A=-1), "Wb": _d(kg=1, m=2, s=-2, A=-1),
    "H": _d(kg=1, m=2, s=-2, A=-2), "Hz": _d(s=-1), "eV": _d(kg=1, m=2, s=-2),
    "min": _d(s=1), "h": _d(s=1), "rad": DIMENSIONLESS, "sr": DIMENSIONLESS,
}
"""Unit name -> dimension (prefixed forms are derived: ``km`` is a length)."""
UNITS["ohm"] = UNITS["Ω"] = UNITS["Ohm"]

PREFIXES = ("Y", "Z", "E", "P", "T", "G", "M", "k", "h", "da", "d", "c", "m", "u", "µ", "n",
            "p", "f", "a", "z", "y")

_TOKEN = re.compile(r"\s*(?:(?P<number>\d+)|(?P<name>[A-Za-zΩµ_]+)|(?P<op>\*\*|[*/^()·+-]))")


def _unit(name: str, symbols: Mapping[str, Dimension]) -> Dimension | None:
    if name in symbols:
        return symbols[name]
    for prefix in PREFIXES:
        rest = name[len(prefix):]
        if name.startswith(prefix) and rest in symbols and rest != "kg":
            return symbols[rest]
    return None


class _Parser:
    """Recursive descent over the tokens of one unit text (grammar in the module doc)."""

    def __init__(self, text: str, symbols: Mapping[str, Dimension]) -> None:
        self.text, self.symbols = text, symbols
        self.tokens: list[tuple[str, str, int]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                if text[position:].strip() == "":
                    break
                bad = text[position:].strip()[:1]
                raise self.error(f"unexpected character {bad!r}", bad, position)
            kind = match.lastgroup or "op"
            self.tokens.append((kind, match.group(kind), match.start(kind)))
            position = match.end()
        self.index = 0

    def error(self, what: str, token: str, position: int) -> UnitError:
        return UnitError(f"bad units {self.text!r}: {what} at position {position + 1}",
                         text=self.text, token=token, position=position)

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            raise self.error("the text ends too early", "", len(self.text))
        self.index += 1
        return token

    def expect(self, value: str) -> None:
        kind, text, position = self.take()
        if text != value:
            raise self.error(f"expected {value!r}, found {text!r}", text, position)

    def parse(self) -> Dimension:
        if not self.tokens:
            raise self.error("no unit given (use '1' for dimensionless)", "", 0)
        result = self.product(0)
        token = self.peek()
        if token is not None:
            raise self.error(f"unexpected {token[1]!r}", token[1], token[2])
        return result

    def product(self, depth: int) -> Dimension:
        result = self.power(depth)
        while (token := self.peek()) is not None:
            if token[1] in ("*", "·", "/"):
                self.take()
                factor = self.power(depth)
                result = result / factor if token[1] == "/" else result * factor
            elif token[0] == "name" or token[1] == "(":  # juxtaposition: "N m"
                result = result * self.power(depth)
            else:
                break
        return result

    def power(self, depth: int) -> Dimension:
        base = self.atom(depth)
        token = self.peek()
        if token is not None and token[1] in ("^", "**"):
            self.take()
            return base ** self.exponent()
        return base

    def atom(self, depth: int) -> Dimension:
        kind, text, position = self.take()
        if text == "(":
            if depth >= MAX_NESTING:
                raise self.error("parentheses nest too deep", text, position)
            inner = self.product(depth + 1)
            self.expect(")")
            return inner
        if kind == "number":
            if text != "1":
                raise self.error(f"the number {text!r} is not a unit (only '1', dimensionless)",
                                 text, position)
            return DIMENSIONLESS
        if kind == "name":
            found = _unit(text, self.symbols)
            if found is None:
                raise self.error(f"unknown unit {text!r}", text, position)
            return found
        raise self.error(f"expected a unit, found {text!r}", text, position)

    def exponent(self) -> Fraction:
        kind, text, position = self.take()
        if text == "(":
            value = self.signed_rational()
            self.expect(")")
            return value
        self.index -= 1
        return self.signed_integer()

    def signed_integer(self) -> Fraction:
        sign = 1
        kind, text, position = self.take()
        if text in ("-", "+"):
            sign = -1 if text == "-" else 1
            kind, text, position = self.take()
        if kind != "number":
            raise self.error(f"expected an exponent, found {text!r}", text, position)
        if int(text) > MAX_EXPONENT:
            raise self.error(f"exponent {text} is larger than {MAX_EXPONENT}", text, position)
        return Fraction(sign * int(text))

    def signed_rational(self) -> Fraction:
        value = self.signed_integer()
        token = self.peek()
        if token is not None and token[1] == "/":
            self.take()
            kind, text, position = self.take()
            if kind != "number" or int(text) == 0 or int(text) > MAX_EXPONENT:
                raise self.error(f"expected a denominator in 1..{MAX_EXPONENT}, found {text!r}",
                                 text, position)
            value /= int(text)
        return value


def parse_units(text: str | Dimension, symbols: Mapping[str, str] | None = None) -> Dimension:
    """The dimension of unit text such as ``"kg*m^2/s^2"`` or ``"m^1 * s^(-1)"``.

    Args:
        text: Unit text (grammar in the module docstring), or a Dimension (returned as is).
        symbols: Unit names to read differently, each mapped to unit text: a suite written
            in AI Feynman's convention, where ``T`` is a temperature, passes ``{"T": "K"}``.

    Returns:
        The dimension.

    Raises:
        UnitError: Text that is not valid unit text; the message names the bad token.
    """
    if isinstance(text, Dimension):
        return text
    if not isinstance(text, str):
        raise UnitError(f"units must be text such as 'm/s', got {type(text).__name__}",
                        text=repr(text))
    if len(text) > MAX_UNIT_TEXT:
        raise UnitError(f"units text is longer than {MAX_UNIT_TEXT} characters", text=text[:40])
    table: Mapping[str, Dimension] = UNITS
    if symbols:
        table = {**UNITS, **{name: _Parser(value, UNITS).parse()
                             for name, value in symbols.items()}}
    return _Parser(text, table).parse()
