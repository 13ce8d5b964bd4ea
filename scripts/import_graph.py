"""The import graph of the srh_* packages: module cycles and imports inside functions.

Reads every ``srh_*`` module with ``ast`` (nothing is imported) and builds the
graph of their imports of each other: an edge A -> B when A imports B at
module level, or inside a function (``typing.TYPE_CHECKING`` blocks are not
imports at run time and are left out). ``from P import name`` is an edge to
``P.name`` when that is a module, to the module P's ``lazy_exports`` table
names for ``name`` (the import loads it), else to ``P``.

- A *cycle* is a strongly connected component of more than one module (Python
  can only load one when some of its edges are imports inside functions, which
  run later): each is printed with the edges that close it.
- *Inner imports* are imports of srh_* modules inside functions, counted
  outside the entry points (:data:`ENTRY_POINTS`, each with its reason: the
  command line, the engine's method facade, the worker bootstrap, the web
  routes), where lazy loading is the point: a command imports what it uses.
  Everywhere else a module imports at module level (tests/test_import_graph.py
  fails on an inner import outside the entry points).

Usage: python scripts/import_graph.py [ROOT] [--json out.json]
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGES = ("srh_engine", "srh_core", "srh_workers", "srh_web")
#: The entry points: modules whose imports inside functions are the sanctioned lazy
#: loading, each pattern (matched against the whole dotted module name) with its reason.
#: Anywhere else an srh_* import inside a function is counted, and
#: tests/test_import_graph.py fails on it.
ENTRY_POINTS: dict[str, str] = {
    r"(\w+\.)*\w*cli(\.\w+)*": "command line: `srh` registers every command at start-up "
                             "(`srh --help` under 0.3 s); a command's handler imports what "
                             "it uses when it runs",
    r"srh_engine\.expression_methods": "the engine's method facade: Expression.evaluate, "
                                       ".fit, .to_str, ... call the modules that build the "
                                       "node classes (the one allowed cycle)",
    r"srh_workers\.app": "worker bootstrap: the worker-start handlers load the watchdog, "
                         "the sweep coordinator, artifacts and the endpoint publisher; a "
                         "submitter that imports the app to send tasks loads none of them",
    r"srh_core\.api\.endpoints": "model-client factory: build_api loads the OpenAI adapter "
                                 "(the openai SDK, 0.7 s of imports) when a run builds its "
                                 "first client; the endpoint registry, and the settings "
                                 "that read it, stay light",
    r"srh_core\.agent\.(base|conversation)": "an agent's run-time machinery: the tool "
                                              "executor (code sandbox, process pools), "
                                              "custom-tool discovery and SRAgent load when "
                                              "an agent runs; `srh web` imports the agent "
                                              "classes for its panels and loads none of it",
    r"srh_workers\.endpoints": "the cluster's quota gates: the gate factory loads "
                               "srh_workers.quota (Redis, and the openai SDK through "
                               "srh_core.api.gate) when a worker makes its gates; a "
                               "submitter publishing or reading endpoints does not",
    r"srh_web\.(app|cluster|sweep_reader|views)": "web routes: `srh web` serves pages "
                                                 "without NumPy, Celery or a Redis client; "
                                                 "a route loads the engine, the sweep "
                                                 "reader or the cluster client on the "
                                                 "request that needs it",
}
_ENTRY_POINT = {pattern: re.compile(pattern) for pattern in ENTRY_POINTS}


def entry_point(module: str) -> str | None:
    """The ENTRY_POINTS pattern ``module`` falls under (None: not an entry point)."""
    return next((pattern for pattern, regex in _ENTRY_POINT.items()
                 if regex.fullmatch(module)), None)


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    inner: bool  # the import is inside a function
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Every srh_* module under ``root`` by dotted name (packages by their ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, inner: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Import statements with whether they sit inside a function (TYPE_CHECKING skipped)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            yield from (item for child in node.orelse for item in _imports_of(child, inner))
            continue
        yield from _imports_of(node, inner)


def _imports_of(node: ast.AST, inner: bool) -> Iterator[tuple[ast.stmt, bool]]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, inner
        return
    nested = inner or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    yield from _imports(node, nested)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def lazy_tables(trees: dict[str, ast.Module]) -> dict[str, dict[str, str]]:
    """Each package's ``lazy_exports`` table (name -> defining module), read from its
    ``__init__``: ``from package import name`` loads that module, so it is the edge."""
    tables = {}
    for module, tree in trees.items():
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2
                 and isinstance(node.args[1], ast.Name)]
        for call in calls:
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and getattr(node.targets[0], "id", None) == call.args[1].id):
                    table = ast.literal_eval(node.value)
                    tables[module] = {name: target if "." in target else f"{module}.{target}"
                                      for name, target in table.items()}
    return tables


def edges(root: Path) -> tuple[dict[str, Path], list[Edge]]:
    found = modules(root)
    trees = {module: ast.parse(path.read_text(encoding="utf-8"))
             for module, path in found.items()}
    lazy = lazy_tables(trees)
    result = []
    for module, path in found.items():
        tree = trees[module]
        is_package = path.name == "__init__.py"
        for node, inner in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, node, is_package)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in found
                           else lazy.get(base, {}).get(alias.name, base) for alias in node.names]
            for target in dict.fromkeys(targets):
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    result.append(Edge(module, target, inner, node.lineno))
    return found, result


def cycles(names: list[str], graph: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    adjacent: dict[str, set[str]] = {name: set() for name in names}
    for edge in graph:
        adjacent[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for start in names:
        if start in index:
            continue
        work = [(start, iter(sorted(adjacent[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacent[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def measure(root: Path) -> dict[str, Any]:
    found, graph = edges(root)
    found_cycles = cycles(sorted(found), graph)
    inner = [edge for edge in graph if edge.inner and not entry_point(edge.source)]
    lazy = [edge for edge in graph if edge.inner and entry_point(edge.source)]
    return {
        "modules": len(found),
        "cycles": [{"modules": component,
                    "edges": [f"{e.source} -> {e.target}{' (in a function)' if e.inner else ''}"
                              for e in graph if e.source in component and e.target in component]}
                   for component in found_cycles],
        "inner_imports": len(inner),
        "inner_imports_by_package": {package: sum(e.source.split(".")[0] == package
                                                  for e in inner) for package in PACKAGES},
        "inner_imports_all": sum(edge.inner for edge in graph),
        "inner_imports_outside_entry_points": [
            f"{e.source}:{e.line} -> {e.target}" for e in inner],
        "entry_points": [{"pattern": pattern, "reason": reason,
                          "modules": sorted({e.source for e in lazy
                                             if entry_point(e.source) == pattern}),
                          "inner_imports": sum(entry_point(e.source) == pattern for e in lazy)}
                         for pattern, reason in ENTRY_POINTS.items()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--json", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    report = measure(Path(args.root))
    print(f"{report['modules']} modules, {len(report['cycles'])} import cycles, "
          f"{report['inner_imports']} srh_* imports inside functions outside entry points "
          f"({report['inner_imports_all']} in all)")
    print("cycle | modules | edges")
    print("--- | --- | ---")
    for number, cycle in enumerate(report["cycles"], 1):
        print(f"{number} | {', '.join(cycle['modules'])} | {'; '.join(cycle['edges'])}")
    print()
    print("entry point | modules | inner imports | why imports there sit inside functions")
    print("--- | --- | --- | ---")
    for entry in report["entry_points"]:
        print(f"{entry['pattern']} | {len(entry['modules'])} | {entry['inner_imports']} | "
              f"{entry['reason']}")
    if report["inner_imports_outside_entry_points"]:
        print()
        print("srh_* imports inside functions outside the entry points:")
        for line in report["inner_imports_outside_entry_points"]:
            print(f"  {line}")
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
