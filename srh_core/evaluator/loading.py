"""Load a user-written evaluator from a ``.py`` file.

The file runs as a fresh module under a unique name. It is registered in
``sys.modules`` only while it executes (dataclasses and typing look their
module up there) and removed afterwards, so loading the same file twice gives
two independent classes and nothing leaks into later imports. The file must
define exactly one subclass of :class:`DefaultEvaluator` (classes it merely
imports do not count).

Loading executes the file's code with the caller's privileges: load only
files you trust, as you would import them.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import uuid
from pathlib import Path
from types import ModuleType

from srh_core.errors import EvaluatorLoadError
from srh_core.evaluator.default import DefaultEvaluator

MODULE_PREFIX = "srh_custom_evaluator_"


def load_custom_evaluator(path: str | Path) -> DefaultEvaluator:
    """Load the one ``DefaultEvaluator`` subclass a file defines, and instantiate it.

    Args:
        path: A Python source file.

    Returns:
        An instance of the class; the class gets ``source_path`` (the resolved
        file) so a context payload can record where it came from.

    Raises:
        EvaluatorLoadError: The file is missing, not ``.py``, fails to import
            (the original exception is chained and named in the message), or
            defines zero or several evaluator classes (their names are listed).
    """
    file = _checked_path(path)
    module = _execute(file)
    classes = [
        value for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, DefaultEvaluator)
        and value.__module__ == module.__name__
    ]
    names = sorted(value.__qualname__ for value in classes)
    if len(classes) != 1:
        raise EvaluatorLoadError(
            f"{file} must define exactly one subclass of DefaultEvaluator; found "
            f"{len(classes)}: {names}.", path=str(file), found=names,
        )
    evaluator_class = classes[0]
    evaluator_class.source_path = str(file)  # type: ignore[attr-defined]
    try:
        return evaluator_class()
    except Exception as exc:
        raise EvaluatorLoadError(
            f"{file}: {evaluator_class.__qualname__}() failed: {type(exc).__name__}: {exc}",
            path=str(file), found=names,
        ) from exc


def _checked_path(path: str | Path) -> Path:
    file = Path(path).expanduser().resolve()
    if file.suffix != ".py":
        raise EvaluatorLoadError(f"A custom evaluator must be a .py file; got {file}.",
                                 path=str(file))
    if not file.is_file():
        raise EvaluatorLoadError(f"The custom evaluator file {file} does not exist.",
                                 path=str(file))
    return file


def _execute(file: Path) -> ModuleType:
    name = f"{MODULE_PREFIX}{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise EvaluatorLoadError(f"Cannot import {file} as a Python module.", path=str(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise EvaluatorLoadError(
            f"Importing the custom evaluator {file} failed: {type(exc).__name__}: {exc}",
            path=str(file),
        ) from exc
    finally:
        sys.modules.pop(name, None)
    return module
