"""Package names loaded on first use, one implementation for every lazy package.

A package lists its public names in a table (name -> the module defining it:
a submodule's own name, or a full dotted path) and takes its module-level
``__getattr__`` and ``__dir__`` from :func:`lazy_exports`, so importing the
package imports nothing else and ``srh --help`` starts at once. This module
sits in the lowest layer so that every package above can use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, table: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose names ``table`` lists.

    Args:
        package: The package's ``__name__``.
        table: Name -> the module defining it: a submodule's name (``"nodes"``) or a
            full dotted path (``"srh_core.agent.branch"``).

    Returns:
        ``(__getattr__, __dir__)``: the first imports the name's module on first use
        and keeps the value on the package (later lookups are ordinary attributes);
        an unlisted name is an AttributeError naming the package.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path = module if "." in module else f"{package}.{module}"
        value = getattr(importlib.import_module(path), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
