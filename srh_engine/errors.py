"""Exception hierarchy of the expression engine.

Every error the engine raises on purpose derives from :class:`EngineError`.
The concrete classes also derive from :class:`ValueError`, so callers that
only know the standard library can still catch them.
"""

from __future__ import annotations

__all__ = [
    "EngineError",
    "EvaluationError",
    "ExpressionError",
    "FitError",
    "ParseError",
    "UnitError",
]


class EngineError(Exception):
    """Base class of every error raised by ``srh_engine``."""


class ParseError(EngineError, ValueError):
    """Formula text that the parser does not accept.

    Attributes:
        source: The text that was parsed.
        position: ``(line, column)``, both 1-based, when known.
        construct: Short name of the offending construct, e.g. ``"subscript"``.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        position: tuple[int, int] | None = None,
        construct: str = "",
    ) -> None:
        super().__init__(message)
        self.source = source
        self.position = position
        self.construct = construct


class ExpressionError(EngineError, ValueError):
    """An expression node built with invalid fields.

    Attributes:
        node_type: Name of the node class being built.
        field: The offending field.
    """

    def __init__(self, message: str, *, node_type: str = "", field: str = "") -> None:
        super().__init__(message)
        self.node_type = node_type
        self.field = field


class EvaluationError(EngineError, ValueError):
    """An expression that cannot be evaluated with the values supplied.

    Domain errors (``log(-1)``, ``1/0``) are *not* errors: they give nan/inf.

    Attributes:
        name: The symbol or parameter that could not be resolved, if any.
        reason: Short machine-readable reason, e.g. ``"unknown symbol"``.
    """

    def __init__(self, message: str, *, name: str | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.reason = reason


class FitError(EngineError, ValueError):
    """Invalid fitting request (unknown method, bad target shape, bad options).

    A fit that runs but does not converge is not an error: it returns a
    ``FitResult`` with ``success=False``.

    Attributes:
        field: The argument that was rejected, e.g. ``"method"``.
    """

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class UnitError(EngineError, ValueError):
    """Unit text that is not valid (:func:`srh_engine.units.parse_units`).

    Attributes:
        text: The unit text.
        token: The offending token ("" when the text ends too early).
        position: 0-based index of the token in ``text``.
    """

    def __init__(self, message: str, *, text: str = "", token: str = "",
                 position: int | None = None) -> None:
        super().__init__(message)
        self.text = text
        self.token = token
        self.position = position
