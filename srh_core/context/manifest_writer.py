"""Write a context's data as a manifest-backed ``context.data`` directory.

The inverse of :func:`srh_core.context.load_context_data`: every variable and
axis becomes one ``.npy`` file next to a ``manifest.json`` that records the
target, descriptions, declared axes, relations (``kind: "relation"``), the
relation of each edge field (``structure``) and ``num_nodes``, so graph data
round-trips: loading the directory and committing it gives the same arrays and
layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.context.manifest_schema import MANIFEST_NAME
from srh_core.errors import ContextManifestError

if TYPE_CHECKING:
    from srh_core.context.context import AgentContext

__all__ = ["save_context_data"]


def _variable_entry(context: AgentContext, name: str) -> dict[str, Any]:
    layout = context.layout
    entry: dict[str, Any] = {"file": f"{name}.npy",
                             "description": context.variable_descriptions.get(name, "")}
    if name in context.variable_units:
        entry["units"] = context.variable_units[name]
    if layout.variable_axes.get(name):
        entry["axes"] = list(layout.variable_axes[name])
    if name in layout.relation_names:
        entry["kind"] = "relation"
    if name in layout.variable_structures:
        entry["structure"] = layout.variable_structures[name]
    return entry


def save_context_data(context: AgentContext, directory: str | Path, *,
                      description: str = "", overwrite: bool = False) -> Path:
    """Write ``context``'s arrays and layout as a ``context.data`` directory.

    Args:
        context: The context to save (relations and ``num_nodes`` included).
        directory: Target directory (created when missing).
        description: Text about the data set, stored in the manifest.
        overwrite: Replace an existing manifest in ``directory``.

    Returns:
        The path of the written ``manifest.json``.

    Raises:
        ContextManifestError: ``directory`` already holds a manifest and
            ``overwrite`` is False, or it cannot be written.
    """
    root = Path(directory)
    manifest_path = root / MANIFEST_NAME
    if manifest_path.exists() and not overwrite:
        raise ContextManifestError(f"{manifest_path} exists; pass overwrite=True to replace it.")
    try:
        root.mkdir(parents=True, exist_ok=True)
        axes = {}
        for name in context.axis_names():
            np.save(root / f"{name}.npy", np.asarray(context.data[name]), allow_pickle=False)
            axes[name] = {"file": f"{name}.npy",
                          "description": context.variable_descriptions.get(name, "")}
        variables = {}
        for name in context.variable_names():
            np.save(root / f"{name}.npy", np.asarray(context.data[name]), allow_pickle=False)
            variables[name] = _variable_entry(context, name)
        manifest = {"target": context.target, "description": description,
                    "variables": variables, "axes": axes, "num_nodes": context.num_nodes}
        if getattr(context, "weights_name", None) is not None:
            manifest["weights"] = context.weights_name
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise ContextManifestError(f"Cannot write {root}: {error}") from error
    return manifest_path
