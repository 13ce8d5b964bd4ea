"""Packages that load their names on first use: every name they list resolves.

A name added to ``__all__`` (or to the lazy table) without its module entry only fails
when a caller first touches it, far from the change; this finds it at once.
"""

from __future__ import annotations

import importlib

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
