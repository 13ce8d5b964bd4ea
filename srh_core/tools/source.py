"""``read_source``: read the harness's own installed source, or find a Python symbol in it.

The evaluator-construction agent reads :mod:`srh_core.evaluator` before it
subclasses ``DefaultEvaluator``; any model may look up how a tool or a
metric is implemented. Paths are relative to the directory holding the
packages (``srh_core/evaluator/default.py``); only the packages in
:data:`SOURCE_PACKAGES` are readable, only text files of the suffixes in
:data:`SOURCE_SUFFIXES`, each at most :data:`MAX_SOURCE_CHARS` characters, and
a symbol query returns at most :data:`MAX_SYMBOL_RESULTS` matches. Symbols are
found by parsing (``ast``), never by importing or running anything.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool

SOURCE_PACKAGES = ("srh_core", "srh_engine", "srh_workers", "srh_web")
SOURCE_SUFFIXES = frozenset({".py", ".md", ".json", ".toml", ".txt", ".html"})
MAX_SOURCE_CHARS = 200_000
MAX_SYMBOL_RESULTS = 50
MAX_DIRECTORY_ENTRIES = 400


@lru_cache(maxsize=1)
def package_roots() -> dict[str, Path]:
    """Installed package directories by name (found without importing the packages)."""
    roots = {}
    for name in SOURCE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots[name] = Path(next(iter(spec.submodule_search_locations))).resolve()
    return roots


def resolve_source(path: str) -> tuple[Path | None, str]:
    """The file or directory ``path`` names, and its display path; (None, "") is every package.

    Raises:
        ToolArgumentError: The path leaves the packages, or names none of them.
    """
    text = path.strip().strip("/").removeprefix("src/")
    if text in ("", ".", "src"):
        return None, ""
    parts = Path(text).parts
    roots = package_roots()
    if parts[0] not in roots or ".." in parts:
        raise ToolArgumentError(f"path must lie inside one of the packages "
                                f"{', '.join(sorted(roots))} (e.g. 'srh_core/evaluator'). Got "
                                f"{path!r} instead.", parameter="path")
    root = roots[parts[0]]
    resolved = root.joinpath(*parts[1:]).resolve()
    if resolved != root and root not in resolved.parents:
        raise ToolArgumentError(f"path {path!r} leaves the package {parts[0]}.",
                                parameter="path")
    if not resolved.exists():
        raise ToolArgumentError(f"No source path {path!r}.", parameter="path")
    return resolved, "/".join(parts)


def display(path: Path) -> str:
    for name, root in package_roots().items():
        if path == root or root in path.parents:
            return "/".join((name, *path.relative_to(root).parts))
    return path.name


def python_files(target: Path | None) -> list[Path]:
    roots = list(package_roots().values()) if target is None else [target]
    files = []
    for root in roots:
        found = [root] if root.is_file() else sorted(root.rglob("*.py"))
        files += [f for f in found if f.suffix == ".py" and "__pycache__" not in f.parts]
    return files


@BaseTool.register("read_source")
class ReadSourceTool(BaseTool):
    """Inspect installed source files and locate symbol definitions or references."""

    result_str_limit = 20_000

    def execute(self, path: str | None = None, symbol: str | None = None,
                include_implementation: bool = True, include_references: bool = False
                ) -> dict[str, Any]:
        """Read a source file, list a source directory, or locate a Python symbol.

        Paths are relative to the installed packages, e.g. 'srh_core/evaluator/default.py';
        omit path to list the packages (or to search all of them for a symbol).

        Args:
            path: File or directory inside srh_core, srh_engine, srh_workers or srh_web.
            symbol: Qualified or plain Python name to locate, e.g. DefaultEvaluator.evaluate.
            include_implementation: Whether a symbol query returns its definitions.
            include_references: Whether a symbol query returns where it is used.
        """
        target, shown = resolve_source(path or "")
        if symbol:
            if not include_implementation and not include_references:
                raise ToolArgumentError("A symbol query must ask for the implementation, the "
                                        "references, or both.", parameter="symbol")
            return self.find_symbol(target, shown, symbol.strip(), include_implementation,
                                    include_references)
        if target is None:
            return {"type": "directory", "path": "", "entries": sorted(package_roots())}
        if target.is_dir():
            entries = sorted(display(p) for p in target.rglob("*")
                             if p.is_file() and p.suffix in SOURCE_SUFFIXES
                             and "__pycache__" not in p.parts)
            return {"type": "directory", "path": shown,
                    "entries": entries[:MAX_DIRECTORY_ENTRIES],
                    "omitted": max(0, len(entries) - MAX_DIRECTORY_ENTRIES)}
        if target.suffix not in SOURCE_SUFFIXES:
            suffixes = ", ".join(sorted(SOURCE_SUFFIXES))
            raise ToolArgumentError(f"{shown} is not a source file ({suffixes}).",
                                    parameter="path")
        source = target.read_text(encoding="utf-8", errors="replace")
        if len(source) > MAX_SOURCE_CHARS:
            raise ToolArgumentError(f"{shown} has {len(source)} characters, more than "
                                    f"{MAX_SOURCE_CHARS}; query a symbol in it instead.",
                                    parameter="path")
        return {"type": "file", "path": shown, "source": source}

    def find_symbol(self, target: Path | None, shown: str, symbol: str, implementation: bool,
                    references: bool) -> dict[str, Any]:
        definitions: list[dict[str, Any]] = []
        usages: list[dict[str, Any]] = []
        for file in python_files(target):
            self.check_cancelled()
            source = file.read_text(encoding="utf-8", errors="replace")
            if len(source) > MAX_SOURCE_CHARS:
                continue
            found = _SymbolFinder(display(file), source, symbol)
            definitions += found.definitions if implementation else []
            usages += found.references if references else []
            if len(definitions) + len(usages) >= MAX_SYMBOL_RESULTS:
                break
        definitions = definitions[:MAX_SYMBOL_RESULTS]
        return {"type": "symbol", "path": shown, "symbol": symbol, "definitions": definitions,
                "references": usages[:MAX_SYMBOL_RESULTS - len(definitions)]}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The file's text, the directory's files, or each definition and reference."""
        if result["type"] == "directory":
            more = f"\n... {result['omitted']} more" if result.get("omitted") else ""
            return (f"Source tree {result['path'] or '(packages)'}:\n"
                    + "\n".join(result["entries"]) + more)
        if result["type"] == "file":
            return f"Source {result['path']}:\n```\n{result['source']}\n```"
        lines = [f"Symbol {result['symbol']} in {result['path'] or 'all packages'}:"]
        for item in result["definitions"]:
            lines.append(f"Definition {item['path']}:{item['line']} {item['qualified_name']}\n"
                         f"```python\n{item['source']}\n```")
        for item in result["references"]:
            lines.append(f"Reference {item['path']}:{item['line']}: {item['source']}")
        if len(lines) == 1:
            lines.append("No definition or reference found.")
        return "\n".join(lines)


class _SymbolFinder(ast.NodeVisitor):
    """Definitions (by qualified name) and references of ``symbol`` in one module."""

    def __init__(self, path: str, source: str, symbol: str) -> None:
        self.path, self.symbol = path, symbol
        self.lines = source.splitlines()
        self.scope: list[str] = []
        self.definitions: list[dict[str, Any]] = []
        self.references: list[dict[str, Any]] = []
        try:
            self.visit(ast.parse(source))
        except SyntaxError:
            pass

    def matches(self, name: str) -> bool:
        return name == self.symbol or name.endswith("." + self.symbol)

    def definition(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qualified = ".".join([*self.scope, node.name])
        if self.matches(qualified):
            self.definitions.append({
                "path": self.path, "line": node.lineno, "qualified_name": qualified,
                "source": "\n".join(self.lines[node.lineno - 1:node.end_lineno])})
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = definition

    def reference(self, node: ast.expr, name: str) -> None:
        self.references.append({"path": self.path, "line": node.lineno, "reference": name,
                                "source": self.lines[node.lineno - 1].strip()})

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _dotted(node)
        if name and self.matches(name):
            self.reference(node, name)
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if "." not in self.symbol and node.id == self.symbol:
            self.reference(node, node.id)


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None
