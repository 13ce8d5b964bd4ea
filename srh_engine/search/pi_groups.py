"""Buckingham pi: a problem with units reduced to dimensionless groups.

With the dimension of every input and of the target known, a physical law
``y = f(x_1..x_n)`` can be written ``y = M(x) * g(pi_1..pi_k)``: ``M`` a
monomial ``prod x_i**p_i`` with the target's dimension, each ``pi_j`` a
dimensionless monomial of the inputs, ``k = n - rank(D)`` for the dimension
matrix ``D`` (one column per input, one row per base dimension). The search
then looks for ``g`` on fewer inputs, and the answer is mapped back by the
``power`` wrap of :mod:`.explore` (the monomial, its exponents held exact);
:func:`merged_powers` then merges each product of powers of the inputs into one
monomial (``r**3*(c/(L/r))`` is ``c*r**4/L``).

The basis of the groups (an integer basis of the null space of ``D``) is the
simplest one found among small integer vectors: fewest inputs, then the
smallest exponents, so groups of like quantities come out as their ratios
(``x2/x1``); the exact rational null space fills in what the small vectors do
not span. The monomial is a particular solution of ``D p = dim(y)`` (on the
inputs the groups are referred to) plus a small integer combination of the
groups: the simplest (whole exponents, then the smallest sum of their
magnitudes); among equally simple ones the particular solution itself, unless
another leaves decisively less spread in ``log|y/M|``, the variation the
reduced problem must still explain (``q1*q2/(eps*r**2)`` rather than
``q1**2/(eps*r**2)`` for a Coulomb force, ``m*c**2`` rather than ``m*v**2``
for a relativistic energy). A ratio of two inputs above 1 on every row is turned
over (``v/c``: one bounds the other). :func:`reduce_beside_factors` reduces what
the inputs' power factors leave, over the other inputs only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dimensional import MAX_EXPONENT_DENOMINATOR
from ..nodes import Binary, Expression, Function, Number, Symbol
from ..rendering import to_str
from ..transform import map_postorder
from ..units import Dimension

__all__ = ["Reduction", "common_monomial_out", "merged_powers", "monomial_into_root",
           "monomial_into_sum", "reduce_beside_factors", "reduce_by_units"]

MAX_ENTRY = 3
"""Largest |exponent| of an input in an enumerated group."""
MAX_SUPPORT = 4
"""Most inputs in an enumerated group (4 only with exponents up to 2)."""
MAX_COMBINATION = 2
"""Largest multiple of a group added to the monomial's particular solution."""
MAX_MONOMIAL_CANDIDATES = 729
DECISIVE = 0.5
"""An equally simple monomial replaces the particular solution when it leaves less than this
share of the particular solution's spread of ``log|y/M|``."""
SPREAD_ROWS = 512
POWER_DENOMINATOR = 12
"""Largest denominator of a group's exponent in a target that is a product of powers."""
POWER_TOLERANCE = 1e-9
"""Spread of ``log|y/M|`` (relative to its spread before) left by an exact product of powers."""
MAX_DENOMINATOR = 64
FACTOR_DENOMINATOR = 12
"""Largest denominator of a power factor's exponent (:func:`reduce_beside_factors`)."""

Vector = tuple[Fraction, ...]


@dataclass(frozen=True, slots=True)
class Reduction:
    """The problem in dimensionless groups.

    Attributes:
        monomial: ``prod x_i**p_i`` with the target's dimension (``Number(1)`` for a
            dimensionless target).
        monomial_values: Its values on the rows.
        groups: The dimensionless groups, as expressions of the inputs.
        columns: ``(rows, len(groups))`` values of the groups.
        exponents: The monomial's exponent of each input.
        group_exponents: Each group's integer exponents of the inputs.
    """

    monomial: Expression
    monomial_values: np.ndarray
    groups: tuple[Expression, ...]
    columns: np.ndarray
    exponents: tuple[Fraction, ...]
    group_exponents: tuple[tuple[int, ...], ...]

    @property
    def note(self) -> str:
        groups = ", ".join(to_str(group) for group in self.groups) or "none"
        return (f"dimensional analysis: the target is {to_str(self.monomial)} times a function "
                f"of {len(self.groups)} dimensionless group(s): {groups}")


def reduce_by_units(X: np.ndarray, y: np.ndarray, names: Sequence[str],
                    dimensions: Sequence[Dimension], target: Dimension
                    ) -> tuple[Reduction | None, str]:
    """The problem reduced to dimensionless groups, or None and why not.

    Args:
        X: ``(rows, inputs)`` inputs.
        y: ``(rows,)`` target.
        names: Input names.
        dimensions: Each input's dimension.
        target: The target's dimension.

    Returns:
        ``(reduction, "")``, or ``(None, reason)`` when no monomial of the inputs has the
        target's dimension or the monomial or a group is not finite on the rows.
    """
    used = [base for base, t in enumerate(target.exponents)
            if t or any(d.exponents[base] for d in dimensions)]
    matrix = [[d.exponents[base] for d in dimensions] for base in used]
    wanted = [target.exponents[base] for base in used]
    particular = _solve(matrix, wanted, len(names))
    if particular is None:
        return None, (f"no product of powers of the inputs is in the target's units "
                      f"({target}): a dimensional constant may be missing from the inputs")
    basis = simplest_basis(matrix, len(names))
    exponents = _monomial(particular, basis, X, y, _small_solutions(matrix, wanted, len(names)))
    exponents = _power_law(exponents, basis, X, y) or exponents
    basis = [_below_one(group, X) for group in basis]
    values = _power_values(X, exponents)
    columns = np.column_stack([_power_values(X, g) for g in basis]) if basis else \
        np.empty((X.shape[0], 0))
    if not (np.all(np.isfinite(values)) and np.all(values != 0) and np.all(np.isfinite(columns))):
        return None, "the monomial or a group is not finite (or is zero) on some rows"
    symbols = [Symbol(name) for name in names]
    return Reduction(monomial_expression(exponents, symbols), values,
                     tuple(monomial_expression(g, symbols) for g in basis), columns,
                     exponents, tuple(tuple(int(e) for e in g) for g in basis)), ""


def reduce_beside_factors(X: np.ndarray, y: np.ndarray, names: Sequence[str],
                          dimensions: Sequence[Dimension], target: Dimension,
                          factors: Mapping[int, float]) -> Reduction | None:
    """The problem reduced with the power factors ``x_i**a_i`` in the monomial and the groups
    formed of the other inputs only, or None when the factors leave no input or a remainder
    whose units those inputs cannot make (then one of the factors is wrong).

    ``y = prod x_i**a_i * r(rest)``: the remainder ``r`` is in the target's units divided by
    the factors', and is reduced over the rest as a whole problem is (:func:`reduce_by_units`).
    The groups of all the inputs mix the factors' inputs into products with the others
    (``Q*F*r``, ``A*F/r``, ``p*T/F`` for ``w**(1/3)*T*p*F*(q - u)/(A*Q*r)``), and the search
    of the reduced problem must find the factors again among correlated groups; here the
    groups are those of the function's own inputs (``q/u``).
    """
    rest = [i for i in range(len(names)) if i not in factors]
    if not rest or not factors:
        return None
    powers = {i: Fraction(float(a)).limit_denominator(FACTOR_DENOMINATOR)
              for i, a in factors.items()}
    remainder_units = target
    for i, power in powers.items():
        remainder_units = remainder_units / dimensions[i] ** power
    product = _power_values(X, [powers.get(i, Fraction(0)) for i in range(len(names))])
    with np.errstate(all="ignore"):
        remainder = y / product
    if not (np.all(np.isfinite(product)) and np.all(product != 0) and
            np.all(np.isfinite(remainder))):
        return None
    sub, _ = reduce_by_units(X[:, rest], remainder, [names[i] for i in rest],
                             [dimensions[i] for i in rest], remainder_units)
    if sub is None:
        return None
    exponents = [powers.get(i, Fraction(0)) for i in range(len(names))]
    for i, exponent in zip(rest, sub.exponents, strict=True):
        exponents[i] = exponent
    groups = []
    for group in sub.group_exponents:
        full = [0] * len(names)
        for i, exponent in zip(rest, group, strict=True):
            full[i] = exponent
        groups.append(tuple(full))
    symbols = [Symbol(name) for name in names]
    return Reduction(monomial_expression(exponents, symbols), product * sub.monomial_values,
                     tuple(monomial_expression(g, symbols) for g in groups), sub.columns,
                     tuple(exponents), tuple(groups))


def simplest_basis(matrix: list[list[Fraction]], n: int) -> list[Vector]:
    """An integer basis of the null space of ``matrix``, simplest vectors first."""
    size = n - _rank(matrix, n)
    if size == 0:
        return []
    chosen: list[Vector] = []
    rows = np.zeros((0, n))
    for vector in _small_null_vectors(matrix, n):
        # small integer vectors: a float rank is exact, and thousands of candidates (many
        # dimensionless inputs) took seconds as exact rational eliminations
        grown = np.vstack([rows, vector])
        if np.linalg.matrix_rank(grown) == len(chosen) + 1:
            chosen.append(tuple(Fraction(e) for e in vector))
            rows = grown
            if len(chosen) == size:
                return chosen
    for vector in _null_space(matrix, n):  # what small vectors do not span
        if _rank([list(v) for v in [*chosen, vector]], n) == len(chosen) + 1:
            chosen.append(_integer(vector))
            if len(chosen) == size:
                break
    return chosen


def _small_null_vectors(matrix: list[list[Fraction]], n: int) -> list[tuple[int, ...]]:
    """Integer null vectors with few nonzero, small entries, simplest first (fewest
    inputs, then the smallest sum and largest of the magnitudes)."""
    if not matrix:
        return [tuple(int(i == j) for j in range(n)) for i in range(n)]
    scale = math.lcm(*(Fraction(e).denominator for row in matrix for e in row))
    integer = np.array([[int(e * scale) for e in row] for row in matrix], dtype=np.int64)
    found: dict[tuple[int, ...], None] = {}
    for support in range(1, min(MAX_SUPPORT, n) + 1):
        limit = MAX_ENTRY if support <= 3 else 2
        entries = [e for e in range(-limit, limit + 1) if e]
        values = np.array(list(itertools.product(entries, repeat=support)), dtype=np.int64)
        values = values[values[:, 0] > 0]  # one sign of each vector
        for columns in itertools.combinations(range(n), support):
            hits = values[np.all(integer[:, columns] @ values.T == 0, axis=0)]
            for row in hits:
                if math.gcd(*map(int, row)) != 1:
                    continue
                vector = [0] * n
                for column, value in zip(columns, row, strict=True):
                    vector[column] = int(value)
                found[_oriented(tuple(vector))] = None
    return sorted(found, key=lambda v: (sum(1 for e in v if e), sum(map(abs, v)),
                                        max(map(abs, v))))


def _oriented(vector: tuple) -> tuple:
    """More positive than negative exponents (``b/a``, not ``a/b``, for the later input)."""
    positive = sum(e for e in vector if e > 0)
    negative = -sum(e for e in vector if e < 0)
    last = next(e for e in reversed(vector) if e)
    if negative > positive or (negative == positive and last < 0):
        return tuple(-e for e in vector)
    return vector


def _integer(vector: Vector) -> Vector:
    scale = math.lcm(*(e.denominator for e in vector))
    integers = [int(e * scale) for e in vector]
    divisor = math.gcd(*integers) or 1
    return _oriented(tuple(Fraction(v // divisor) for v in integers))


def _below_one(group: Vector, X: np.ndarray) -> Vector:
    """A ratio of two inputs turned over when it is above 1 on every row: one bounds the
    other, and laws take the smaller over the larger (``v/c`` in ``1/sqrt(1 - v**2/c**2)``;
    over ``c/v`` the same law is ``1/sqrt(1 - 1/g**2)``, which a search reached late)."""
    used = [i for i, e in enumerate(group) if e]
    if len(used) != 2 or group[used[0]] != -group[used[1]]:
        return group
    with np.errstate(all="ignore"):
        values = _power_values(X, group)
    if values.size and bool(np.all(values > 1)):
        return tuple(-e for e in group)
    return group


def _monomial(particular: Vector, basis: list[Vector], X: np.ndarray, y: np.ndarray,
              small: Sequence[Vector] = ()) -> Vector:
    """The simplest ``particular + sum z_j basis_j`` or ``small`` solution; among equally
    simple ones, the one leaving decisively less spread in ``log|y/M|`` than the nearest
    combination's, else that nearest one (see the module docstring).

    ``small`` (:func:`_small_solutions`) reaches monomials off the lattice of whole
    multiples of the groups: with ``A*g**2/N`` a group and ``sqrt(N/A)`` the particular
    solution, ``g`` is half a group away."""
    combinations = _combinations(len(basis))
    base = np.array([float(p) for p in particular])
    groups = np.array([[float(e) for e in g] for g in basis]).reshape(len(basis), len(base))
    vectors = base + combinations @ groups
    distances = [float(d) for d in np.abs(combinations).sum(axis=1)]
    if small:
        vectors = np.vstack([vectors, np.array([[float(e) for e in v] for v in small])])
        distances += [math.inf] * len(small)
    sizes = [_size(v) for v in vectors]
    simplest = min(sizes)
    tied = [i for i, size in enumerate(sizes) if size == simplest]
    nearest = min(tied, key=lambda i: (distances[i], i))
    spreads = _spreads(vectors[tied], X, y)
    chosen = nearest
    if spreads is not None:
        best = int(np.argmin(spreads))
        if spreads[best] < DECISIVE * spreads[tied.index(nearest)]:
            chosen = tied[best]
    return tuple(Fraction(float(e)).limit_denominator(MAX_DENOMINATOR) for e in vectors[chosen])


def _small_solutions(matrix: list[list[Fraction]], wanted: list[Fraction], n: int
                     ) -> list[Vector]:
    """The monomials in the target's units on at most ``MAX_SUPPORT`` inputs whose
    exponents are determined by them, each at most ``MAX_ENTRY`` in size."""
    if not matrix:
        return []
    found: list[Vector] = []
    for support in range(1, min(MAX_SUPPORT, n) + 1):
        for columns in itertools.combinations(range(n), support):
            sub = [[row[c] for c in columns] for row in matrix]
            if _rank(sub, support) < support:
                continue  # not determined: a group of these inputs could be added
            solution = _solve(sub, wanted, support)
            if solution is None or any(e == 0 or abs(e) > MAX_ENTRY for e in solution):
                continue
            vector = [Fraction(0)] * n
            for column, value in zip(columns, solution, strict=True):
                vector[column] = value
            found.append(tuple(vector))
    return found


def _power_law(exponents: Vector, basis: list[Vector], X: np.ndarray, y: np.ndarray
               ) -> Vector | None:
    """The monomial times the powers of the groups that ``y`` is, up to a constant, when it
    is exactly such a product (None otherwise).

    ``log|y/M|`` is then linear in the groups' logarithms: least squares gives their
    exponents, each snapped to a fraction of denominator at most ``POWER_DENOMINATOR``, and
    the snapped ones must leave ``log|y/M|`` constant within ``POWER_TOLERANCE``. The reduced
    target is then a constant; a search of it over many groups (``y**(1/2)*C**(-1/2)*
    E**(1/3)*V**2...`` has six) rarely finds the product of their powers.
    """
    if not basis:
        return None
    vectors = np.array([[float(e) for e in v] for v in (exponents, *basis)])
    rows = np.linspace(0, y.size - 1, min(y.size, SPREAD_ROWS)).astype(int)
    with np.errstate(all="ignore"):
        logs = np.log(np.abs(X[rows])) @ vectors.T
        target = np.log(np.abs(y[rows])) - logs[:, 0]
    if not (np.all(np.isfinite(logs)) and np.all(np.isfinite(target))):
        return None
    design = np.column_stack([np.ones(rows.size), logs[:, 1:]])
    fitted, *_ = np.linalg.lstsq(design, target, rcond=None)
    powers = [Fraction(float(z)).limit_denominator(POWER_DENOMINATOR) for z in fitted[1:]]
    left = target - logs[:, 1:] @ np.array([float(z) for z in powers])
    if np.std(left) > POWER_TOLERANCE * max(1.0, float(np.std(target))):
        return None
    return tuple(e + sum((z * g[k] for z, g in zip(powers, basis, strict=True)), Fraction(0))
                 for k, e in enumerate(exponents))


def _combinations(k: int) -> np.ndarray:
    """The multiples ``z`` of the groups tried: all in [-2, 2] for few groups, fewer else."""
    if k == 0:
        return np.zeros((1, 0))
    reach = MAX_COMBINATION if (2 * MAX_COMBINATION + 1) ** k <= MAX_MONOMIAL_CANDIDATES else 1
    if (2 * reach + 1) ** k <= MAX_MONOMIAL_CANDIDATES:
        return np.array(list(itertools.product(range(-reach, reach + 1), repeat=k)), float)
    single = [np.zeros(k)] + [sign * np.eye(k)[j] for j in range(k) for sign in (1, -1)]
    return np.array(single)


def _spreads(vectors: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``var(log|y| - log|M|)`` of each candidate monomial (None when logs do not exist)."""
    rows = np.linspace(0, y.size - 1, min(y.size, SPREAD_ROWS)).astype(int)
    with np.errstate(all="ignore"):
        logs = np.log(np.abs(X[rows]))
        target = np.log(np.abs(y[rows]))
    if not (np.all(np.isfinite(logs)) and np.all(np.isfinite(target))):
        return None
    return np.var(target[:, None] - logs @ vectors.T, axis=0)


def _size(vector: Sequence[float]) -> tuple[int, float]:
    """A monomial's simplicity: whole exponents, then the sum of their magnitudes."""
    fractional = sum(1 for e in vector if abs(float(e) - round(float(e))) > 1e-9)
    return fractional, round(sum(abs(float(e)) for e in vector), 9)


def _power_values(X: np.ndarray, exponents: Sequence[Fraction]) -> np.ndarray:
    values = np.ones(X.shape[0])
    with np.errstate(all="ignore"):
        for column, exponent in enumerate(exponents):
            if exponent:
                values = values * X[:, column] ** float(exponent)
    return values


def monomial_expression(exponents: Sequence[Fraction], inputs: Sequence[Expression]
                        ) -> Expression:
    """``prod inputs[i]**e_i``: positive powers over negative ones (``a*b/c**2``), a half
    power as a root (``sqrt(M)*L``, not ``M**0.5*L``), and only half powers as one root
    (``sqrt(M/g)``)."""
    used = [e for e in exponents if e]
    if len(used) > 1 and all(abs(e) == Fraction(1, 2) for e in used):
        return Function("sqrt", (monomial_expression([2 * e for e in exponents], inputs),))

    def power(base: Expression, exponent: Fraction) -> Expression:
        if exponent == 1:
            return base
        if exponent == Fraction(1, 2):
            return Function("sqrt", (base,))
        number = int(exponent) if exponent.denominator == 1 else float(exponent)
        return Binary("**", base, Number(number))

    def product(parts: list[Expression]) -> Expression | None:
        result = None
        for part in parts:
            result = part if result is None else Binary("*", result, part)
        return result

    upper = product([power(x, e) for x, e in zip(inputs, exponents, strict=True) if e > 0])
    lower = product([power(x, -e) for x, e in zip(inputs, exponents, strict=True) if e < 0])
    if lower is None:
        return upper if upper is not None else Number(1)
    return Binary("/", upper if upper is not None else Number(1), lower)


# ----------------------------------------------------------- exact linear algebra
def _rref(matrix: list[list[Fraction]], n: int) -> tuple[list[list[Fraction]], list[int]]:
    rows = [list(map(Fraction, row)) for row in matrix]
    pivots: list[int] = []
    r = 0
    for column in range(n):
        pivot = next((i for i in range(r, len(rows)) if rows[i][column] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        head = rows[r][column]
        rows[r] = [value / head for value in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][column] != 0:
                factor = rows[i][column]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[r], strict=True)]
        pivots.append(column)
        r += 1
        if r == len(rows):
            break
    return rows, pivots


def _rank(matrix: list[list[Fraction]], n: int) -> int:
    return len(_rref(matrix, n)[1]) if matrix else 0


def _null_space(matrix: list[list[Fraction]], n: int) -> list[Vector]:
    rows, pivots = _rref(matrix, n) if matrix else ([], [])
    basis = []
    for free in (c for c in range(n) if c not in pivots):
        vector = [Fraction(0)] * n
        vector[free] = Fraction(1)
        for row, pivot in zip(rows, pivots, strict=False):
            vector[pivot] = -row[free]
        basis.append(tuple(vector))
    return basis


def _solve(matrix: list[list[Fraction]], wanted: list[Fraction], n: int) -> Vector | None:
    """A solution of ``matrix @ p = wanted`` (free inputs at 0), or None."""
    if not matrix:
        return tuple(Fraction(0) for _ in range(n))
    augmented = [[*row, t] for row, t in zip(matrix, wanted, strict=True)]
    rows, pivots = _rref(augmented, n + 1)
    if n in pivots:  # a row 0 = 1: inconsistent
        return None
    solution = [Fraction(0)] * n
    for row, pivot in zip(rows, pivots, strict=False):
        solution[pivot] = row[n]
    return tuple(solution)


# ------------------------------------------------------ answers in the original inputs
def merged_powers(expression: Expression) -> Expression:
    """``expression`` with each product of powers of inputs merged into one monomial:
    mapped back, ``r**3*dP/mu*(c/(L/r))`` is ``c*r**4*dP/(mu*L)`` (the same function)."""
    return map_postorder(expression, _merged_product)


def common_monomial_out(expression: Expression) -> Expression:
    """``expression`` with the powers of inputs common to every term of a sum that a
    product multiplies taken out of the sum into the product: mapped back,
    ``rho**3*M**2*(T**2/M**2 - T/M)`` is ``rho**3*T*(T - M)`` (the same function; each
    input's smallest exponent over the terms is taken out, 0 where a term lacks it)."""
    return map_postorder(expression, _common_out)


def _common_out(node: Expression) -> Expression:
    """A product or quotient with a sum for an operand, the sum's common powers taken out
    (a sum divided by, or dividing, the rest too: ``(v/c)/(c/v - v/c)`` is
    ``v**2/(c**2 - v**2)``, a group's law over ``g`` and ``1/g`` mapped back)."""
    if not (isinstance(node, Binary) and node.operator in ("*", "/")):
        return node
    if _is_sum(node.right):
        outer, inner = node.left, node.right
    elif _is_sum(node.left):
        outer, inner = node.right, node.left
    else:
        return node
    terms = _sum_terms(inner)
    powers = [_input_powers(term) for term in terms]
    names = dict.fromkeys(name for term in powers for name in term)
    common = {name: min(term.get(name, Fraction(0)) for term in powers) for name in names}
    common = {name: power for name, power in common.items() if power}
    if not common:
        return node
    taken = monomial_expression(list(common.values()), [Symbol(n) for n in common])
    if node.operator == "*":
        outer = merged_powers(Binary("*", outer, taken))
        if isinstance(outer, Binary) and outer.operator == "/" and outer.left == Number(1):
            return Binary("/", _divided(inner, taken), outer.right)  # not ``1/M*(...)``
        return Binary("*", outer, _divided(inner, taken))
    if inner is node.right:  # outer / (taken * rest)
        return Binary("/", merged_powers(Binary("/", outer, taken)), _divided(inner, taken))
    return Binary("*", merged_powers(Binary("/", taken, outer)), _divided(inner, taken))


def monomial_into_root(expression: Expression, name: str) -> Expression:
    """``expression`` with the power of input ``name`` in a product of powers of inputs
    that multiplies the square root of a sum taken into the root, onto every term: mapped
    back, ``k*sqrt(0.36 + 0.36*V**2/k**2)/E`` is ``sqrt(0.36*k**2 + 0.36*V**2)/E`` for
    ``k`` (the same function where ``k`` is positive; the caller checks the values)."""
    return map_postorder(expression, lambda node: _into_root(node, name))


def monomial_into_sum(expression: Expression) -> Expression:
    """``expression`` with each product of powers of inputs that multiplies or divides a sum
    taken into the sum, onto every term: mapped back, ``(1 - (k/V**2 - t*k/V - v/V))*V`` is
    ``V - (k/V - t*k - v)`` (the same function; the target's units made ``V`` the monomial
    of a law that is a sum of terms in other units)."""
    return map_postorder(expression, _into_sum)


def _into_sum(node: Expression) -> Expression:
    if not (isinstance(node, Binary) and node.operator in ("*", "/")):
        return node
    pairs = [(node.left, node.right)]
    if node.operator == "*":
        pairs.append((node.right, node.left))
    for scaled, outer in pairs:
        if _scaled_sum(scaled) and _is_monomial(outer) and not _is_constant(outer):
            factor = outer if node.operator == "*" else Binary("/", Number(1), outer)
            return _multiplied(scaled, factor)
    return node


def _scaled_sum(node: Expression) -> bool:
    """A sum, or a sum times or over a number (what :func:`_multiplied` distributes into)."""
    if _is_sum(node):
        return True
    return isinstance(node, Binary) and node.operator in ("*", "/") and (
        (_is_sum(node.left) and _is_constant(node.right)) or
        (node.operator == "*" and _is_sum(node.right) and _is_constant(node.left)))


def _into_root(node: Expression, name: str) -> Expression:
    if not (isinstance(node, Binary) and node.operator == "*"):
        return node
    for outer, root in ((node.left, node.right), (node.right, node.left)):
        if isinstance(root, Function) and root.name == "sqrt" and \
                _is_sum(root.arguments[0]) and _is_monomial(outer):
            powers = _input_powers(outer)
            if not powers.get(name):
                return node
            square = monomial_expression([2 * powers[name]], [Symbol(name)])
            result: Expression = Function("sqrt", (_multiplied(root.arguments[0], square),))
            upper = [n for n, e in powers.items() if n != name and e > 0]
            lower = [n for n, e in powers.items() if n != name and e < 0]
            if upper:
                result = Binary("*", monomial_expression([powers[n] for n in upper],
                                                         [Symbol(n) for n in upper]), result)
            if lower:
                result = Binary("/", result, monomial_expression([-powers[n] for n in lower],
                                                                 [Symbol(n) for n in lower]))
            return result
    return node


def _is_monomial(node: Expression) -> bool:
    return all(isinstance(factor, Symbol) or _symbol_power(factor) is not None
               for factor, _ in _factors(node, Fraction(1)))


def _multiplied(node: Expression, factor: Expression) -> Expression:
    """Each term of the sum ``node`` times ``factor``, its powers merged; into a sum that a
    number multiplies or divides too (``(E**2/V**2 + P**2/V**2)/(16*pi**2)`` times ``V**2``:
    ``(E**2 + P**2)/(16*pi**2)``)."""
    if _is_sum(node):
        return Binary(node.operator, _multiplied(node.left, factor),
                      _multiplied(node.right, factor))
    if isinstance(node, Binary) and node.operator in ("*", "/") and \
            _is_sum(node.left) and _is_constant(node.right):
        return Binary(node.operator, _multiplied(node.left, factor), node.right)
    if isinstance(node, Binary) and node.operator == "*" and \
            _is_sum(node.right) and _is_constant(node.left):
        return Binary("*", node.left, _multiplied(node.right, factor))
    return merged_powers(Binary("*", node, factor))


def _is_constant(node: Expression) -> bool:
    return not any(isinstance(part, Symbol) for part in node.iter_preorder())


def _is_sum(node: Expression) -> bool:
    return isinstance(node, Binary) and node.operator in ("+", "-")


def _sum_terms(node: Expression) -> list[Expression]:
    if _is_sum(node):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [node]


def _divided(node: Expression, taken: Expression) -> Expression:
    """Each term of the sum ``node`` divided by ``taken``, its powers merged."""
    if _is_sum(node):
        return Binary(node.operator, _divided(node.left, taken), _divided(node.right, taken))
    return merged_powers(Binary("/", node, taken))


def _input_powers(term: Expression) -> dict[str, Fraction]:
    powers: dict[str, Fraction] = {}
    for factor, exponent in _factors(term, Fraction(1)):
        if isinstance(factor, Symbol):
            powers[factor.name] = powers.get(factor.name, Fraction(0)) + exponent
        elif _symbol_power(factor) is not None:
            name, power = _symbol_power(factor)
            powers[name] = powers.get(name, Fraction(0)) + exponent * power
    return powers


def _merged_product(node: Expression) -> Expression:
    if not (isinstance(node, Binary) and node.operator in ("*", "/")) and \
            isinstance(_root_of_monomial(node), Symbol | None) and \
            len(_factors(node, Fraction(1))) == 1:
        return node
    coefficient, powers, others = 1.0, {}, []
    for factor, exponent in _factors(node, Fraction(1)):
        if isinstance(factor, Number):
            coefficient *= float(factor.value) ** float(exponent)
        elif isinstance(factor, Symbol):
            powers[factor.name] = powers.get(factor.name, Fraction(0)) + exponent
        elif _symbol_power(factor) is not None:
            name, power = _symbol_power(factor)
            powers[name] = powers.get(name, Fraction(0)) + exponent * power
        else:
            others.append((factor, exponent))
    names = [name for name, power in powers.items() if power]
    if any(powers[n].denominator > MAX_EXPONENT_DENOMINATOR for n in names):
        return node  # ``R**0.0625`` from four roots: not an exponent the units check reads
    monomial = monomial_expression([powers[n] for n in names], [Symbol(n) for n in names])
    parts = [] if coefficient == 1.0 else [Number(coefficient)]
    parts += [factor for factor, exponent in others if exponent == 1]
    if parts and isinstance(monomial, Binary) and monomial.left == Number(1):
        others.append((monomial.right, Fraction(-1)))  # ``s/x**2``, not ``s*(1/x**2)``
    elif monomial != Number(1):
        parts.append(monomial)
    result = parts[0] if parts else Number(1)
    for part in parts[1:]:
        result = Binary("*", result, part)
    for factor, exponent in others:
        if exponent == -1:
            result = Binary("/", result, factor)
        elif exponent != 1:
            result = Binary("*", result, Binary("**", factor, Number(float(exponent))))
    return result


def _factors(node: Expression, exponent: Fraction) -> list[tuple[Expression, Fraction]]:
    """The factors of a product with their exponents; a root of a monomial is its factors
    at half the exponent (``sqrt(x**2*n**3/M**2)``, a group under a root, mapped back, is
    ``x*n**1.5/M``: the same on the rows where the inputs are positive, which the caller
    checks on the values)."""
    if isinstance(node, Binary) and node.operator in ("*", "/"):
        right = exponent if node.operator == "*" else -exponent
        return _factors(node.left, exponent) + _factors(node.right, right)
    root = _root_of_monomial(node)
    if root is not None:
        return _factors(root, exponent / 2)
    if isinstance(node, Binary) and node.operator == "**" and isinstance(node.right, Number) \
            and isinstance(node.left, Binary) and node.left.operator in ("*", "/"):
        # a power of a product (a squared group, ``(E/V)**2``) is the product of powers
        power = Fraction(node.right.value).limit_denominator(MAX_DENOMINATOR)
        if abs(float(power) - node.right.value) <= 1e-12:
            return _factors(node.left, exponent * power)
    return [(node, exponent)]


def _root_of_monomial(node: Expression) -> Expression | None:
    """The argument of ``sqrt`` when it is a product of powers of inputs and positive
    numbers, else None."""
    if not (isinstance(node, Function) and node.name == "sqrt"):
        return None
    argument = node.arguments[0]
    for factor, _ in _factors(argument, Fraction(1)):
        if not (isinstance(factor, Symbol) or _symbol_power(factor) is not None or
                (isinstance(factor, Number) and factor.value > 0)):
            return None
    return argument


def _symbol_power(node: Expression) -> tuple[str, Fraction] | None:
    if isinstance(node, Binary) and node.operator == "**" and \
            isinstance(node.left, Symbol) and isinstance(node.right, Number):
        power = Fraction(node.right.value).limit_denominator(MAX_DENOMINATOR)
        if abs(float(power) - node.right.value) <= 1e-12:
            return node.left.name, power
    return None
