"""No import cycle among the srh_* modules beyond the few listed here, and no srh_* import
inside a function outside the entry points that scripts/import_graph.py lists (ENTRY_POINTS)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The cycles still allowed: each a set of modules a found cycle must lie within.
ALLOWED_CYCLES = [
    # stays: the engine's method facade. Expression.evaluate/fit/to_str/... (the engine's
    # public API, srh_engine.expression_methods) call the modules that define those
    # functions, and those modules build and read the node classes; the methods import
    # them when called.
    {"srh_engine.canonical", "srh_engine.derivative", "srh_engine.desugaring",
     "srh_engine.evaluation", "srh_engine.expression_methods", "srh_engine.fitting",
     "srh_engine.graph_analysis", "srh_engine.graph_evaluation", "srh_engine.graph_nodes",
     "srh_engine.graph_plans", "srh_engine.graph_relations", "srh_engine.nodes",
     "srh_engine.optimizers", "srh_engine.problem", "srh_engine.rendering",
     "srh_engine.transform"},
]


def import_graph():
    """scripts/import_graph.py as a module (scripts/ is not a package)."""
    if "import_graph" not in sys.modules:
        spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" /
                                                      "import_graph.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["import_graph"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["import_graph"]


@functools.cache
def repository_report() -> dict:
    """The import graph of this repository, scanned once for the tests that read it (a
    scan parses every module: seconds)."""
    return import_graph().measure(ROOT)


def test_no_import_cycle_beyond_the_allowed_ones():
    report = repository_report()
    new = [cycle for cycle in report["cycles"]
           if not any(set(cycle["modules"]) <= allowed for allowed in ALLOWED_CYCLES)]
    assert not new, "new import cycles:\n" + "\n".join(
        "; ".join(cycle["edges"]) for cycle in new)


def test_no_srh_import_inside_a_function_outside_the_entry_points():
    report = repository_report()
    assert not report["inner_imports_outside_entry_points"], (
        "import these at module level (or, for a true lazy entry point, list its module in "
        "scripts/import_graph.py ENTRY_POINTS with the reason):\n"
        + "\n".join(report["inner_imports_outside_entry_points"]))


def test_an_entry_points_inner_import_is_not_counted_and_a_lazy_name_is_an_edge(tmp_path):
    package = tmp_path / "srh_core"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from srh_engine.lazy import lazy_exports\n\n_LAZY = {'Thing': 'low'}\n"
        "__getattr__, __dir__ = lazy_exports(__name__, _LAZY)\n")
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "commands.py").write_text("def run():\n    from srh_core import Thing\n")
    (package / "low.py").write_text("Thing = 1\n")
    (package / "high.py").write_text("def late():\n    from srh_core import Thing\n")
    report = import_graph().measure(tmp_path)
    assert report["inner_imports_outside_entry_points"] == ["srh_core.high:2 -> srh_core.low"]
    assert report["inner_imports_all"] == 2


def test_the_scan_finds_a_cycle_closed_inside_a_function(tmp_path):
    package = tmp_path / "srh_core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def late():\n    from srh_core import high\n")
    (package / "high.py").write_text(
        "from typing import TYPE_CHECKING\n\nfrom srh_core.low import late\n\n"
        "if TYPE_CHECKING:\n    from srh_core import other\n")
    (package / "other.py").write_text("from . import high\n")
    report = import_graph().measure(tmp_path)
    assert [cycle["modules"] for cycle in report["cycles"]] == [["srh_core.high",
                                                                 "srh_core.low"]]
    assert report["inner_imports"] == 1
