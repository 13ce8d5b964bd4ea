"""The operator set of a run, in PySR's names: which operations a formula may use.

``binary_operators`` / ``unary_operators`` (settings, estimator parameters,
``srh run --binary-operators/--unary-operators``) take PySR's spellings. They
restrict a run three ways: the native search (``expression_search``) searches
only with them (:func:`search_operators`), the prompt names them (the offline
proposer reads that line), and a formula that needs another operation is
scored but is not a candidate (:func:`missing_operators`). ``maxsize`` bounds
the complexity (engine nodes) of a candidate the same way. Numbers are free.

What each engine operation needs (any one of the listed operators):
``a + b`` ``+`` or ``-``; ``a - b`` ``-`` or ``+``; ``a*b`` ``*``; ``a/b``
``/`` or ``inv``; ``-a`` ``neg``, ``-`` or ``*``; ``a**2`` ``square``, ``^`` or
``*``; ``a**3`` ``cube``, ``^`` or ``*``; ``a**0.5`` ``sqrt`` or ``^``;
``a**-1`` ``inv``, ``/`` or ``^``; any other power ``^``; ``f(a)`` ``f`` (``sqrt``
also ``^``; ``inv`` also ``/``).

PySR's ``nested_constraints`` (``{"sin": {"sin": 0, "cos": 0}}``: inside a
``sin``, at most 0 ``sin`` and 0 ``cos`` along any path) and ``constraints``
(``{"^": (-1, 1)}``: a power's base any size, its exponent at most 1 node;
``{"sin": 5}``: a ``sin``'s argument at most 5 nodes) are checked the same way
on a formula's engine tree (:func:`srh_engine.constraints.constraint_violations`):
a formula that breaks one is scored but is not a candidate, the native search's
evolution discards such trees and its front keeps none. An engine node counts as
every PySR operator that can write it (``x**2`` is ``^`` and ``square``; ``-x`` is
``neg``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import srh_engine as engine
from srh_core.errors import ConfigurationError, did_you_mean
from srh_engine.constraints import constraint_violations
from srh_engine.search import DEFAULT_OPERATORS

__all__ = ["BINARY_OPERATORS", "UNARY_OPERATORS", "check_constraints",
           "check_nested_constraints", "check_operators", "constraint_limits",
           "constraint_violations",
           "missing_operators", "operator_limits", "search_operators"]

BINARY_OPERATORS = ("+", "-", "*", "/", "^")
"""PySR's binary operators the harness knows (``^`` is a power)."""
UNARY_OPERATORS = ("sqrt", "square", "cube", "exp", "log", "sin", "cos", "tanh", "abs", "inv",
                   "neg")
"""PySR's unary operators the harness knows (the native search's set)."""
ALIASES = {"pow": "^", "**": "^", "plus": "+", "sub": "-", "mult": "*", "div": "/",
           "ln": "log"}
"""Other spellings PySR or users write, read as the name they stand for."""
POWER_OPERATORS = ("square", "cube", "sqrt")
"""What ``^`` gives the native search (it has no free exponent)."""


def check_operators(kind: str, names: Iterable[Any] | None) -> list[str] | None:
    """``names`` in canonical spelling, deduplicated; None stays None (no restriction).

    Args:
        kind: ``"binary"`` or ``"unary"``.
        names: Operator names.

    Raises:
        ValueError: A name is not an operator of that kind (with "did you mean"), or the
            binary list has none of + - * /.
    """
    if names is None:
        return None
    known = BINARY_OPERATORS if kind == "binary" else UNARY_OPERATORS
    checked: list[str] = []
    for name in names:
        canonical = ALIASES.get(name, name) if isinstance(name, str) else name
        if canonical not in known:
            other = UNARY_OPERATORS if kind == "binary" else BINARY_OPERATORS
            suggestion = did_you_mean(str(name), known).strip()
            hint = f" ({name!r} is a {'unary' if kind == 'binary' else 'binary'} operator)" \
                if canonical in other else f" ({suggestion[:1].lower()}{suggestion[1:]})" \
                if suggestion else ""
            raise ValueError(f"unknown {kind} operator {name!r}{hint}; the {kind} operators "
                             f"are {', '.join(known)}")
        checked.append(canonical)
    if kind == "binary" and not any(name in ("+", "-", "*", "/") for name in checked):
        raise ValueError("the binary operators need one of +, -, * or /")
    return list(dict.fromkeys(checked))


def operator_limits(args: Any) -> tuple[list[str] | None, list[str] | None, int | None]:
    """``(binary, unary, maxsize)`` of a run's settings (a settings object or a mapping)."""
    return _read(args, "binary_operators"), _read(args, "unary_operators"), _read(args, "maxsize")


def constraint_limits(args: Any) -> tuple[dict[str, dict[str, int]] | None,
                                          dict[str, Any] | None]:
    """``(nested_constraints, constraints)`` of a run's settings."""
    return _read(args, "nested_constraints"), _read(args, "constraints")


def _read(args: Any, name: str) -> Any:
    return args.get(name) if isinstance(args, dict) else getattr(args, name, None)


def search_operators(binary: Sequence[str] | None, unary: Sequence[str] | None
                     ) -> list[str] | None:
    """The native search's operator names for a run's set (None: the search's default).

    Raises:
        ConfigurationError: The set leaves the search no binary operator among + - * /.
    """
    if binary is None and unary is None:
        return None

    binary = list(binary if binary is not None else BINARY_OPERATORS)
    unary = list(unary) if unary is not None else [
        o for o in DEFAULT_OPERATORS if o in UNARY_OPERATORS]
    names = [o for o in binary if o != "^"] + unary
    if "^" in binary:
        names += POWER_OPERATORS
    if not any(o in names for o in ("+", "-", "*", "/")):
        raise ConfigurationError("The native search needs one of the binary operators "
                                 f"+ - * /; the run allows {binary}.", setting="binary_operators")
    return list(dict.fromkeys(names))


def missing_operators(expression: engine.Expression, binary: Sequence[str] | None,
                      unary: Sequence[str] | None) -> list[str]:
    """The operations of ``expression`` that the run's operators cannot write, in text."""
    if binary is None and unary is None:
        return []
    allowed = set(binary if binary is not None else BINARY_OPERATORS) | set(
        unary if unary is not None else UNARY_OPERATORS)
    missing: dict[str, None] = {}
    for node in expression.iter_preorder():
        label, options = _needs(node)
        if options and not allowed.intersection(options):
            missing[label] = None
    return list(missing)


def _needs(node: engine.Expression) -> tuple[str, tuple[str, ...]]:
    if isinstance(node, engine.Binary):
        if node.operator != "**":
            return node.operator, {"+": ("+", "-"), "-": ("-", "+"), "*": ("*",),
                                   "/": ("/", "inv")}[node.operator]
        exponent = node.right.value if isinstance(node.right, engine.Number) else None
        return _power_needs(exponent)
    if isinstance(node, engine.Unary):
        return "negation", ("neg", "-", "*")
    if isinstance(node, engine.Function):
        extra = {"sqrt": ("^",), "inv": ("/",)}.get(node.name, ())
        return node.name, (node.name, *extra)
    return "", ()


def _power_needs(exponent: float | None) -> tuple[str, tuple[str, ...]]:
    if exponent == 2:
        return "**2", ("square", "^", "*")
    if exponent == 3:
        return "**3", ("cube", "^", "*")
    if exponent == 0.5:
        return "**0.5", ("sqrt", "^")
    if exponent == -1:
        return "**-1", ("inv", "/", "^")
    return "**", ("^",)


def _canonical(name: Any, where: str) -> str:
    """PySR's spelling of an operator named in a constraint.

    Raises:
        ValueError: Not an operator (with "did you mean").
    """
    known = (*BINARY_OPERATORS, *UNARY_OPERATORS)
    canonical = ALIASES.get(name, name) if isinstance(name, str) else name
    if canonical not in known:
        hint = did_you_mean(str(name), known).strip()
        raise ValueError(f"{where}: unknown operator {name!r}"
                         f"{f' ({hint[:1].lower()}{hint[1:]})' if hint else ''}; the "
                         f"operators are {', '.join(known)}")
    return str(canonical)


def check_nested_constraints(value: Any) -> dict[str, dict[str, int]] | None:
    """PySR's ``nested_constraints`` in canonical names: ``{outer: {inner: max count}}``.

    Raises:
        ValueError: Not a mapping of mappings to ints >= 0, or an unknown operator.
    """
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError('nested_constraints must map operators to {operator: count} '
                         f'(e.g. {{"sin": {{"sin": 0}}}}); got {value!r:.80}')
    checked: dict[str, dict[str, int]] = {}
    for outer, inner in value.items():
        name = _canonical(outer, "nested_constraints")
        for nested, count in inner.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < -1:
                raise ValueError(f"nested_constraints[{outer!r}][{nested!r}] must be an int "
                                 f">= 0 (-1: no limit); got {count!r}")
            checked.setdefault(name, {})[_canonical(nested, "nested_constraints")] = count
    return checked


def check_constraints(value: Any) -> dict[str, int | list[int]] | None:
    """PySR's size ``constraints`` in canonical names: a unary operator's largest argument
    (an int) or a binary operator's largest left and right arguments (two ints); -1 is no
    limit.

    Raises:
        ValueError: A bad size, a unary operator given two, or an unknown operator.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError('constraints must map operators to sizes (e.g. {"^": [-1, 1], '
                         f'"sin": 5}}); got {value!r:.80}')
    checked: dict[str, int | list[int]] = {}
    for raw, limit in value.items():
        name = _canonical(raw, "constraints")
        binary = name in BINARY_OPERATORS
        sizes = list(limit) if isinstance(limit, list | tuple) else [limit]
        if len(sizes) != (2 if binary else 1) or any(
                isinstance(n, bool) or not isinstance(n, int) or n < -1 for n in sizes):
            shape = "two ints (left, right)" if binary else "one int"
            raise ValueError(f"constraints[{raw!r}] must be {shape} (a size >= 1, or -1: no "
                             f"limit); got {limit!r}")
        checked[name] = sizes if binary else sizes[0]
    return checked
