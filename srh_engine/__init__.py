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

Importing this package imports nothing: each name loads its module on first
use (NumPy with the nodes, SciPy on the first fit or ``sigmoid``, SymPy
never). Modules are named ``evaluation``, ``fitting``, ``rendering`` and
``readability`` so that they are not shadowed by the functions ``evaluate``,
``fit``, ``render`` and ``readable`` exported here: a submodule is set on the
package when it is imported, so a submodule named like an exported function
would replace that function (tests/test_lazy_exports.py checks every lazy package).
"""

from __future__ import annotations

from .lazy import lazy_exports

# name -> the module defining it: imported on first use, so that ``import srh_engine``
# (which every ``srh_engine.<module>`` import runs) costs nothing.
_LAZY = {
    "abs": "builders", "aggr": "builders", "arccos": "builders", "arcsin": "builders",
    "arctan": "builders", "cos": "builders", "cosh": "builders", "cot": "builders",
    "csc": "builders", "delay": "builders", "exp": "builders", "function": "builders",
    "gather": "builders", "grouped_param": "builders", "inv": "builders", "log": "builders",
    "log10": "builders", "param": "builders", "reduction": "builders", "sec": "builders",
    "sech": "builders", "sigmoid": "builders", "sign": "builders", "sin": "builders",
    "sinh": "builders", "sour": "builders", "sqrt": "builders", "tan": "builders",
    "tanh": "builders", "targ": "builders",
    "canonical_key": "canonical",
    "StructuralConstant": "constants", "recognise_constants": "constants",
    "structural_constants": "constants",
    "desugar": "desugaring",
    "EngineError": "errors", "EvaluationError": "errors", "ExpressionError": "errors",
    "FitError": "errors", "ParseError": "errors",
    "evaluate": "evaluation",
    "FitResult": "fitting", "fit": "fitting",
    "FUNCTIONS": "functions",
    "Aggregate": "graph_nodes", "Delay": "graph_nodes", "Gather": "graph_nodes",
    "Index": "graph_nodes", "Indexed": "graph_nodes", "Reduction": "graph_nodes",
    "RelationField": "graph_nodes", "RelationLift": "graph_nodes",
    "Binary": "nodes", "Expression": "nodes", "Function": "nodes", "GroupedParameter": "nodes",
    "Number": "nodes", "Parameter": "nodes", "Symbol": "nodes", "Unary": "nodes",
    "Variable": "nodes",
    "Equation": "parser", "parse": "parser", "parse_equation": "parser",
    "render": "rendering", "to_str": "rendering", "to_tree": "rendering",
    "bind_parameters": "transform", "complexity": "transform", "copy": "transform",
    "count_parameters": "transform", "fold_constants": "transform",
    "parameter_values": "transform", "replace": "transform", "symbols": "transform",
    "unbound_parameters": "transform",
    "DimensionCheck": "dimensional", "check_dimensions": "dimensional",
    "UnitError": "errors",
    "snap_constants": "snapping", "recognise_and_snap": "snapping",
    "DIMENSIONLESS": "units", "Dimension": "units", "parse_units": "units",
    "readable": "readability", "integral_number": "nodes",
}

__all__ = [
    "Aggregate",
    "Binary",
    "DIMENSIONLESS",
    "Delay",
    "Dimension",
    "DimensionCheck",
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
    "UnitError",
    "Variable",
    "abs",
    "aggr",
    "arccos",
    "arcsin",
    "arctan",
    "bind_parameters",
    "canonical_key",
    "check_dimensions",
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
    "integral_number",
    "inv",
    "log",
    "log10",
    "param",
    "parameter_values",
    "parse",
    "parse_equation",
    "parse_units",
    "recognise_and_snap",
    "readable",
    "recognise_constants",
    "snap_constants",
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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
