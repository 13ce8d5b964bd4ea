"""The options of ``srh run``, grouped by topic; each search flag maps to one setting.

:func:`add_run_arguments` builds the argument groups ``srh run --help`` shows;
:func:`settings_flags` turns the parsed flags into :class:`SearchSettings`
values (a flag left out is absent, so ``--config`` or the default decides);
:func:`synthetic_data` draws a problem from ``--equation``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_core.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_X_LOW, DEFAULT_X_HIGH = 1.0, 5.0

# flag destination -> SearchSettings field, for the flags that map one to one
SETTING_OF_FLAG = {
    "max_restart_loop": "max_restart_loop", "global_width": "global_width",
    "max_refinement_depth": "max_refinement_depth", "local_sample_size": "local_sample_size",
    "restart_top_k": "restart_top_k", "seed": "seed", "time_limit": "time_limit",
    "early_stop": "early_stop", "base_url": "base_url", "llm_max_tokens": "llm_max_tokens",
    "auto_routing": "auto_routing", "tool_parser": "tool_parser", "tools": "tools",
    "ban_tools": "ban_tools", "max_workers": "max_workers", "workspace": "workspace",
    "force_initial_diagnostics": "force_initial_diagnostics",
    "validation_fraction": "validation_fraction", "split_by": "split_by",
    "split_ood_variable": "split_ood_variable", "split_random_state": "split_random_state",
    "branch_threads": "branch_threads", "granularity": "granularity", "selection": "selection",
    "max_cost": "max_cost", "max_tokens": "max_tokens", "endpoint": "endpoint",
    "skills": "skills", "skills_dir": "skills_dir", "evaluator": "evaluator",
    "binary_operators": "binary_operators",
    "unary_operators": "unary_operators", "maxsize": "maxsize", "guesses": "guesses",
    "weights": "weights", "nested_constraints": "nested_constraints",
    "constraints": "constraints",
}
SYNTHETIC_ONLY = ("features", "x_low", "x_high", "noise_std_ratio")


def json_object(text: str) -> dict[str, Any]:
    """A JSON object flag (argparse type of ``--nested-constraints``, ``--constraints``)."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"expected a JSON object: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object; got {text!r:.60}")
    return value


def name_list(text: str) -> list[str]:
    """``"a,b, c"`` -> ``["a", "b", "c"]`` (argparse type of the list flags)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated names, e.g. a,b")
    return names


def unit_list(text: str) -> dict[str, str]:
    """``"m=kg,v=m/s"`` -> ``{"m": "kg", "v": "m/s"}`` (argparse type of ``--units``)."""
    from srh_engine import UnitError, parse_units

    units: dict[str, str] = {}
    for part in filter(None, (item.strip() for item in text.split(","))):
        name, equals, value = (piece.strip() for piece in part.partition("="))
        if not equals or not name.isidentifier():
            raise argparse.ArgumentTypeError(f"expected NAME=UNITS, e.g. v=m/s; got {part!r}")
        try:
            parse_units(value)
        except UnitError as error:
            raise argparse.ArgumentTypeError(f"units of {name!r}: {error}") from None
        units[name] = value
    if not units:
        raise argparse.ArgumentTypeError("expected NAME=UNITS pairs, e.g. v=m/s,t=s")
    return units


def run_units(args: argparse.Namespace) -> dict[str, str] | None:
    """The run's units: a --problem's or a manifest's own, then ``--units`` (which wins);
    ``{}`` with ``--no-units``; None when nothing gives any."""
    if getattr(args, "no_units", False):
        return {}
    found: dict[str, str] = {}
    if getattr(args, "problem", None):
        from srh_core.problems import load_suite

        problem = load_suite(getattr(args, "suite", None)).get(args.problem)
        found.update(problem.si_units() if hasattr(problem, "si_units") else {})
    elif getattr(args, "data", None) and Path(args.data).is_dir():
        found.update(_manifest_units(Path(args.data)))
    found.update(getattr(args, "units", None) or {})
    return found or None


def _manifest_entry(directory: Path, key: str) -> str | None:
    """A top-level text entry of a context.data manifest (``weights``), or None; a bad
    manifest is reported by loading the data."""
    from srh_core.context.manifest_schema import MANIFEST_NAME
    from srh_core.context.manifest_store import read_manifest_json
    from srh_core.errors import ContextManifestError

    try:
        value = read_manifest_json(directory / MANIFEST_NAME).get(key)
    except (ContextManifestError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _manifest_units(directory: Path) -> dict[str, str]:
    """The ``units`` of a context.data manifest's variables (the loader checks the rest).

    Read by the loader's own reader (size, depth and duplicate keys checked first), so a
    bad manifest is reported once, by loading the data, not crashed on here.
    """
    from srh_core.context.manifest_schema import MANIFEST_NAME
    from srh_core.context.manifest_store import read_manifest_json
    from srh_core.errors import ContextManifestError

    try:
        document = read_manifest_json(directory / MANIFEST_NAME)
        variables = document.get("variables") or {}
        return {str(name): spec["units"] for name, spec in variables.items()
                if isinstance(spec, dict) and isinstance(spec.get("units"), str)}
    except (ContextManifestError, AttributeError):
        return {}  # loading the data reports what is wrong with the manifest


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of ``srh run``, in the groups its ``--help`` shows."""
    for build in (_data_options, _model_options, _tool_options, _formula_options,
                  _budget_options, _validation_options, _output_options, _runtime_options):
        build(parser)


def _data_options(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data", "one of --data, --problem or --equation")
    source = data.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="a CSV file (header row = names) or a context.data dir")
    source.add_argument("--problem", help="a built-in problem, e.g. feynman-I.6.2a")
    source.add_argument("--equation", help='synthetic data from a formula, e.g. "x1**2 + '
                        '2*x1*x2" or "y = x1*x2" (parsed by the engine, never evaluated as '
                        "Python)")
    data.add_argument("--target", help="target column of --data (or the name of --equation's "
                      "target, default y)")
    data.add_argument("--suite", help="suite file for --problem (default: built-in)")
    data.add_argument("--samples", "--n-samples", dest="samples", type=int, default=2000,
                      help="samples drawn for --problem or --equation (default 2000)")
    data.add_argument("--noise", type=float, default=0.0,
                      help="--problem: noise std relative to the target's RMS")
    data.add_argument("--features", type=name_list, metavar="NAMES",
                      help="--equation: variables x1,x2,... (default: the equation's; extra "
                      "ones are distractors)")
    data.add_argument("--x-low", type=float, help=f"--equation: lower end of every variable's "
                      f"uniform range (default {DEFAULT_X_LOW:g})")
    data.add_argument("--x-high", type=float, help=f"--equation: upper end (default "
                      f"{DEFAULT_X_HIGH:g})")
    data.add_argument("--noise-std-ratio", type=float, help="--equation: Gaussian noise on the "
                      "target with std = RATIO x std(target) (default 0)")
    data.add_argument("--description", help="problem description shown to the model")
    data.add_argument("--weights", metavar="COLUMN",
                      help="--data: the column of row weights (PySR's weights; a context.data "
                           "manifest may name it): weighted fits, metrics and ranking")
    units = data.add_mutually_exclusive_group()
    units.add_argument("--units", type=unit_list, metavar="NAME=UNITS,...",
                       help='units of the variables and the target, e.g. "m=kg,v=m/s,'
                            'E=kg*m^2/s^2" (a --problem\'s own units are used unless given)')
    units.add_argument("--no-units", action="store_true",
                       help="ignore the units a --problem or a context.data manifest gives")


def _model_options(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("model")
    model.add_argument("--llm", default=None, help="offline (default) or PROVIDER:MODEL")
    model.add_argument("--base-url", help="OpenAI-compatible endpoint URL (celery: one of the "
                       "operator's endpoints, or with --own-key)")
    model.add_argument("--endpoint", metavar="NAME", help="a model endpoint the operator named "
                       "(SRH_ENDPOINTS): its provider, URL and key")
    model.add_argument("--strong-llm", type=_provider_model, metavar="PROVIDER:MODEL",
                       help="the strong model hard tasks are routed to")
    model.add_argument("--auto-routing", action=argparse.BooleanOptionalAction, default=None,
                       help="route hard tasks to --strong-llm (default: on)")
    model.add_argument("--llm-max-tokens", type=int, help="maximum tokens per model response")
    model.add_argument("--tool-parser", choices=("openai", "json", "text", "xml"),
                       help="how tool calls are exchanged with the model (default openai)")


def _tool_options(parser: argparse.ArgumentParser) -> None:
    tools = parser.add_argument_group("tools")
    tools.add_argument("--tools", type=name_list, metavar="NAMES", help="tools to offer, e.g. "
                       "evaluate_formula,polynomial_fit (default: the built-in set)")
    tools.add_argument("--ban-tools", type=name_list, metavar="NAMES", help="tools never offered")
    tools.add_argument("--force-initial-diagnostics", action="store_true", default=None,
                       help="run the analysis tools before the first step")
    tools.add_argument("--max-workers", type=int, help="tool worker processes (0: serial)")
    tools.add_argument("--workspace", metavar="DIR",
                       help="directory the workspace tools work in")
    tools.add_argument("--skills", type=name_list, metavar="NAMES",
                       help="skills read_skill offers, e.g. discover-symbolic-laws (default: all)")
    tools.add_argument("--skills-dir", metavar="DIR",
                       help="folder of custom skills (a sub-folder with a SKILL.md each), "
                            "offered beside the built-in ones; shipped with a cluster run")


def _formula_options(parser: argparse.ArgumentParser) -> None:
    formulas = parser.add_argument_group("formulas", "PySR's limits on what a formula may be")
    formulas.add_argument("--operators", type=name_list, metavar="OPS",
                          help="operators a formula may use, binary and unary in one list, "
                               "e.g. '+,-,*,/,sin,exp' (PySR's names; default: no restriction)")
    formulas.add_argument("--binary-operators", type=name_list, metavar="OPS",
                          help="binary operators a formula may use, from +,-,*,/,^")
    formulas.add_argument("--unary-operators", type=name_list, metavar="OPS",
                          help="unary operators a formula may use, from sqrt,square,cube,exp,"
                               "log,sin,cos,tanh,abs,inv,neg")
    formulas.add_argument("--maxsize", type=int, metavar="N",
                          help="largest complexity (nodes) of a formula found, 3 to 60")
    formulas.add_argument("--nested-constraints", type=json_object, metavar="JSON",
                          help='PySR\'s nested_constraints, e.g. \'{"sin": {"sin": 0, '
                               '"cos": 0}}\' (no sin or cos inside a sin)')
    formulas.add_argument("--constraints", type=json_object, metavar="JSON",
                          help='PySR\'s size constraints, e.g. \'{"^": [-1, 1], "sin": 5}\' '
                               "(largest argument(s) of an operator; -1: no limit)")
    formulas.add_argument("--guess", dest="guesses", action="append", metavar="FORMULA",
                          help="a formula to start from, evaluated with its constants fitted "
                               "at the first step (repeatable; param(\"a\") for a constant)")


def _budget_options(parser: argparse.ArgumentParser) -> None:
    budget = parser.add_argument_group("search budget")
    for flag, name in (("-R", "max_restart_loop"), ("-C", "global_width"),
                       ("-L", "max_refinement_depth"), ("-K", "local_sample_size")):
        budget.add_argument(flag, dest=name, type=int, help=f"{name} ({flag[1]})")
    budget.add_argument("--restart-top-k", type=int,
                        help="pool candidates carried into each restart")
    budget.add_argument("--seed", type=int, default=None, help="sampling and data seed")
    budget.add_argument("--time-limit", type=float, help="wall-clock budget in seconds")
    add_spend_budget_arguments(budget)
    budget.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                        default=None, help="use the whole budget even after an exact fit")


def add_spend_budget_arguments(group: Any) -> None:
    """``--max-cost`` and ``--max-tokens`` (``srh run``, ``srh resume``)."""
    group.add_argument("--max-cost", type=float, metavar="USD",
                       help="spend budget of the run in USD; the run ends interrupted, "
                            "resumable with a higher budget")
    group.add_argument("--max-tokens", type=int, metavar="N",
                       help="token budget of the run (input + output tokens)")


def _validation_options(parser: argparse.ArgumentParser) -> None:
    validation = parser.add_argument_group("validation split")
    validation.add_argument("--validation-fraction", type=float,
                            help="share of samples held out (0 disables; default 0.2)")
    validation.add_argument("--split-by", choices=("random", "ood"),
                            help="random, or ood: hold out the high tail of a variable")
    validation.add_argument("--split-ood-variable", help="the variable of --split-by ood")
    validation.add_argument("--split-random-state", type=int, help="seed of the split")
    validation.add_argument("--evaluator", metavar="FILE",
                            help="a .py file defining one DefaultEvaluator subclass: the run's "
                                 "evaluator (embedded runs only; srh evaluator writes one)")
    validation.add_argument("--selection", choices=("best", "accuracy"),
                            help="how the reported best formula is chosen: best (default: "
                                 "complexity-aware, on the Pareto front) or accuracy (the "
                                 "lowest validation error)")


def _output_options(parser: argparse.ArgumentParser) -> None:
    output = parser.add_argument_group("run and output")
    output.add_argument("--out", help="run directory (default runs/RUN_ID)")
    output.add_argument("--run-id", help="run identifier (default: random)")
    output.add_argument("--config", help="TOML settings file ([search] table); flags win")
    output.add_argument("--json", action="store_true",
                        help="print exactly the SearchResult JSON on stdout")
    output.add_argument("--backend", default="embedded",
                        help="embedded (default) or celery (with srh_workers)")


def _runtime_options(parser: argparse.ArgumentParser) -> None:
    runtime = parser.add_argument_group("runtime")
    runtime.add_argument("--agent-class", default=None, metavar="MODULE:CLASS",
                         help="an SRAgent subclass to run (importable here and on the workers)")
    runtime.add_argument("--branch-threads", type=int, metavar="N",
                         help="embedded: branches of a restart stepping at once (1: in order)")
    runtime.add_argument("--granularity", choices=("auto", "step", "run"),
                         help="celery: a step as tasks, or a whole run as one task "
                              "(auto: run for the offline model)")


def _provider_model(text: str) -> tuple[str, str]:
    provider, _, model = text.partition(":")
    if not provider or not model:
        raise argparse.ArgumentTypeError(f"expected PROVIDER:MODEL, e.g. openai:gpt-4o; "
                                         f"got {text!r}")
    return provider, model


def settings_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The SearchSettings values the flags set (absent flags are left out)."""
    flags = {setting: getattr(args, dest, None) for dest, setting in SETTING_OF_FLAG.items()}
    flags["units"] = run_units(args)
    if flags["weights"] is None and getattr(args, "data", None) and Path(args.data).is_dir():
        flags["weights"] = _manifest_entry(Path(args.data), "weights")
    workspace = flags["workspace"]
    if workspace is not None and not Path(workspace).is_dir():
        raise ConfigurationError(f"--workspace {workspace} is not a directory.",
                                 setting="workspace")
    if flags["evaluator"] is not None:  # the run directory records it; resume from anywhere
        flags["evaluator"] = str(Path(flags["evaluator"]).expanduser().resolve())
    strong = getattr(args, "strong_llm", None)
    if strong is not None:
        flags["strong_llm_provider"], flags["strong_llm_model"] = strong
    operators = getattr(args, "operators", None)
    if operators is not None:
        from srh_core.operators import ALIASES, BINARY_OPERATORS

        binary = [o for o in operators if ALIASES.get(o, o) in BINARY_OPERATORS]
        flags["binary_operators"] = flags["binary_operators"] or binary
        flags["unary_operators"] = flags["unary_operators"] or [
            o for o in operators if o not in binary]
    return {name: value for name, value in flags.items() if value is not None}


def check_data_flags(args: argparse.Namespace) -> None:
    """The --equation options are errors with another data source.

    Raises:
        ConfigurationError: An --equation option was given without --equation.
    """
    if getattr(args, "equation", None):
        return
    given = [name for name in SYNTHETIC_ONLY if getattr(args, name, None) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise ConfigurationError(f"{flag} only applies to --equation data.", setting=given[0])


def synthetic_data(args: argparse.Namespace) -> tuple[dict[str, np.ndarray],
                                                      dict[str, np.ndarray], str, Any]:
    """Data drawn from ``--equation``: features, target, description and the Problem.

    Every feature is drawn i.i.d. from U[--x-low, --x-high] by the suite protocol
    (so the run is judged on fresh points like a suite problem); the noise is
    N(0, (ratio * std(y))^2) on the target only.

    Raises:
        ConfigurationError: The equation does not parse, uses a variable that is
            not a feature, or is not finite on the sampled points.
    """
    import numpy as np

    from srh_core.cli.synthetic import synthetic_problem

    low = DEFAULT_X_LOW if args.x_low is None else args.x_low
    high = DEFAULT_X_HIGH if args.x_high is None else args.x_high
    problem = synthetic_problem(args.equation, features=args.features, target=args.target,
                                x_low=low, x_high=high)
    seed = args.seed or 0
    X, y = problem.sample(args.samples, seed=seed)
    ratio = args.noise_std_ratio or 0.0
    if ratio < 0 or not np.isfinite(ratio):
        raise ConfigurationError(f"--noise-std-ratio must be >= 0; got {ratio}.",
                                 setting="noise_std_ratio")
    if ratio > 0:
        y = y + np.random.default_rng([seed, 2]).normal(0.0, ratio * float(np.std(y)), y.shape)
    text = args.description or (f"Find the formula for {problem.output} as a function of "
                                f"{', '.join(problem.feature_names)}.")
    return X, {problem.output: y}, text, problem

