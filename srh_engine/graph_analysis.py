"""Static analysis of indexed trees: free indices, relation domains, scope rules.

Computed once per tree (and cached per evaluation environment): which index
names stay free at every node (the order of first appearance, operand before
relation, as the reference does), which relation's entry axis a value carries
(a ``gather`` result, and arithmetic on it), which bare symbols sit beside such
a value (edge fields aligned with it), and the rules that make a tree
evaluable: nested sums may not rebind an active index, a relation sum sums
only indices its relation binds, a gather reads only its relation's indices,
fields of different relations do not mix, grouped parameters stay out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import EvaluationError
from .graph_nodes import Aggregate, Gather, Indexed, Reduction, RelationLift
from .nodes import Expression, GroupedParameter, Symbol

__all__ = ["NotLoweredError", "StructureInfo", "analyse", "is_structural"]


class NotLoweredError(EvaluationError):
    """An ``aggr``/``sour``/``targ`` node reached evaluation: lower it with ``desugar``."""


def is_structural(expression: Expression) -> bool:
    """Whether the tree uses indices (and so needs ``num_nodes``)."""
    return any(isinstance(node, Indexed | Reduction | Gather)
               for node in expression.iter_preorder())


@dataclass(slots=True)
class StructureInfo:
    """Static facts about one tree, by node id: free indices, relation domain."""

    free: dict[int, tuple[str, ...]] = field(default_factory=dict)
    domain: dict[int, Expression | None] = field(default_factory=dict)
    entry_symbols: set[int] = field(default_factory=set)


def _union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))


def analyse(expression: Expression) -> StructureInfo:
    """Free indices, relation domains and scope checks of a tree.

    Raises:
        EvaluationError: A nested sum rebinds an active index, a relation
            sum reduces an index its relation does not bind, a gather reads an
            index its relation does not bind, fields of different relations
            are combined, or a grouped parameter appears in an indexed tree.
    """
    info = StructureInfo()
    _walk(expression, info, frozenset())
    return info


def _walk(node: Expression, info: StructureInfo, scope: frozenset[str]) -> None:
    if isinstance(node, Aggregate | RelationLift):
        raise NotLoweredError("aggr/sour/targ must be lowered first: call desugar()",
                              reason="not desugared")
    if isinstance(node, GroupedParameter):
        raise EvaluationError("grouped_param cannot be used in an indexed formula",
                              reason="unsupported node")
    if isinstance(node, Reduction):
        _walk_reduction(node, info, scope)
    elif isinstance(node, Gather):
        _walk_gather(node, info, scope)
    elif isinstance(node, Indexed):
        _walk_indexed(node, info, scope)
    else:
        _domain_of_children(node, info, scope)
        info.free[id(node)] = _union(*(info.free[id(c)] for c in node.operands))
    info.domain.setdefault(id(node), None)


def _domain_of_children(node: Expression, info: StructureInfo, scope: frozenset[str]) -> None:
    domains = []
    for child in node.operands:
        _walk(child, info, scope)
        if info.domain.get(id(child)) is not None:
            domains.append(info.domain[id(child)])
    if any(other != domains[0] for other in domains[1:]):
        raise EvaluationError(f"{node} combines entry fields of different relations",
                              reason="relation mismatch")
    info.domain[id(node)] = domains[0] if domains else None
    if domains:  # bare symbols beside a gather are entry fields of its relation
        for child in node.operands:
            _mark_entries(child, info)


def _mark_entries(node: Expression, info: StructureInfo) -> None:
    if isinstance(node, Symbol):
        info.entry_symbols.add(id(node))
    elif not isinstance(node, Indexed | Reduction | Gather):
        for child in node.operands:
            _mark_entries(child, info)


def _walk_reduction(node: Reduction, info: StructureInfo, scope: frozenset[str]) -> None:
    reduced = tuple(index.name for index in node.indices)
    rebound = scope.intersection(reduced)
    if rebound:
        raise EvaluationError(f"nested sum rebinds {sorted(rebound)}, which is still in scope; "
                              "rename the inner index (e.g. k)", reason="index scope")
    inner = scope | frozenset(reduced)
    _walk(node.operand, info, inner)
    bound: tuple[str, ...] = ()
    if node.relation is not None:
        _walk(node.relation, info, scope)
        bound = info.free[id(node.relation)]
        missing = [name for name in reduced if name not in bound]
        if missing:
            raise EvaluationError(f"sum over {missing} in {node}: its relation binds only "
                                  f"{list(bound)}; sum other indices with a separate sum[...]",
                                  reason="index scope")
    info.free[id(node)] = tuple(n for n in _union(info.free[id(node.operand)], bound)
                                if n not in reduced)


def _walk_gather(node: Gather, info: StructureInfo, scope: frozenset[str]) -> None:
    _walk(node.relation, info, scope)
    bound = info.free[id(node.relation)]
    _walk(node.operand, info, scope | frozenset(bound))
    extra = [name for name in info.free[id(node.operand)] if name not in bound]
    if extra:
        raise EvaluationError(f"gather operand uses {extra}, which its relation does not bind",
                              reason="index scope")
    info.free[id(node)] = ()
    info.domain[id(node)] = node.relation


def _walk_indexed(node: Indexed, info: StructureInfo, scope: frozenset[str]) -> None:
    _walk(node.base, info, scope)
    names = tuple(index.name for index in node.indices)
    if not isinstance(node.base, Symbol) and info.domain.get(id(node.base)) is None:
        base_free = info.free[id(node.base)]
        if len(base_free) != 1 or len(names) != 1:
            raise EvaluationError(f"{node}: a computed expression can be re-indexed only when "
                                  "it has one free index (or is a gather's entry field)",
                                  reason="index scope")
    info.free[id(node)] = names
