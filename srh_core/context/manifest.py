"""Load, inspect and edit manifest-backed ``context.data`` directories.

See :mod:`srh_core.context.manifest_schema` for the format. Arrays are loaded
with ``allow_pickle=False``; every file must resolve inside the directory (no
absolute paths, no ``..``, no symlink escapes). After the format checks the
loaded arrays go through the same data policy as an :class:`AgentContext`
commit (:mod:`srh_core.context.validation`), so a directory that loads also
commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from srh_core.context.manifest_schema import (
    AXIS_FIELDS,
    MANIFEST_NAME,
    ROOT_FIELDS,
    VARIABLE_FIELDS,
    AxisSpec,
    ManifestIssue,
    ManifestRoot,
    VariableSpec,
    pydantic_issues,
)
from srh_core.context.manifest_store import read_manifest_json, write_json_atomic
from srh_core.context.validation import DataLayout, check_context_data, check_name
from srh_core.errors import ContextManifestError, DataError, InputTooLargeError, did_you_mean
from srh_core.input_limits import DATA_LIMIT_ENV, check_array_file, data_limit
from srh_engine import UnitError, parse_units


@dataclass
class _Reading:
    """What one pass over a directory found (mutable while reading)."""

    root: Path
    issues: list[ManifestIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    manifest: ManifestRoot | None = None
    variables: dict[str, VariableSpec] = field(default_factory=dict)
    axes: dict[str, AxisSpec] = field(default_factory=dict)
    data: dict[str, np.ndarray] = field(default_factory=dict)
    files: set[Path] = field(default_factory=set)

    def used_axes(self) -> set[str]:
        return {axis for spec in self.variables.values() for axis in spec.axes or ()}

    def usable_data(self) -> dict[str, np.ndarray]:
        """Loaded arrays without the axes no variable uses (those only get a warning)."""
        unused = set(self.axes) - self.used_axes()
        return {name: value for name, value in self.data.items() if name not in unused}

    def add(self, location: str, message: str, hint: str = "") -> None:
        self.issues.append(ManifestIssue(location, message, hint))


def load_context_data(directory: str | Path) -> dict[str, Any]:
    """Validate and load one manifest-backed ``context.data`` directory.

    Args:
        directory: The directory holding ``manifest.json`` and the ``.npy`` files.

    Returns:
        ``{"path", "target", "weights", "data", "variable_descriptions", "variable_units",
        "variable_axes", "variable_structures", "relation_names", "num_nodes", "warnings"}``,
        ready for :meth:`AgentContext.commit_context_data`.

    Raises:
        ContextManifestError: Anything is invalid; ``errors`` lists every problem.
    """
    reading = _read(directory)
    if reading.issues or reading.manifest is None:
        lines = [str(issue) for issue in reading.issues] or [f"{MANIFEST_NAME} is invalid."]
        raise ContextManifestError(
            f"Invalid context.data directory {reading.root} ({len(lines)} problem(s)):\n- "
            + "\n- ".join(lines),
            errors=lines,
        )
    return _loaded(reading, reading.manifest)


def inspect_context_data(directory: str | Path) -> dict[str, Any]:
    """Report every problem of a ``context.data`` directory without raising.

    Args:
        directory: The directory to check.

    Returns:
        ``{"ok", "path", "errors": [{"location", "message", "hint"}], "warnings",
        "target", "n_samples", "variables", "axes"}``; summaries cover what loaded.
    """
    reading = _read(directory)
    variables = {
        name: {"file": spec.file, "kind": spec.kind, "axes": spec.axes or [],
               "description": spec.description, "shape": list(reading.data[name].shape),
               "dtype": str(reading.data[name].dtype)}
        for name, spec in reading.variables.items() if name in reading.data
    }
    axes = {name: {"size": int(reading.data[name].shape[0]), "description": spec.description}
            for name, spec in reading.axes.items() if name in reading.data}
    target = reading.manifest.target if reading.manifest else None
    return {
        "ok": not reading.issues, "path": str(reading.root),
        "errors": [issue.to_dict() for issue in reading.issues], "warnings": reading.warnings,
        "target": target,
        "n_samples": int(len(reading.data[target])) if target in reading.data else None,
        "variables": variables, "axes": axes,
    }


def update_context_data_descriptions(
    directory: str | Path, descriptions: Mapping[str, str]
) -> dict[str, Any]:
    """Update variable and axis descriptions in ``manifest.json``.

    The whole store is validated first. The new file replaces the old one
    atomically (temporary file + ``os.replace``); when the directory is
    read-only but ``manifest.json`` is writable, the file is rewritten in place.

    Args:
        directory: The ``context.data`` directory.
        descriptions: New descriptions keyed by variable or axis name.

    Returns:
        The reloaded store, as :func:`load_context_data` returns it, plus
        ``"written": "atomic" | "in_place"``.

    Raises:
        ContextManifestError: The store is invalid.
        DataError: A name is unknown or a description is not a string.
    """
    loaded = load_context_data(directory)
    known = list(loaded["variable_descriptions"])
    for name, text in descriptions.items():
        if name not in known:
            raise DataError(f"Cannot describe {name!r}: not a variable or axis of the store; "
                            f"known: {known}.{did_you_mean(str(name), known)}", variable=name)
        if not isinstance(text, str):
            raise DataError(f"The description of {name!r} must be a string; got "
                            f"{type(text).__name__}.", variable=name)
    path = Path(loaded["path"]) / MANIFEST_NAME
    raw = read_manifest_json(path)
    for section in ("variables", "axes"):
        for name, spec in raw.get(section, {}).items():
            if name in descriptions:
                spec["description"] = descriptions[name].strip()
    written = write_json_atomic(path, raw)
    return {**load_context_data(directory), "written": written}


# ------------------------------------------------------------------ reading


def _read(directory: str | Path) -> _Reading:
    reading = _Reading(root=Path(directory).resolve())
    raw = _read_root(reading)
    if raw is None:
        return reading
    manifest = _validate_root(reading, raw)
    if manifest is None:
        return reading
    reading.manifest = manifest
    for name, spec in manifest.axes.items():
        _read_axis(reading, name, spec)
    for name, spec in manifest.variables.items():
        _read_variable(reading, manifest, name, spec)
    _check_loaded(reading, manifest)
    _warn_extras(reading, manifest)
    return reading


def _read_root(reading: _Reading) -> dict[str, Any] | None:
    if not reading.root.is_dir():
        reading.add("directory", f"{reading.root} is not a directory.",
                    "Create it, or pass the path of an existing context.data directory.")
        return None
    path = reading.root / MANIFEST_NAME
    if not path.is_file():
        reading.add(MANIFEST_NAME, f"{MANIFEST_NAME} is missing.",
                    'Create it, e.g. {"target": "y", "variables": {"y": {"file": "y.npy", '
                    '"description": "..."}}}.')
        return None
    try:
        raw = read_manifest_json(path)
    except ContextManifestError as exc:
        reading.issues.extend(ManifestIssue(MANIFEST_NAME, error, "Make it valid UTF-8 JSON.")
                              for error in exc.errors)
        return None
    if not isinstance(raw, dict):
        reading.add(MANIFEST_NAME, f"The manifest must be a JSON object; got "
                    f"{type(raw).__name__}.", "Wrap the content in {...}.")
        return None
    return raw


def _validate(
    reading: _Reading, model: type[BaseModel], raw: Any, where: str, fields: tuple[str, ...]
) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        reading.issues.extend(pydantic_issues(where, exc, fields))
        return None


def _validate_root(reading: _Reading, raw: dict[str, Any]) -> ManifestRoot | None:
    """Validate the root; on errors, go on without the bad fields to find more problems."""
    try:
        return ManifestRoot.model_validate(raw)
    except ValidationError as exc:
        reading.issues.extend(pydantic_issues("manifest", exc, ROOT_FIELDS))
        bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
    if "variables" in bad:
        return None
    try:
        return ManifestRoot.model_validate({k: v for k, v in raw.items() if k not in bad})
    except ValidationError:
        return None


def _read_axis(reading: _Reading, name: str, raw: Any) -> None:
    where = f"axes.{name}"
    spec = _validate(reading, AxisSpec, raw, where, AXIS_FIELDS)
    if spec is None or not _valid_name(reading, where, name):
        return
    reading.axes[name] = spec
    if spec.size is not None:
        reading.data[name] = np.arange(spec.size)
    elif spec.values is not None:
        reading.data[name] = np.asarray(spec.values)
    elif (value := _load_array(reading, f"{where}.file", spec.file or "")) is not None:
        if value.ndim != 1:
            reading.add(f"{where}.file",
                        f"An axis file must hold a 1-D array; got shape {value.shape}.",
                        "Save the axis values with np.save(path, values.ravel()).")
        else:
            reading.data[name] = value


def _read_variable(reading: _Reading, manifest: ManifestRoot, name: str, raw: Any) -> None:
    where = f"variables.{name}"
    spec = _validate(reading, VariableSpec, raw, where, VARIABLE_FIELDS)
    if spec is None or not _valid_name(reading, where, name):
        return
    if spec.units is not None and not _valid_units(reading, f"{where}.units", spec.units):
        return
    reading.variables[name] = spec
    if name in reading.axes:
        reading.add(where, f"{name!r} is both a variable and an axis.", "Rename one of them.")
        return
    value = _load_array(reading, f"{where}.file", spec.file)
    if value is not None and _axes_match(reading, list(manifest.axes), where, spec, value):
        reading.data[name] = value


def _valid_units(reading: _Reading, where: str, units: str) -> bool:
    try:
        parse_units(units)
    except UnitError as error:
        reading.add(where, str(error), 'Write units like "kg*m^2/s^2", or "1" if dimensionless.')
        return False
    return True


def _valid_name(reading: _Reading, where: str, name: str) -> bool:
    issue = check_name(name)
    if issue is not None:
        reading.add(where, issue.message, issue.hint)
    return issue is None


def _load_array(reading: _Reading, where: str, file: str) -> np.ndarray | None:
    path = _confined(reading, where, file)
    if path is None:
        return None
    try:
        check_array_file(path, data_limit(), DATA_LIMIT_ENV)
        value = np.load(path, allow_pickle=False)
    except InputTooLargeError as exc:
        reading.add(where, str(exc), "Load fewer rows, or raise the limit.")
        return None
    except ValueError as exc:
        if "pickle" in str(exc):
            reading.add(where, f"{file} holds pickled or object data, which is never loaded.",
                        "Save a numeric array: np.save(path, np.asarray(values, dtype=float)).")
        else:
            reading.add(where, f"{file} is not a valid .npy file: {exc}",
                        "Re-save it with np.save.")
        return None
    except OSError as exc:
        reading.add(where, f"{file} cannot be read: {exc}", "Check the file and its permissions.")
        return None
    if not isinstance(value, np.ndarray):
        value.close()
        reading.add(where, f"{file} is an .npz archive, not one array.", "Save one array per file.")
        return None
    return value


def _confined(reading: _Reading, where: str, file: str) -> Path | None:
    relative = Path(file)
    if _unsafe(file, relative):
        reading.add(where, f"{file!r} must be a relative path inside the directory.",
                    "Use a plain file name such as 'x.npy'.")
        return None
    if relative.suffix != ".npy":
        reading.add(where, f"{file!r} must be an .npy file.", "Save arrays with np.save.")
        return None
    path = (reading.root / relative).resolve()
    reading.files.add(path)
    if not path.is_relative_to(reading.root):
        reading.add(where, f"{file!r} resolves outside the directory (a symlink escape).",
                    "Copy the file into the directory instead of linking to it.")
        return None
    if not path.is_file():
        reading.add(where, f"{file} does not exist in {reading.root}.",
                    "Add the file, or fix the file name in the manifest.")
        return None
    return path


def _unsafe(file: str, relative: Path) -> bool:
    absolute = relative.is_absolute() or file.startswith(("/", "\\"))
    return absolute or "\0" in file or ".." in relative.parts


def _axes_match(
    reading: _Reading, declared: list[str], where: str, spec: VariableSpec, value: np.ndarray
) -> bool:
    if spec.axes is None:
        return True
    unknown = [axis for axis in spec.axes if axis not in declared]
    if unknown:
        reading.add(f"{where}.axes", f"Undeclared axes {unknown}; declared: {declared}.",
                    "Declare the axes under 'axes'.")
        return False
    if value.ndim != len(spec.axes):
        reading.add(where, f"The array has {value.ndim} dimension(s) but declares "
                    f"{len(spec.axes)} axes {spec.axes}.", "Declare one axis per dimension.")
        return False
    wrong = [f"{axis}: {len(reading.data[axis])} (array: {value.shape[i]})"
             for i, axis in enumerate(spec.axes)
             if axis in reading.data and len(reading.data[axis]) != value.shape[i]]
    if wrong:
        reading.add(where, f"Axis length mismatch: {', '.join(wrong)}.",
                    "Make each dimension as long as its axis.")
    return not wrong


def _check_loaded(reading: _Reading, manifest: ManifestRoot) -> None:
    target = manifest.target
    if target is not None and target not in reading.variables:
        reading.add("manifest.target", f"Target {target!r} is not a variable; variables: "
                    f"{list(manifest.variables)}.{did_you_mean(target, manifest.variables)}",
                    "Name one of the variables as the target.")
        target = None
    weights = manifest.weights
    if weights is not None and (weights not in reading.variables or weights == target):
        reading.add("manifest.weights", f"Weights {weights!r} is not a variable other than "
                    f"the target; variables: {list(manifest.variables)}."
                    f"{did_you_mean(weights, manifest.variables)}",
                    "Name the variable that holds the row weights.")
    failed = (set(manifest.variables) | set(manifest.axes)) - set(reading.data)
    layout = _layout(reading, manifest, target if target not in failed else None)
    usable = reading.usable_data()
    if not usable:
        return  # every variable failed already, and each said why
    for issue in check_context_data(usable, layout):
        if issue.variable not in failed:
            where = f"variables.{issue.variable}" if issue.variable else "manifest"
            reading.add(where, issue.message, issue.hint)


def _layout(reading: _Reading, manifest: ManifestRoot, target: str | None) -> DataLayout:
    variables = reading.variables
    return DataLayout(
        target=target,
        variable_axes={n: tuple(s.axes) for n, s in variables.items()
                       if s.axes and n in reading.data},
        variable_structures={n: s.structure for n, s in variables.items() if s.structure},
        relation_names=frozenset(n for n, s in variables.items() if s.kind == "relation"),
        num_nodes=manifest.num_nodes,
    )


def _warn_extras(reading: _Reading, manifest: ManifestRoot) -> None:
    if unused := sorted(set(reading.axes) - reading.used_axes()):
        reading.warnings.append(f"Axes declared but used by no variable: {unused}.")
    if manifest.target is None:
        reading.warnings.append("The manifest names no target; select one before searching.")
    if undescribed := [n for n, s in {**reading.variables, **reading.axes}.items()
                       if not s.description.strip()]:
        reading.warnings.append(f"No description for {undescribed}; the agent sees names only.")
    stray = sorted(p.name for p in reading.root.glob("*.npy") if p.resolve() not in reading.files)
    if stray:
        reading.warnings.append(f"Unreferenced .npy files (ignored): {stray}.")


def _loaded(reading: _Reading, manifest: ManifestRoot) -> dict[str, Any]:
    layout = _layout(reading, manifest, manifest.target)
    usable = reading.usable_data()
    order = [name for name in [*reading.variables, *reading.axes] if name in usable]
    specs = {**reading.variables, **reading.axes}
    return {
        "path": str(reading.root),
        "target": manifest.target,
        "weights": manifest.weights,
        "data": {name: usable[name] for name in order},
        "variable_descriptions": {name: specs[name].description.strip() for name in order},
        "variable_units": {name: spec.units for name, spec in reading.variables.items()
                           if spec.units is not None and name in usable},
        "variable_axes": {name: tuple(axes) for name, axes in layout.variable_axes.items()},
        "variable_structures": dict(layout.variable_structures),
        "relation_names": sorted(layout.relation_names),
        "num_nodes": manifest.num_nodes,
        "warnings": list(reading.warnings),
    }
