"""Built-in problem suites, kept as data, and the SRBench-style protocol.

A suite file (JSON) lists problems: an output name, a formula in numpy
syntax (``ln`` is the natural logarithm) and a uniform range per variable.
:meth:`Problem.sample` draws the search data; :meth:`Problem.judge` scores a
formula on fresh, independently seeded points. Nothing in the code may
special-case a problem: the suite is data.

Built-in suites (``load_suite(name)``): ``feynman-public`` (the default), 40
of the AI Feynman equations; ``feynman``, all 100 AI Feynman equations and
the 20 bonus ones, with every variable's quantity and SI units (SRBench's
three excluded problems carry ``excluded``); ``lsr-transform``, the 111
transformed Feynman problems LLM-SRBench published, under its names
(:mod:`.transform`, with an out-of-domain set); ``lsr-transform-all``, the
construction on every included equation, the bonus ones too, keeping each
solved form more complex than its original (176);
``strogatz``, SRBench's 14 Strogatz ODE problems as trajectories
(:mod:`.dynamics`); ``network``, network dynamics on random graphs
(:mod:`.network`). ``scripts/build_benchmark_suites.py`` writes the Feynman
and LSR-Transform files from their public sources. An entry's ``kind``
(``"formula"`` default, ``"ode"``, ``"network"``, ``"transform"``) picks its
class; every class has the same interface
(``name``, ``id``, ``output``, ``formula``, ``feature_names``, ``sample``,
``judge``). Units: a formula or transform problem's ``si_units()`` gives the
units its suite lists, as SI text; a suite's top-level ``unit_symbols`` says
which unit names it reads differently (the Feynman files: ``{"T": "K"}``, AI
Feynman's tables writing a temperature as T). A problem name unknown to the
default suite is looked up in the other built-in suites, so ``srh run
--problem strogatz-lv1`` needs no ``--suite``.

Protocol:
- every variable i.i.d. from U[low, high] with a seeded generator
  (search data: ``default_rng([seed, 0])``; judging data: ``[seed, 1]``);
- optional noise N(0, sigma * sqrt(mean(y^2))) on the target only;
- solved (exact): on 1,000 fresh points, max |f(x) - y| / max(|y|, tiny) < 1e-6,
  judged against the noise-free target; R^2 on the same points is reported.
"""

from __future__ import annotations

from srh_core.problems.formula import (
    DEFAULT_SAMPLES,
    JUDGE_SAMPLES,
    SOLVED_TOLERANCE,
    TINY,
    Judgement,
    Problem,
    VariableRange,
    judged,
)
from srh_core.problems.suites import (
    BUILTIN_SUITE,
    BUILTIN_SUITES,
    DEFAULT_SUITE,
    MAX_SUITE_DEPTH,
    Suite,
    load_suite,
    problem_from_dict,
)

__all__ = ["BUILTIN_SUITE", "BUILTIN_SUITES", "DEFAULT_SAMPLES", "DEFAULT_SUITE", "JUDGE_SAMPLES",
           "MAX_SUITE_DEPTH", "SOLVED_TOLERANCE", "TINY", "Judgement", "Problem", "Suite",
           "VariableRange", "judged", "load_suite", "problem_from_dict"]
