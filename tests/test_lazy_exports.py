"""Packages that load their names on first use: every name they list resolves.

A name added to ``__all__`` (or to the lazy table) without its module entry only fails
when a caller first touches it, far from the change; this finds it at once.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = ["srh_engine", "srh_engine.search", "srh_core", "srh_core.api",
                 "srh_core.agent", "srh_core.interactive", "srh_core.tools", "srh_workers.store",
                 "srh_workers.sweeps"]


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_listed_name_of_a_lazy_package_resolves(name: str) -> None:
    package = importlib.import_module(name)
    lazy = getattr(package, "_LAZY", {})
    for exported in [*package.__all__, *lazy]:
        assert getattr(package, exported) is not None, f"{name}.{exported}"


def lazy_packages() -> list[str]:
    """Every package of ours whose ``__init__`` takes its names from ``lazy_exports``."""
    root = Path(__file__).resolve().parent.parent
    return sorted(".".join(init.parent.relative_to(root).parts)
                  for top in ("srh_engine", "srh_core", "srh_workers")
                  for init in (root / top).rglob("__init__.py")
                  if "lazy_exports(" in init.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", lazy_packages())
def test_no_lazy_name_is_also_a_submodule(name: str) -> None:
    # Importing a submodule sets it on its package, so a submodule named like a lazily
    # exported name would replace that name whenever it is imported first.
    package = importlib.import_module(name)
    submodules = {module.name for module in pkgutil.iter_modules(package.__path__)}
    table = getattr(package, "_LAZY", None) or getattr(package, "_EXPORTS", {})
    assert table, f"{name}: its lazy table is neither _LAZY nor _EXPORTS"
    clash = {*package.__all__, *table} & submodules
    assert not clash, f"{name}: {sorted(clash)} are exported names and submodules both"


def test_importing_the_readability_module_first_keeps_readable_the_function() -> None:
    program = ("from srh_engine.readability import is_positive\n"
               "import srh_engine, types\n"
               "assert not isinstance(srh_engine.readable, types.ModuleType)\n"
               "print(srh_engine.readable.__module__)\n")
    assert printed_by(program) == "srh_engine.readability"


def test_an_offline_run_does_not_import_the_openai_sdk() -> None:
    # 0.4-0.9 s of a time-limited command's start-up: only a request to a model needs it
    program = ("import sys\n"
               "from srh_core.api.base import PROVIDERS\n"
               "offline, openai_api = PROVIDERS.get('offline'), PROVIDERS.get('openai')\n"
               "offline(tool_list=[])\n"
               "assert 'srh_core.api.openai_api' in sys.modules\n"
               "print('openai' in sys.modules)\n")
    assert printed_by(program) == "False"


def printed_by(program: str) -> str:
    """What ``program`` prints, run in a fresh interpreter (whose imports are its own)."""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
