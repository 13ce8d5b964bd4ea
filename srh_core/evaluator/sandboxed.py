"""A custom evaluator that travels as source and runs in the code sandbox.

On a cluster a run's custom evaluator (``srh run --evaluator FILE``) is the
submitter's code, so a worker never imports it: the run spec carries the
file's text (:class:`EvaluatorSource`, at most :data:`MAX_SOURCE_BYTES`,
hashed) and the worker's context gets a :class:`SandboxedEvaluator`. Each of
its methods (``split``, ``fit``, ``evaluate``, ``fit_candidate``,
``evaluate_candidate``) runs the file in the sandbox the way
``validate_evaluator`` does (:mod:`srh_core.tools.evaluator_check`): a fresh
temporary workspace with the file, the data it is called on (a
``context.data`` directory) and the installed ``srh_core`` and ``srh_engine``
mounted read-only; the file is loaded with
:func:`~srh_core.evaluator.loading.load_custom_evaluator` and the method
called there, on the same data and settings. Expressions cross as text that
round-trips exactly, metrics as JSON numbers (exact for floats), splits as
``.npy`` files, so the scores equal the embedded run's, where the user's own
file is loaded in the user's own process.

The file is written once, and the data once per context and data revision:
a context's arrays change only through its commits, each of which bumps
:attr:`~srh_core.context.AgentContext.revision`, so a saved copy is reused
until then (a data refresh, issue 25, commits a new revision and is saved
again). Both are mounted read-only, so no call can change what the next one
reads; each call still gets a fresh workspace for what it writes. A saved
copy lives as long as its context or a call using it, whichever is longer.

Each call is one sandboxed process (about a second): a run with a custom
evaluator on a cluster is slower per tool call than embedded.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

import srh_engine as engine
from srh_core.context import AgentContext, load_context_data
from srh_core.context.manifest_writer import save_context_data
from srh_core.errors import EvaluatorLoadError
from srh_core.evaluator.default import DefaultEvaluator, MetricDict
from srh_core.sandbox import run_python_with_json
from srh_core.tools.source import package_roots
from srh_core.workspace import Workspace

MAX_SOURCE_BYTES = 1_000_000
TIMEOUT_SECONDS = 120.0
MEMORY_LIMIT_MB = 2048
OUTPUT_LIMIT_BYTES = 256 * 1024

# The fixed program run in the sandbox; the packages are mounted in its working directory.
EVALUATOR_PROGRAM = r'''
import os, sys
sys.path.insert(0, os.getcwd())
import srh_engine as engine
from srh_core.context import AgentContext, load_context_data
from srh_core.context.manifest_writer import save_context_data
from srh_core.evaluator.loading import load_custom_evaluator

evaluator = load_custom_evaluator(os.path.join("evaluator", payload["file"]))
context = AgentContext(args=payload["settings"], evaluator=evaluator)
context.commit_context_data(load_context_data("data"))
action, options = payload["action"], payload["options"]
f = engine.parse(payload["f"]) if payload.get("f") else None
y = engine.parse(payload["y"]) if payload.get("y") else None
if action == "inspect":
    emit_result({"class": type(evaluator).__qualname__})
elif action == "split":
    parts = {}
    for name, view in evaluator.split(context).items():
        if view is not None:
            save_context_data(view, os.path.join("out", name))
        parts[name] = view is not None
    emit_result({"splits": parts})
elif action == "fit":
    emit_result({"expression": engine.to_str(evaluator.fit(f, y, context, **options))})
elif action == "fit_candidate":
    emit_result({"expression": engine.to_str(evaluator.fit_candidate(f, context))})
elif action == "evaluate":
    emit_result({"metrics": evaluator.evaluate(f, y, context)})
else:
    emit_result({"metrics": evaluator.evaluate_candidate(f, context)})
'''


class EvaluatorSource(BaseModel):
    """A custom evaluator file as a run ships it: its name, text and sha256."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    filename: str
    source: str
    sha256: str

    @classmethod
    def read(cls, path: str | Path) -> EvaluatorSource:
        """The file at ``path``, checked like a local load would check it.

        Raises:
            EvaluatorLoadError: Not a ``.py`` file, missing, not UTF-8, or over
                :data:`MAX_SOURCE_BYTES`.
        """
        file = Path(path).expanduser().resolve()
        if file.suffix != ".py" or not file.is_file():
            raise EvaluatorLoadError(f"A custom evaluator must be an existing .py file; got "
                                     f"{file}.", path=str(file))
        size = file.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise EvaluatorLoadError(
                f"The custom evaluator {file} has {size} bytes; a run ships at most "
                f"{MAX_SOURCE_BYTES} bytes of evaluator source.", path=str(file))
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise EvaluatorLoadError(f"The custom evaluator {file} is not UTF-8 text: {error}.",
                                     path=str(file)) from error
        return cls(filename=file.name, source=text, sha256=_digest(text))

    def checked(self) -> EvaluatorSource:
        """This source when its digest and size hold (a worker checks what it received).

        Raises:
            EvaluatorLoadError: The text does not match its digest, or is too large.
        """
        if len(self.source.encode()) > MAX_SOURCE_BYTES or _digest(self.source) != self.sha256:
            raise EvaluatorLoadError(f"The shipped evaluator {self.filename} is larger than "
                                     f"{MAX_SOURCE_BYTES} bytes or differs from its digest.",
                                     path=self.filename)
        return self


class SandboxedEvaluator(DefaultEvaluator):
    """A DefaultEvaluator whose every method runs the shipped file in the sandbox.

    Args:
        shipped: The evaluator's source (:meth:`EvaluatorSource.read`).

    Raises:
        EvaluatorLoadError: The file does not load in the sandbox (checked once, here).
    """

    def __init__(self, shipped: EvaluatorSource) -> None:
        self.shipped = shipped.checked()
        self.class_name = ""
        self._start_caches()
        probe = _probe_context()
        self.class_name = str(self._call("inspect", probe)["class"])

    def _start_caches(self) -> None:
        self._lock = threading.Lock()
        self._source_folder: tempfile.TemporaryDirectory[str] | None = None
        # context -> (its data revision, the folder its data is saved in); weak, so a
        # context's saved copy goes with it
        self._saved: weakref.WeakKeyDictionary[
            AgentContext, tuple[int, tempfile.TemporaryDirectory[str]]] = \
            weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        return {"shipped": self.shipped, "class_name": self.class_name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.shipped, self.class_name = state["shipped"], state["class_name"]
        self._start_caches()

    def split(self, context: AgentContext) -> dict[str, Any]:  # type: ignore[override]
        with tempfile.TemporaryDirectory(prefix="srh-evaluator-") as temporary:
            reply = self._call("split", context, folder=Path(temporary))
            return {name: context.with_data(load_context_data(
                Path(temporary) / "out" / name)["data"]) if present else None
                for name, present in reply["splits"].items()}

    def fit(self, f: engine.Expression, y: engine.Expression,  # type: ignore[override]
            context: AgentContext, *, fit_constants: bool | None = None) -> engine.Expression:
        options = {} if fit_constants is None else {"fit_constants": fit_constants}
        return engine.parse(self._call("fit", context, f=f, y=y, options=options)["expression"])

    def evaluate(self, f: engine.Expression, y: engine.Expression,  # type: ignore[override]
                 context: AgentContext) -> MetricDict:
        return dict(self._call("evaluate", context, f=f, y=y)["metrics"])

    def fit_candidate(self, f: engine.Expression,  # type: ignore[override]
                      context: AgentContext) -> engine.Expression:
        return engine.parse(self._call("fit_candidate", context, f=f)["expression"])

    def evaluate_candidate(self, f: engine.Expression,  # type: ignore[override]
                           context: AgentContext) -> MetricDict:
        return dict(self._call("evaluate_candidate", context, f=f)["metrics"])

    def _call(self, action: str, context: AgentContext, *, f: Any = None, y: Any = None,
              options: dict[str, Any] | None = None, folder: Path | None = None) -> Any:
        if folder is None:
            with tempfile.TemporaryDirectory(prefix="srh-evaluator-") as temporary:
                return self._call(action, context, f=f, y=y, options=options,
                                  folder=Path(temporary))
        source, data = self._saved_files(context)  # held until the call ends
        roots = package_roots()
        sandbox = Workspace(folder, read_only_mounts={
            "evaluator": source.name, "data": data.name,
            **{name: roots[name] for name in ("srh_core", "srh_engine")}})
        settings = context.settings()
        payload = {"file": self.shipped.filename, "action": action, "options": options or {},
                   "f": None if f is None else engine.to_str(f),
                   "y": None if y is None else engine.to_str(y),
                   "settings": {key: getattr(settings, key)
                                for key in settings.__dataclass_fields__}}
        run, value = run_python_with_json(
            EVALUATOR_PROGRAM, payload, workspace=sandbox, timeout_seconds=TIMEOUT_SECONDS,
            memory_limit_mb=MEMORY_LIMIT_MB, output_limit_bytes=OUTPUT_LIMIT_BYTES)
        if value is None:
            why = run.killed_reason or f"exit code {run.exit_code}"
            raise EvaluatorLoadError(
                f"The custom evaluator {self.shipped.filename} failed in the sandbox "
                f"({action}: {why}): {run.stderr[-1500:]}", path=self.shipped.filename)
        return value

    def _saved_files(self, context: AgentContext) -> tuple[tempfile.TemporaryDirectory[str],
                                                           tempfile.TemporaryDirectory[str]]:
        """The folders holding the file and ``context``'s data, written when missing."""
        with self._lock:
            if self._source_folder is None:
                self._source_folder = tempfile.TemporaryDirectory(prefix="srh-evaluator-file-")
                (Path(self._source_folder.name) / self.shipped.filename).write_text(
                    self.shipped.source, encoding="utf-8")
            revision = context.revision  # read first: a commit meanwhile saves again
            saved = self._saved.get(context)
            if saved is None or saved[0] != revision:
                data = tempfile.TemporaryDirectory(prefix="srh-evaluator-data-")
                save_context_data(context, data.name)
                saved = self._saved[context] = (revision, data)
            return self._source_folder, saved[1]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _probe_context() -> AgentContext:
    """A tiny context to load the file once against (its class name, a load error early)."""
    context = AgentContext()
    context.commit_data({"x": np.arange(4.0), "y": np.arange(4.0)}, target="y")
    return context
