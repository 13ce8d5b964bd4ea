"""Core CLI commands: run, resume, show, problems, sweep (and the control commands)."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_core.cli import run_options
from srh_core.errors import ConfigurationError
from srh_core.interactive.cli import add_interactive_arguments, interactive_options

if TYPE_CHECKING:  # the handlers import what they use: ``srh --help`` starts at once
    import numpy as np

    from srh_core.agent.settings import SearchSettings
    from srh_core.types import SearchResult

DEFAULT_RUNS_DIR = "runs"


@dataclass(frozen=True, slots=True)
class ProblemData:
    """Data of one run, whichever way it was given."""

    X: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    description: str
    problem: Any = None


def register(subparsers: Any) -> None:
    """Add the core commands to ``srh``'s subparsers."""
    run = subparsers.add_parser("run", help="run a search", description=(
        "Search for a formula. The default runs embedded (no services) with the offline "
        "model."))
    add_run_arguments(run)
    run.set_defaults(handler=handle_run)
    resume = subparsers.add_parser("resume", help=(
        "continue an interrupted run directory, or resume a paused interactive run (a live "
        "run directory, or a cluster run id)"))
    resume.add_argument("run_dir")
    resume.add_argument("--time-limit", type=float, help="new wall-clock budget (seconds)")
    run_options.add_spend_budget_arguments(resume)
    resume.add_argument("--json", action="store_true", help="print the result JSON only")
    add_interactive_arguments(resume)
    resume.set_defaults(handler=handle_resume)
    show = subparsers.add_parser("show", help="show a run directory's result")
    show.add_argument("run_dir")
    show.add_argument("--json", action="store_true", help="print the result JSON only")
    show.set_defaults(handler=handle_show)
    problems = subparsers.add_parser("problems", help="list the built-in problems")
    problems.add_argument("--suite", help="a built-in suite (feynman-public, the default; "
                          "feynman; lsr-transform; lsr-transform-all; strogatz; network) or a "
                          "suite JSON file")
    problems.add_argument("--json", action="store_true")
    problems.set_defaults(handler=handle_problems)
    add_sweep_command(subparsers)


def add_sweep_command(subparsers: Any) -> None:
    """``srh sweep run|report``; plugins add actions through ``srh_core.cli.SWEEP_ACTIONS``."""
    from srh_engine.processes import available_cores

    sweep = subparsers.add_parser(
        "sweep", help="run problems x seeds x settings as many runs, one results table",
        description="Sweeps: problems x seeds x variants, one run per cell. `srh sweep FILE` "
                    "is `srh sweep run FILE`; on the cluster, `srh sweep submit FILE` returns "
                    "at once and the workers coordinate the sweep.")
    actions = sweep.add_subparsers(dest="sweep_action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run", help="run every cell of a sweep file and follow it (a stopped sweep resumes)",
        description="Run every cell of a sweep file; a stopped sweep resumes where it was, "
                    "and a sweep run again runs only the cells missing, failed or cancelled.")
    run.add_argument("suite_file", help="sweep TOML file (see srh_core.sweep.spec)")
    run.add_argument("--out", default=None, help="output directory (default sweeps/NAME)")
    run.add_argument("--backend", default="embedded",
                     help="embedded (default: this machine) or celery (the cluster: submit, "
                          "then follow)")
    run.add_argument("--jobs", type=int, default=available_cores(), metavar="N",
                     help="embedded: cells running at once, each in its own process "
                          "(default: the cores available, here %(default)s)")
    add_sweep_budget_arguments(run)
    run.add_argument("--json", action="store_true", help="print the results table as JSON")
    run.set_defaults(handler=handle_sweep)
    report = actions.add_parser(
        "report", help="solve rates with confidence intervals per variant, and comparisons",
        description="The report of a sweep: NAME (a sweep on the cluster, or sweeps/NAME) or "
                    "the sweep's output directory.")
    report.add_argument("name", help="sweep name or output directory")
    report.add_argument("--json", action="store_true", help="the report as JSON")
    report.add_argument("--format", choices=("md", "csv"), default=None,
                        help="a Markdown table or CSV instead of the text summary")
    report.add_argument("--plot", metavar="PNG", default=None,
                        help="also draw the solve rates with their CIs into this PNG file")
    report.add_argument("--resamples", type=int, default=2000, metavar="N",
                        help="bootstrap resamples of the confidence intervals (>= 1000)")
    report.set_defaults(handler=handle_sweep_report)


def add_sweep_budget_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-cost", type=float, metavar="USD",
                        help="spend budget of the whole sweep (overrides the file's)")
    parser.add_argument("--max-tokens", type=int, metavar="N",
                        help="token budget of the whole sweep (overrides the file's)")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``srh run``, grouped by topic (see :mod:`srh_core.cli.run_options`)."""
    run_options.add_run_arguments(parser)
    add_interactive_arguments(parser)


def settings_from_args(args: argparse.Namespace) -> SearchSettings:
    """Settings from ``--config`` plus the flags given on the command line."""
    from srh_core.agent.settings import SearchSettings
    from srh_core.embedded.run_dir import run_path

    provider, model = _llm(args.llm)
    run_id = args.run_id or uuid.uuid4().hex[:12]
    flags = {"llm_provider": provider, "llm_model": model, "run_id": run_id,
             "save_path": args.out or str(run_path(DEFAULT_RUNS_DIR, run_id)),
             **run_options.settings_flags(args)}
    flags = {name: value for name, value in flags.items() if value is not None}
    if args.config:
        return SearchSettings.from_toml(args.config, **flags)
    return SearchSettings.build(**flags)


def _llm(spec: str | None) -> tuple[str | None, str | None]:
    if spec is None:
        return None, None
    provider, _, model = spec.partition(":")
    return provider, model or None


def load_run_data(args: argparse.Namespace) -> ProblemData:
    """The run's data from ``--problem``, ``--equation`` or ``--data``/``--target``."""
    run_options.check_data_flags(args)
    if getattr(args, "equation", None):
        X, y, text, problem = run_options.synthetic_data(args)
        return ProblemData(X, y, text, problem)
    if args.problem:
        from srh_core.problems import load_suite

        problem = load_suite(args.suite).get(args.problem)
        X, y = problem.sample(args.samples, seed=args.seed or 0, noise=args.noise)
        text = args.description or (f"Find the formula for {problem.output} as a function of "
                                     f"{', '.join(problem.feature_names)}.")
        return ProblemData(X, {problem.output: y}, text, problem)
    if Path(args.data).is_dir():
        return manifest_data(Path(args.data), args.target, args.description)
    if not args.target:
        raise ConfigurationError("--data needs --target NAME (the column to predict).",
                                 setting="target")
    data = _read_data(Path(args.data))
    if args.target not in data:
        raise ConfigurationError(f"Target {args.target!r} is not a column of {args.data}; "
                                 f"columns: {', '.join(data)}.", setting="target")
    X = {name: values for name, values in data.items() if name != args.target}
    text = args.description or f"Find the formula for {args.target} from the other columns."
    return ProblemData(X, {args.target: data[args.target]}, text)


def _read_data(path: Path) -> dict[str, np.ndarray]:
    from srh_core.context import load_tabular

    data, _ = load_tabular(path)
    return dict(data)


def manifest_data(path: Path, target: str | None, description: str | None) -> ProblemData:
    """A ``context.data`` directory as run data, its layout kept: relations, ``num_nodes``,
    edge fields, axes and descriptions travel in a StructuredData (``--target`` or the
    manifest's target)."""
    from srh_core.context import load_context_data
    from srh_core.context.structured import StructuredData

    loaded = load_context_data(path)
    target = target or loaded.get("target")
    axes = {axis for names in loaded["variable_axes"].values() for axis in names}
    variables = [name for name in loaded["data"] if name not in axes]
    if not target:
        raise ConfigurationError(f"{path} names no target in its manifest; give --target NAME "
                                 f"(one of {', '.join(variables)}).", setting="target")
    if target not in variables or target in loaded["relation_names"]:
        raise ConfigurationError(f"Target {target!r} is not a variable of {path}; variables: "
                                 f"{', '.join(variables)}.", setting="target")
    X = StructuredData({name: value for name, value in loaded["data"].items() if name != target},
                       relation_names=loaded["relation_names"], num_nodes=loaded["num_nodes"],
                       variable_structures=loaded["variable_structures"],
                       variable_axes=loaded["variable_axes"],
                       variable_descriptions=loaded["variable_descriptions"],
                       variable_units=loaded["variable_units"])
    text = description or f"Find the formula for {target} from the other variables."
    return ProblemData(X, {target: loaded["data"][target]}, text)


def handle_run(args: argparse.Namespace) -> int:
    from srh_core.cli.plugins import BACKENDS

    backend = BACKENDS.get(args.backend)
    if backend is None:
        hint = " (install srh with its workers package)" if args.backend == "celery" else ""
        raise ConfigurationError(f"Unknown backend {args.backend!r}{hint}; available: "
                                 f"{', '.join(sorted(BACKENDS))}.", setting="backend")
    if args.backend == "embedded":
        cluster_only = [flag for flag, dest in CLUSTER_ONLY_FLAGS if getattr(args, dest, False)]
        if cluster_only:
            raise ConfigurationError(f"The '{cluster_only[0]}' option needs --backend celery "
                                     "(the embedded backend runs here and now).",
                                     setting="backend")
    return backend(args)


#: Flags of ``srh run`` that only a cluster backend honours: (flag, argparse dest).
CLUSTER_ONLY_FLAGS = (("--detach", "detach"), ("--own-key", "own_key"))


def agent_class_from_args(args: argparse.Namespace) -> Any:
    """The SRAgent class ``--agent-class`` names (SRAgent itself by default)."""
    from srh_core.agent import SRAgent, load_agent_class

    path = getattr(args, "agent_class", None)
    return SRAgent if not path else load_agent_class(path)


def run_embedded(args: argparse.Namespace) -> int:
    from srh_core.cli.checks import check_run
    from srh_core.cli.display import ProgressLine
    from srh_core.types import SearchResult

    settings = settings_from_args(args)
    data = load_run_data(args)
    check_run(settings, data)
    if getattr(args, "interactive", False):
        from srh_core.interactive import SRAgentInteractive

        agent = SRAgentInteractive(settings=settings, **interactive_options(args))
    else:
        agent = agent_class_from_args(args)(settings=settings)
    agent.observers.append(ProgressLine(settings.max_nodes))
    result = SearchResult.from_dict(agent.run(data.X, data.y, data.description))
    report_judgement(data, result, settings.save_path)
    return print_result(result, settings, args.json)


def report_judgement(data: ProblemData, result: SearchResult, run_dir: str | None) -> None:
    """For suite problems: judge the best formula on fresh points (stderr + run dir)."""
    if data.problem is None or result.best is None:
        return
    judgement = data.problem.judge(result.best.formula)
    print(f"Judged on 1000 fresh points: solved={judgement.solved} "
          f"max_rel_error={judgement.max_relative_error:.3g} r2={judgement.r2:.12g}",
          file=sys.stderr)
    if run_dir:
        from srh_core.jsonio import atomic_write_json

        atomic_write_json(Path(run_dir) / "judgement.json", judgement.to_dict())


def print_result(result: SearchResult, settings: SearchSettings, as_json: bool) -> int:
    from srh_core.cli.display import summary

    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), allow_nan=False) + "\n")
    else:
        print(summary(result, settings.ranking_metric, settings.save_path,
                      settings.validation_fraction))
    return exit_code(result)


def exit_code(result: SearchResult) -> int:
    if result.status == "failed":
        return 1
    from srh_core.agent.outcome import INTERRUPTED_BY_USER

    if result.status == "interrupted" and result.stop_reason == INTERRUPTED_BY_USER:
        return 130
    return 0


def handle_resume(args: argparse.Namespace) -> int:
    from srh_core.cli.control_commands import apply_and_report, live_target
    from srh_core.embedded.run_dir import RunDirectory
    from srh_core.embedded.runner import resume_search
    from srh_core.interactive import ControlCommand

    live = live_target(args.run_dir)  # a paused interactive run goes on; a stopped one resumes
    if live is not None:
        return apply_and_report(live, ControlCommand("resume"), args.run_dir, args.json)

    overrides = {name: getattr(args, name) for name in ("time_limit", "max_cost", "max_tokens")
                 if getattr(args, name) is not None}
    if args.interactive:
        from srh_core.interactive import SRAgentInteractive

        agent_class: Any = SRAgentInteractive  # resumes with the class's pause defaults
    else:
        from srh_core.agent.sragent import recorded_agent_class

        agent_class = recorded_agent_class(args.run_dir)  # the class the run recorded
    refreshed = RunDirectory(args.run_dir).data_revisions()
    if refreshed:  # stderr: --json keeps stdout one JSON document
        print(f"Resuming on the data refreshed during the run (data revision {refreshed[-1]}, "
              f"{len(refreshed)} refresh(es) recorded in data_revisions/).", file=sys.stderr)
    result = resume_search(args.run_dir, agent_class=agent_class, **overrides)
    settings = RunDirectory(args.run_dir).settings()
    return print_result(result, settings, args.json)


def handle_show(args: argparse.Namespace) -> int:
    from srh_core.embedded.run_dir import RunDirectory

    run_dir = RunDirectory(args.run_dir)
    result = run_dir.result()
    return print_result(result, run_dir.settings(), args.json)


def handle_problems(args: argparse.Namespace) -> int:
    from srh_core.problems import load_suite

    suite = load_suite(args.suite)
    if args.json:
        print(json.dumps({"suite": suite.name, "problems": [problem_row(p)
                                                             for p in suite.problems]}))
        return 0
    print(f"{len(suite.problems)} problems in suite {suite.name!r}:")
    for problem in suite.problems:
        note = "  (excluded)" if getattr(problem, "excluded", None) else ""
        print(f"  {problem.name:<22} {problem.output} <- {', '.join(problem.feature_names)}"
              f"{note}")
    return 0


def problem_row(problem: Any) -> dict[str, Any]:
    """A problem as ``srh problems --json`` lists it (ranges and units when it has them)."""
    import numpy as np

    row: dict[str, Any] = {"name": problem.name, "id": problem.id, "output": problem.output,
                           "formula": problem.formula, "variables": problem.feature_names}
    ranges = getattr(problem, "variables", None)
    if ranges and all(hasattr(v, "low") for v in ranges):
        row["ranges"] = {v.name: [v.low, v.high] if np.isfinite(v.low) else None
                         for v in ranges}
        if any(getattr(v, "units", None) for v in ranges):
            row["units"] = {v.name: v.units for v in ranges}
    for name in ("output_units", "excluded", "title"):
        if (value := getattr(problem, name, None)) is not None:
            row[name] = value
    return row


def load_sweep_from_args(args: argparse.Namespace) -> Any:
    """The sweep file, with the budgets of the command line (``--max-cost``, ``--max-tokens``)."""
    from srh_core.sweep import load_sweep

    spec = load_sweep(args.suite_file)
    budgets = {name: getattr(args, name) for name in ("max_cost", "max_tokens")
               if getattr(args, name, None) is not None}
    for name, value in budgets.items():
        if value < 0:
            raise ConfigurationError(f"--{name.replace('_', '-')} must be >= 0; got {value}.",
                                     setting=name)
    return spec.model_copy(update=budgets)


def handle_sweep(args: argparse.Namespace) -> int:
    spec = load_sweep_from_args(args)
    out = Path(args.out or Path("sweeps") / spec.name)
    return drive_sweep(args, spec, out,
                       lambda rows: print_sweep_rows(spec.name, rows, out, args.json))


def drive_sweep(args: argparse.Namespace, spec: Any, out: Path,
                finish: Callable[[list[dict[str, Any]]], int],
                on_final: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Run ``spec`` on ``args.backend`` (embedded with ``args.jobs``, or a plugin's backend
    or follower), then ``finish`` with its rows; ``srh sweep`` and ``srh benchmark`` share it.

    ``on_final`` gets each cell's row as the cell becomes final during this invocation
    (on the cluster: as the follower sees it), so a caller can record it at once."""
    from srh_core.cli.plugins import SWEEP_BACKENDS, SWEEP_FOLLOWERS
    from srh_core.sweep import EmbeddedSweepBackend, SweepRunner

    if args.jobs < 1:
        raise ConfigurationError(f"--jobs must be at least 1; got {args.jobs}.", setting="jobs")
    if args.backend in SWEEP_FOLLOWERS:  # coordinated elsewhere: submit, then follow
        return int(SWEEP_FOLLOWERS[args.backend](args, spec, out, finish=finish,
                                                 on_final=on_final))
    if args.backend == "embedded":
        backend: Any = EmbeddedSweepBackend(out / "runs", jobs=args.jobs)
    elif args.backend in SWEEP_BACKENDS:
        backend = SWEEP_BACKENDS[args.backend](args)
    else:
        raise ConfigurationError(f"Unknown sweep backend {args.backend!r}; available: "
                                 f"{', '.join(['embedded', *sorted(SWEEP_BACKENDS)])}.",
                                 setting="backend")
    return finish(SweepRunner(spec, out, backend, on_final=on_final).run())


def print_sweep_rows(name: str, rows: list[dict[str, Any]], out: Path, as_json: bool) -> int:
    """The end of a followed sweep: its table (JSON) or where it is and what must be re-run."""
    unfinished = [row for row in rows if row["status"] != "done"]
    if as_json:
        print(json.dumps({"sweep": name, "rows": rows}, default=str))
    else:
        print(f"Sweep {name}: {len(rows) - len(unfinished)}/{len(rows)} cells done; "
              f"table in {out / 'results.csv'}; report: srh sweep report {out}")
        for row in unfinished:
            print(f"  must be re-run: {row['label']} ({row['status']}: {row['error']})")
    return 0 if not unfinished else 1


def sweep_source(name: str) -> tuple[str, str, list[dict[str, Any]]]:
    """(sweep name, status, rows) of a sweep directory, or of a sweep a plugin knows."""
    from srh_core.cli.plugins import SWEEP_SOURCES
    from srh_core.sweep.runner import FileSweepState, sweep_status, table_row

    for folder in (Path(name), Path("sweeps") / name):
        state = FileSweepState(folder, folder.name)
        if state.path.is_file():
            entries = state.load()
            label = str(read_json_file(state.path).get("sweep") or folder.name)
            return label, sweep_status(entries, None), [table_row(cell_id, entry)
                                                        for cell_id, entry in entries.items()]
    for source in SWEEP_SOURCES:
        found = source(name)
        if found is not None:
            return found
    raise ConfigurationError(f"No sweep {name!r}: not a sweep directory (with sweep.json), not "
                             f"sweeps/{name}, and no cluster sweep of that name.")


def read_json_file(path: Path) -> dict[str, Any]:
    from srh_core.jsonio import read_json

    return dict(read_json(path))


def handle_sweep_report(args: argparse.Namespace) -> int:
    from srh_core.sweep.report import build_report, format_csv, format_markdown, plot_report

    if args.resamples < 1000:
        raise ConfigurationError(f"--resamples must be at least 1000; got {args.resamples}.",
                                 setting="resamples")
    name, status, rows = sweep_source(args.name)
    report = build_report(name, status, rows, resamples=args.resamples)
    if args.plot:
        plot_report(report, Path(args.plot))
    if args.json:
        print(json.dumps(report, default=str))
    elif args.format == "csv":
        print(format_csv(report), end="")
    else:
        print(format_markdown(report))
    return 0


