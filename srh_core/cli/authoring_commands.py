"""``srh prepare`` and ``srh evaluator``: the authoring agents from the command line.

``srh prepare INSTRUCTION --workspace DIR --llm PROVIDER:MODEL`` runs a
:class:`~srh_core.agent.DataPreparationAgent` in DIR: exit 0 when
``DIR/context.data`` was validated and committed, 1 when the model ended
without valid data (every problem printed). ``srh evaluator INSTRUCTION
--workspace DIR --llm PROVIDER:MODEL [--data PATH]`` runs an
:class:`~srh_core.agent.EvaluatorConstructionAgent` on the data (default
``DIR/context.data``): exit 0 when a file of ``DIR/context.evaluator/`` was
proved valid in its final version, 1 otherwise. ``--llm offline`` (the
default, as for ``srh run``) is refused with exit 2: the offline proposer is
not a language model and cannot author files. Nothing here runs on a cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``srh prepare`` and ``srh evaluator``."""
    prepare = subparsers.add_parser(
        "prepare", help="a model turns workspace files into a context.data directory",
        description="The data-preparation agent: the model reads the workspace (and the web, "
                    "when the tools allow), writes WORKSPACE/context.data and validates it; the "
                    "harness commits it only when it is valid. Search it with "
                    "`srh run --data WORKSPACE/context.data`.")
    add_common_arguments(prepare)
    prepare.set_defaults(handler=handle_prepare)
    evaluator = subparsers.add_parser(
        "evaluator", help="a model writes and proves a custom evaluator",
        description="The evaluator-construction agent: the model writes a DefaultEvaluator "
                    "subclass under WORKSPACE/context.evaluator/ and proves it on the data in "
                    "the sandbox. Use it with `srh run --evaluator FILE`.")
    add_common_arguments(evaluator)
    evaluator.add_argument("--data", help="the data to prove it on: a CSV file or a "
                           "context.data directory (default WORKSPACE/context.data)")
    evaluator.add_argument("--target", help="target column (required for CSV data)")
    evaluator.add_argument("--validation-fraction", type=float, default=0.25,
                           help="share of samples held out (default 0.25)")
    evaluator.set_defaults(handler=handle_evaluator)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("instruction", help="what you want, in words")
    parser.add_argument("--workspace", required=True, metavar="DIR",
                        help="the folder the model works in (created when missing)")
    parser.add_argument("--llm", default="offline",
                        help="PROVIDER:MODEL (offline, the default, cannot author files)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint URL")
    parser.add_argument("--max-steps", type=int, default=None, metavar="N",
                        help="model responses at most")
    parser.add_argument("--tools", type=_names, metavar="NAMES",
                        help="tools offered (comma separated; default: the agent's)")
    parser.add_argument("--skills", type=_names, metavar="NAMES",
                        help="skills read_skill offers (comma separated)")
    parser.add_argument("--skills-dir", metavar="DIR", help="folder of custom skills")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def agent_options(args: argparse.Namespace) -> dict[str, Any]:
    provider, _, model = args.llm.partition(":")
    options = {"llm_provider": provider, "llm_model": model or None, "base_url": args.base_url,
               "tools": args.tools, "skills": args.skills, "skills_dir": args.skills_dir}
    if args.max_steps is not None:
        options["max_steps"] = args.max_steps
    return options


def workspace_of(args: argparse.Namespace) -> Path:
    from srh_core.cli.checks import check_writable_directory

    check_writable_directory(args.workspace, "--workspace")
    folder = Path(args.workspace)
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


def handle_prepare(args: argparse.Namespace) -> int:
    from srh_core.agent import DataPreparationAgent
    from srh_core.context import AgentContext

    folder = workspace_of(args)
    context = AgentContext(args={"workspace": str(folder)}, workspace=str(folder))
    agent = DataPreparationAgent(context=context, **agent_options(args))
    result = agent.run(args.instruction)
    if args.json:
        return emit_json(result, 0 if result["committed"] else 1)
    print(result["message"])
    report = result["validation"]
    if result["committed"]:
        schema = result["context"]
        print(f"committed {folder / 'context.data'}: target {schema['target']}, features "
              f"{', '.join(schema['features'])}, {schema['n_samples']} samples", file=sys.stderr)
        return 0
    if report is None:
        print(f"not committed: the model wrote no {folder / 'context.data'}", file=sys.stderr)
    else:
        print(f"not committed: {len(report['errors'])} problem(s) in context.data",
              file=sys.stderr)
        for issue in report["errors"]:
            print(f"  - {issue['location']}: {issue['message']}", file=sys.stderr)
    return 1


def handle_evaluator(args: argparse.Namespace) -> int:
    from srh_core.agent import EvaluatorConstructionAgent
    from srh_core.cli.tool_commands import context_from_data
    from srh_core.errors import ConfigurationError

    folder = workspace_of(args)
    data = Path(args.data) if args.data else folder / "context.data"
    if not data.exists():
        raise ConfigurationError(f"No data to prove an evaluator on: {data} does not exist; "
                                 "give --data (a CSV file with --target, or a context.data "
                                 "directory).", setting="data")
    context = context_from_data(data, args.target, {
        "validation_fraction": args.validation_fraction, "workspace": str(folder)})
    agent = EvaluatorConstructionAgent(context=context, **agent_options(args))
    result = agent.run(args.instruction)
    if args.json:
        return emit_json(result, 0 if result["valid"] else 1)
    print(result["message"])
    if result["valid"]:
        print(f"validated evaluator: {result['evaluator_path']}; use it with "
              f"`srh run --evaluator {result['evaluator_path']}`", file=sys.stderr)
        return 0
    unproved = ", ".join(result["unproved"]) or "none written"
    print(f"no validated evaluator (files not proved: {unproved}; stopped: "
          f"{result['stopped']})", file=sys.stderr)
    return 1


def emit_json(result: dict[str, Any], code: int) -> int:
    from srh_core.types import json_value

    sys.stdout.write(json.dumps(json_value(result), allow_nan=False) + "\n")
    return code
