"""srh_engine: symbolic expressions for symbolic regression.

Parse formula text safely (``ast``-based, nothing is ever executed),
evaluate with NumPy, fit parameters with SciPy, render text and LaTeX, and
key formulas canonically for deduplication.

>>> from srh_engine import parse
>>> expression = parse("a*x^2 + 1", symbols={"a": 2.0})
>>> expression.evaluate({"x": 3.0})
19.0

Decisions (the details live in the module docstrings):

* ``pi`` and ``e`` parse to :class:`Number` nodes holding ``math.pi`` and
  ``math.e`` and render back as ``pi`` / ``e``. To use a data column named
  ``e`` or ``pi``, pass ``symbols={"e": Symbol("e")}`` to :func:`parse`
  (such a tree then only round-trips through text with the same mapping).
* Unary minus is the node ``Unary("-", operand)``; the negation of a number
  is a number (``-2`` is ``Number(-2)``); unary plus is dropped.
* :func:`complexity` counts every node of the tree: ``x + 1`` is 3, ``-x``
  is 2, ``-2`` is 1, ``sin(2*x)`` is 4.
* Parameters render as ``param("a")`` / ``param("a", 1.5)``, which
  :func:`parse` reads back to the same node (``to_str(...,
  parameter_style="name" | "value")`` for display).
* ``fit(..., fit_constants=True)`` also fits every number except
  integer-valued exponents, integers with ``|v| <= 2`` and ``pi``/``e``.
* Domain errors (``log(-1)``, ``1/0``, overflow) evaluate to nan/inf
  silently; unknown symbols and unbound parameters raise typed errors.
* Graphs and hypergraphs use explicit indices: ``x[i]`` (node field),
  ``A[i, j]`` (a relation table, rows ``(target, source)``),
  ``sum[j](A[i, j], f)``, ``gather(A[i, j], f)``, and the ``aggr``/``sour``/``targ``
  sugar (lowered by :func:`desugar`); they need ``num_nodes=``. ``delay(x, tau)``
  reads ``x`` at ``t - tau`` (``time=``, ``delay_resolver=``). See
  :mod:`srh_engine.graph_nodes` and :mod:`srh_engine.graph_evaluation`.

Importing this package imports NumPy only: SciPy is imported on the first
fit (or ``sigmoid``), SymPy never. Modules are named ``evaluation``,
``fitting`` and ``rendering`` so that they are not shadowed by the
functions ``evaluate``, ``fit`` and ``render`` exported here.
"""

from __future__ import annotations

from .builders import (
    abs,
    aggr,
    arccos,
    arcsin,
    arctan,
    cos,
    cosh,
    cot,
    csc,
    delay,
    exp,
    function,
    gather,
    grouped_param,
    inv,
    log,
    log10,
    param,
    reduction,
    sec,
    sech,
    sigmoid,
    sign,
    sin,
    sinh,
    sour,
    sqrt,
    tan,
    tanh,
    targ,
)
from .canonical import canonical_key
from .constants import StructuralConstant, recognise_constants, structural_constants
from .desugaring import desugar
from .errors import EngineError, EvaluationError, ExpressionError, FitError, ParseError
from .evaluation import evaluate
from .fitting import FitResult, fit
from .functions import FUNCTIONS
from .graph_nodes import (
    Aggregate,
    Delay,
    Gather,
    Index,
    Indexed,
    Reduction,
    RelationField,
    RelationLift,
)
from .nodes import (
    Binary,
    Expression,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    Unary,
    Variable,
)
from .parser import Equation, parse, parse_equation
from .readable import readable
from .rendering import render, to_str, to_tree
from .transform import (
    bind_parameters,
    complexity,
    copy,
    count_parameters,
    fold_constants,
    parameter_values,
    replace,
    symbols,
    unbound_parameters,
)

__all__ = [
    "Aggregate",
    "Binary",
    "Delay",
    "EngineError",
    "Equation",
    "EvaluationError",
    "Expression",
    "ExpressionError",
    "FUNCTIONS",
    "FitError",
    "FitResult",
    "Function",
    "Gather",
    "GroupedParameter",
    "Index",
    "Indexed",
    "Number",
    "Parameter",
    "ParseError",
    "Reduction",
    "RelationField",
    "RelationLift",
    "StructuralConstant",
    "Symbol",
    "Unary",
    "Variable",
    "abs",
    "aggr",
    "arccos",
    "arcsin",
    "arctan",
    "bind_parameters",
    "canonical_key",
    "complexity",
    "copy",
    "cos",
    "cosh",
    "cot",
    "count_parameters",
    "csc",
    "delay",
    "desugar",
    "evaluate",
    "exp",
    "fit",
    "fold_constants",
    "function",
    "gather",
    "grouped_param",
    "inv",
    "log",
    "log10",
    "param",
    "parameter_values",
    "parse",
    "parse_equation",
    "readable",
    "recognise_constants",
    "reduction",
    "render",
    "replace",
    "sec",
    "sech",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sour",
    "sqrt",
    "structural_constants",
    "symbols",
    "tan",
    "tanh",
    "targ",
    "to_str",
    "to_tree",
    "unbound_parameters",
]
