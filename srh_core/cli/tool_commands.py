"""``srh tool list | schema NAME | call NAME``: the tools, outside any search.

``call`` runs one tool on a data file exactly as the agent would (the same
context, split and execution boundary) and prints its text for the model, or
the whole ToolCallResult with ``--json``. Exit code 0 when the call succeeded,
1 when the tool answered ``ok=False``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from srh_core.errors import ConfigurationError

DESCRIPTION_WIDTH = 72
#: Deepest nesting of --params (json.loads recurses once per level; tools need 2 or 3).
MAX_PARAMS_DEPTH = 32


def register(subparsers: Any) -> None:
    """Add ``srh tool`` and its subcommands."""
    tool = subparsers.add_parser("tool", help="list, describe or call a tool",
                                 description="The tools the model can call, outside a search.")
    actions = tool.add_subparsers(dest="tool_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every registered tool")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=handle_list)
    schema = actions.add_parser("schema", help="a tool's function schema (JSON)")
    schema.add_argument("name", help="tool name (or alias)")
    schema.set_defaults(handler=handle_schema)
    call = actions.add_parser("call", help="run one tool call on a data file")
    call.add_argument("name", help="tool name (or alias)")
    call.add_argument("--data", required=True, help="a CSV file or a context.data dir")
    call.add_argument("--target", help="target column (required for CSV data)")
    call.add_argument("--params", default="{}", help='arguments as a JSON object, e.g. '
                      '\'{"f": "x1*x2"}\'')
    call.add_argument("--validation-fraction", type=float, default=0.0,
                      help="share of samples held out (default 0: no validation split)")
    call.add_argument("--workspace", metavar="DIR", help="workspace of the workspace tools")
    call.add_argument("--skills-dir", metavar="DIR",
                      help="folder of custom skills read_skill offers beside the built-in ones")
    call.add_argument("--skills", type=lambda text: [p.strip() for p in text.split(",")
                                                     if p.strip()],
                      metavar="NAMES", help="skills read_skill offers (default: all)")
    call.add_argument("--evaluator", metavar="FILE", type=Path,
                      help="a custom evaluator (.py defining a DefaultEvaluator subclass) that "
                           "fits and scores formulas, as `srh run --evaluator` uses it")
    call.add_argument("--llm", metavar="PROVIDER:MODEL",
                      help="the model call_llm and subagent ask (default: none)")
    call.add_argument("--base-url", help="OpenAI-compatible endpoint URL of --llm")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    call.set_defaults(handler=handle_call)


def handle_list(args: argparse.Namespace) -> int:
    from srh_core.tools.base import TOOLS, BaseTool

    aliases: dict[str, list[str]] = {}
    for alias, name in sorted(TOOLS.aliases().items()):
        aliases.setdefault(name, []).append(alias)
    rows = [_row(BaseTool.get_class(name), aliases.get(name, []))
            for name in BaseTool.registered_names()]
    if args.json:
        print(json.dumps({"tools": rows}))
        return 0
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        note = f" (alias {', '.join(row['aliases'])})" if row["aliases"] else ""
        unavailable = f" [unavailable: {row['unavailable']}]" if row["unavailable"] else ""
        print(f"{row['name']:<{width}}  {_clip(row['summary'])}{note}{unavailable}")
    return 0


def _clip(text: str) -> str:
    return text if len(text) <= DESCRIPTION_WIDTH else text[:DESCRIPTION_WIDTH - 3] + "..."


def _row(tool_class: Any, aliases: list[str]) -> dict[str, Any]:
    description = tool_class.metadata.description or ""
    return {"name": tool_class.metadata.name, "aliases": aliases,
            "summary": description.strip().splitlines()[0] if description.strip() else "",
            "unavailable": tool_class.availability()}


def handle_schema(args: argparse.Namespace) -> int:
    print(json.dumps(_tool_class(args.name).to_dict(), indent=2))
    return 0


def handle_call(args: argparse.Namespace) -> int:
    values = {}
    if args.skills_dir is not None or args.skills is not None:
        from srh_core.skills import CustomToolError, run_skill_manager
        from srh_core.tools.custom_tools import discover_custom_tools

        values["skill_manager"] = run_skill_manager(args.skills_dir, args.skills)
        try:  # a skill's tool.py is a tool of its own
            discover_custom_tools(values["skill_manager"])
        except CustomToolError as error:
            raise ConfigurationError(str(error), setting="skills_dir") from None
    tool_class = _tool_class(args.name)
    params = _params(args.params)
    context = context_from_data(Path(args.data), args.target, {
        "validation_fraction": args.validation_fraction, "workspace": args.workspace})
    if args.evaluator is not None:  # the submitter's own code, loaded as `srh run` loads it
        from srh_core.evaluator import load_custom_evaluator

        context.evaluator = load_custom_evaluator(args.evaluator)
    if args.llm is not None:  # the model of call_llm and subagent (this process's access)
        from srh_core.agent.settings import SearchSettings

        provider, _, model = args.llm.partition(":")
        values["settings"] = SearchSettings.build(llm_provider=provider, llm_model=model or None,
                                                  base_url=args.base_url)
    result = tool_class(context=context, **values)(**params)
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), allow_nan=False) + "\n")
    else:
        print(result.result_str)
    return 0 if result.ok else 1


def _tool_class(name: str) -> Any:
    from srh_core.errors import ToolError
    from srh_core.tools.base import BaseTool

    try:
        return BaseTool.get_class(name)
    except ToolError as error:
        raise ConfigurationError(str(error), setting="name") from None


def _params(text: str) -> dict[str, Any]:
    from srh_core.json_limits import depth_problem

    if problem := depth_problem(text, MAX_PARAMS_DEPTH, "--params"):
        raise ConfigurationError(problem, setting="params")
    try:
        params = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"--params is not valid JSON ({error.msg} at character "
                                 f"{error.pos}); write an object, e.g. '{{\"f\": \"x1\"}}'.",
                                 setting="params") from None
    if not isinstance(params, dict):
        raise ConfigurationError(f"--params must be a JSON object; got "
                                 f"{type(params).__name__}.", setting="params")
    return params


def context_from_data(path: Path, target: str | None, settings: dict[str, Any]) -> Any:
    """The tool's context: a context.data directory (with its manifest), or a table."""
    from srh_core.context import AgentContext, load_context_data, load_tabular

    if path.is_dir():
        context = AgentContext(args=settings)
        context.commit_context_data(load_context_data(path))
        if target is not None:
            context.update_selection(target=target, features=[
                name for name in context.variable_names() if name != target])
        return context
    if target is None:
        raise ConfigurationError("--data FILE needs --target NAME (the column to predict).",
                                 setting="target")
    data, _ = load_tabular(path)
    if target not in data:
        raise ConfigurationError(f"Target {target!r} is not a column of {path}; columns: "
                                 f"{', '.join(data)}.", setting="target")
    return AgentContext(args=settings, data=dict(data), target=target)
