"""Structured logs that carry the run and coordinate of the task.

:class:`SRHTask <srh_workers.reliability.SRHTask>` binds a
:class:`TaskContext` (run_id, R, C, L, K, task_id, task_name) to a context
variable around every task body; :class:`ContextFilter` copies it onto each
log record and :class:`JsonFormatter` (one JSON object per line) or
:class:`KeyValueFormatter` prints it. Code outside tasks (the coordinator)
binds the same fields with :func:`log_context`. A context variable is per
thread, so the threads pool's concurrent tasks never see each other's fields.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Task

COORDINATE_FIELDS = ("R", "C", "L", "K")
TASK_FIELDS = ("run_id", *COORDINATE_FIELDS, "task_id", "task_name")
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName", *TASK_FIELDS}


# ------------------------------------------------------------------ log context
@dataclass(frozen=True, slots=True)
class TaskContext:
    """Fields every log line of a task carries (None: unknown)."""

    run_id: str | None = None
    R: int | None = None
    C: int | None = None
    L: int | None = None
    K: int | None = None
    task_id: str | None = None
    task_name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The known fields only."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    def coordinate(self) -> dict[str, int]:
        return {name: value for name in COORDINATE_FIELDS
                if (value := getattr(self, name)) is not None}


EMPTY_CONTEXT = TaskContext()
_context: ContextVar[TaskContext] = ContextVar("srh_task_context", default=EMPTY_CONTEXT)


def current_context() -> TaskContext:
    """The context bound in this thread (empty outside tasks and :func:`log_context`)."""
    return _context.get()


@contextlib.contextmanager
def bound_context(context: TaskContext) -> Iterator[TaskContext]:
    """Bind ``context`` for the duration of the block (restored afterwards)."""
    token = _context.set(context)
    try:
        yield context
    finally:
        _context.reset(token)


def log_context(**values: Any) -> contextlib.AbstractContextManager[TaskContext]:
    """Add fields (``run_id=..., R=...``) to the current context for a block of code."""
    unknown = sorted(set(values) - set(TASK_FIELDS))
    if unknown:
        raise TypeError(f"log_context takes {TASK_FIELDS}; got unknown fields {unknown}")
    return bound_context(replace(current_context(), **values))


_signatures: dict[str, inspect.Signature | None] = {}


def _signature(task: Task) -> inspect.Signature | None:
    name = str(task.name)
    if name not in _signatures:
        try:
            _signatures[name] = inspect.signature(task.run)
        except (TypeError, ValueError):
            _signatures[name] = None
    return _signatures[name]


def task_context(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskContext:
    """The context of one execution: the task's ``run_id``/``R``/``C``/``L``/``K`` arguments."""
    values: dict[str, Any] = dict(kwargs)
    signature = _signature(task)
    if signature is not None:
        with contextlib.suppress(TypeError):
            values = dict(signature.bind_partial(*args, **kwargs).arguments)
    found = {name: values[name] for name in ("run_id", *COORDINATE_FIELDS)
             if isinstance(values.get(name), str | int) and not isinstance(values[name], bool)}
    if "run_id" in found:
        found["run_id"] = str(found["run_id"])
    return TaskContext(task_id=task.request.id, task_name=task.name, **found)


class ContextFilter(logging.Filter):
    """Copy the bound :class:`TaskContext` onto every record (Celery's current task as fallback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current_context()
        if context.task_id is None:
            context = _celery_task_context(context)
        for name in TASK_FIELDS:
            if getattr(record, name, None) is None:
                setattr(record, name, getattr(context, name))
        return True


def _celery_task_context(context: TaskContext) -> TaskContext:
    from celery import current_task

    task = current_task
    if not task or task.request.id is None:
        return context
    return replace(context, task_id=task.request.id, task_name=task.name)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the task context and extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                  + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "process": record.process}
        entry.update({name: value for name in TASK_FIELDS
                      if (value := getattr(record, name, None)) is not None})
        entry.update({key: value for key, value in vars(record).items()
                      if key not in _RECORD_ATTRIBUTES and not key.startswith("_")})
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=repr, ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    """``time level logger: message key=value ...`` with the task context's known fields."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        pairs = " ".join(f"{name}={value}" for name in TASK_FIELDS
                         if (value := getattr(record, name, None)) is not None)
        if not pairs:
            return text
        head, newline, tail = text.partition("\n")  # keep a traceback below the fields
        return f"{head} {pairs}{newline}{tail}"


def make_formatter(log_format: str) -> logging.Formatter:
    """``json`` -> :class:`JsonFormatter`, ``text`` -> :class:`KeyValueFormatter`."""
    return JsonFormatter() if log_format == "json" else KeyValueFormatter()


def install_log_format(logger_: logging.Logger, log_format: str) -> None:
    """Give every handler of ``logger_`` the structured formatter and the context filter."""
    for handler in logger_.handlers:
        handler.setFormatter(make_formatter(log_format))
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


__all__ = [
    "COORDINATE_FIELDS", "EMPTY_CONTEXT", "TASK_FIELDS", "ContextFilter", "JsonFormatter",
    "KeyValueFormatter", "TaskContext", "bound_context", "current_context", "install_log_format",
    "log_context", "make_formatter", "task_context",
]
