"""Lower the ``aggr``/``sour``/``targ`` convenience syntax to indexed sums.

Relation tables store ``(target, source)`` rows, so ``aggr(A, f)`` becomes
``sum[j](A[i, j], f')`` where ``i`` (the target) stays free and ``j`` (the
source) is summed; in ``f'`` every data symbol inside ``targ(...)`` is read
at ``i`` and every data symbol inside ``sour(...)`` at ``j``::

    aggr(A, targ(x) * sour(x))      ->  sum[j](A[i, j], x[i] * x[j])
    aggr(A, sour(x**2) - targ(x))   ->  sum[j](A[i, j], x[j]**2 - x[i])
    x[i] + aggr(A, sour(x))         ->  x[i] + sum[j](A[i, j], x[j])

An ``aggr`` gives a node field at the node of its context: at the top level
the formula's node index ``i`` (so it adds node-wise to ``x[i]``), inside
another ``aggr`` that aggregation's target, inside ``sour(...)``/``targ(...)``
that endpoint. The summed source index is always fresh, so nesting never
rebinds an index that is still in scope. A relation written as algebra (``aggr(A1 + A2, ...)``)
has each relation symbol indexed. ``sour``/``targ`` outside an ``aggr`` are
an error. Rendering shows only the lowered form.
"""

from __future__ import annotations

from .errors import ExpressionError
from .graph_nodes import Aggregate, Gather, Index, Indexed, Reduction, RelationLift
from .nodes import Binary, Expression, Number, Parameter, Symbol, Unary, map_postorder

__all__ = ["desugar", "needs_desugar", "split_relation_factor"]


def needs_desugar(expression: Expression) -> bool:
    """Whether the tree holds ``aggr``/``sour``/``targ`` nodes."""
    return any(isinstance(node, Aggregate | RelationLift) for node in expression.iter_preorder())


def desugar(expression: Expression) -> Expression:
    """Compile ``aggr``/``targ``/``sour`` nodes into indexed reductions.

    Args:
        expression: The tree.

    Returns:
        The equivalent tree using :class:`Reduction` and :class:`Indexed` only
        (the input itself when there is nothing to lower).

    Raises:
        ExpressionError: ``sour``/``targ`` outside ``aggr``, a lift naming a
            relation other than its enclosing ``aggr``'s, or a relation that is
            not a symbol or algebra of symbols.
    """
    if not needs_desugar(expression):
        return expression
    bound = {index.name for node in expression.iter_preorder()
             if isinstance(node, Reduction) for index in node.indices}
    used = bound | {index.name for node in expression.iter_preorder()
                    if isinstance(node, Indexed) for index in node.indices}
    node_index = Index("i") if "i" not in bound else _fresh("i", used)
    used.add(node_index.name)
    return _lower(expression, used, None, node_index)


def _lower(node: Expression, used: set[str], scope: _Scope | None, at: Index) -> Expression:
    """Lower ``node``; ``at`` is the node index an ``aggr`` here is read at."""
    if isinstance(node, Aggregate):
        return _lower_aggregate(node, used, at)
    if isinstance(node, RelationLift):
        if scope is None:
            name = "targ" if node.role == "target" else "sour"
            raise ExpressionError(f"{name}(...) must appear inside aggr(...)",
                                  node_type="RelationLift", field="role")
        return scope.lift(node, used)
    children = node.operands
    if not children:
        return node
    return node.with_operands(tuple(_lower(child, used, scope, at) for child in children))


class _Scope:
    """The relation and indices of the innermost ``aggr``."""

    def __init__(self, relation: Expression, target: Index, source: Index) -> None:
        self.relation, self.target, self.source = relation, target, source

    def lift(self, node: RelationLift, used: set[str]) -> Expression:
        if node.relation is not None and node.relation != self.relation:
            raise ExpressionError("targ/sour name a relation other than their enclosing aggr's",
                                  node_type="RelationLift", field="relation")
        index = self.target if node.role == "target" else self.source
        return _read_at(_lower(node.operand, used, self, index), index)


def _read_at(node: Expression, index: Index) -> Expression:
    """Index every bare data symbol of ``node`` (already structural parts stay)."""
    if isinstance(node, Symbol):
        return Indexed(node, (index,))
    if isinstance(node, Indexed | Reduction | Gather) or not node.operands:
        return node
    return node.with_operands(tuple(_read_at(child, index) for child in node.operands))


def _lower_aggregate(node: Aggregate, used: set[str], target: Index) -> Expression:
    source = _fresh("j", used)
    relation = _indexed_relation(node.relation, target, source)
    operand = _lower(node.operand, used, _Scope(node.relation, target, source), target)
    return Reduction((source,), operand, relation)


def _indexed_relation(relation: Expression, target: Index, source: Index) -> Expression:
    for part in relation.iter_preorder():
        if not isinstance(part, Symbol | Number | Parameter | Binary | Unary):
            raise ExpressionError("the relation of aggr(...) must be a relation symbol or "
                                  f"algebra of relation symbols (A1 + 0.5*A2), got {part}",
                                  node_type="Aggregate", field="relation")
    return map_postorder(relation, lambda n: Indexed(n, (target, source))
                         if isinstance(n, Symbol) else n)


def _fresh(preferred: str, used: set[str]) -> Index:
    name, suffix = preferred, 0
    while name in used:
        suffix += 1
        name = f"{preferred}{suffix}"
    used.add(name)
    return Index(name)


def split_relation_factor(product: Expression) -> tuple[Expression, Expression]:
    """``A * f * g`` -> ``(A, f * g)``: the leftmost symbol factor is the relation.

    Used by the one-argument form ``aggr(A * targ(x) * sour(x))``.

    Raises:
        ExpressionError: The product has no symbol factor.
    """
    factors: list[Expression] = []
    pending = [product]
    while pending:
        node = pending.pop()
        if isinstance(node, Binary) and node.operator == "*":
            pending.extend((node.right, node.left))
        else:
            factors.append(node)
    position = next((k for k, f in enumerate(factors) if isinstance(f, Symbol)), None)
    if position is None:
        raise ExpressionError("aggr(...) with one argument needs the relation as a factor, "
                              "e.g. aggr(A * sour(x)); or pass it first: aggr(A, sour(x))",
                              node_type="Aggregate", field="relation")
    relation = factors.pop(position)
    rest: Expression = factors[0] if factors else Number(1)
    for factor in factors[1:]:
        rest = Binary("*", rest, factor)
    return relation, rest
