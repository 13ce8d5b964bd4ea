"""A native, time-bounded symbolic search: data in, a Pareto front of engine expressions out.

>>> import numpy as np
>>> from srh_engine.search import search
>>> X = np.random.default_rng(0).uniform(1, 3, (200, 2))
>>> result = search(X, X[:, 0] / (X[:, 0] + X[:, 1]), ["a", "b"], time_budget=2)
>>> result.best.formula  # doctest: +SKIP
'a/(a + b)'

The method (details in the modules): decomposition tests on the data
(:mod:`.decomposition`: power factors, separability, pairs), bottom-up
enumeration of small forms deduplicated by value and scored against several
target transforms at once (:mod:`.enumeration`), sparse sums of the
enumerated forms (:mod:`.combination`) and of monomials with cross terms
(:mod:`.cross_terms`), regularised evolution seeded by the
enumeration with Levenberg-Marquardt constants (:mod:`.evolution`), and a
final refit of the best trees on every row by :func:`srh_engine.fit`
(:mod:`.core`). Islands with other seeds run on the other cores
(:mod:`.pool`); BLAS runs single-threaded meanwhile (:mod:`.threads`).
``ExpressionSearchResult.best`` is the lowest-error formula,
``ExpressionSearchResult.selected`` the one PySR's "best" rule picks (:mod:`.selection`).
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

# name -> its module, imported on first use: srh_core.ranking takes PySR's selection
# rule (.selection) without loading the search (NumPy, SciPy).
_LAZY = {"ExpressionSearchResult": "core", "FrontEntry": "core", "pareto_front": "core",
         "search": "core", "warm_islands": "core", "DEFAULT_OPERATORS": "operators",
         "OPERATORS": "operators"}

__all__ = ["DEFAULT_OPERATORS", "ExpressionSearchResult", "FrontEntry", "OPERATORS",
           "pareto_front", "search", "warm_islands"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
