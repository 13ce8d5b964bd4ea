"""The tool base class: registry, schema inference and the execution boundary.

A tool is a :class:`BaseTool` subclass registered under a stable name::

    @BaseTool.register("evaluate_formula", aliases=("evaluate",))
    class EvaluateTool(BaseTool):
        def execute(self, f: str, fit: bool = False) -> dict[str, Any]:
            \"\"\"Score a formula on the data. ... Args: f: The formula. ...\"\"\"

Registration builds the tool's :class:`ToolMetadata` (explicit fields win;
missing ones come from ``execute()``'s docstring and signature) and checks
it, so a malformed tool fails when its module is imported.

``__call__`` is the only execution boundary: it validates the arguments,
checks cancellation, times the call, formats the result for the model,
bounds that text, and turns ordinary exceptions into ``ok=False`` results.
:class:`ToolRunAbort` is control flow and propagates. Floating-point errors
numpy meets during the call (overflow, invalid value, division by zero: the
model's formulas and the user's data make them routinely) are counted into
the result's ``meta_data["numeric_warnings"]`` and logged at debug level,
never printed on the user's terminal (:data:`NUMERIC_ERRORS`). numpy keeps
that error state per thread (a context variable since numpy 2), so calls on
several threads each count their own.

Tools are rebuilt on workers from their name and the run's context, so
they must keep no state a call depends on besides ``context`` and the
constructor ``values``, and must be safe to run concurrently.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np

from srh_core.errors import ToolArgumentError, ToolError, ToolRunAbort
from srh_core.registry import Registry
from srh_core.tools.schema import infer_parameters, split_docstring, validate_arguments
from srh_core.types import ToolCallResult, ToolMetadata, json_value
from srh_engine import parse

ToolClass = TypeVar("ToolClass", bound="type[BaseTool]")
logger = logging.getLogger("srh.tools")

def _load_builtin_tools() -> None:
    """Import every built-in tool module (each registers its tools)."""
    importlib.import_module("srh_core.tools.catalogue")


TOOLS: Registry[type[BaseTool]] = Registry("tool", "Registered tools", error=ToolError,
                                           loader=_load_builtin_tools)
RESULT_STR_LIMIT = 6_000
MAX_FORMULA_LENGTH = 2_000
#: The conversation of the call running in this thread (:func:`call_conversation`).
_CALL_CONVERSATION: ContextVar[list[dict[str, str]] | None] = ContextVar(
    "srh_call_conversation", default=None)


#: When the call running in this thread must end, epoch seconds (:func:`call_deadline`).
_CALL_DEADLINE: ContextVar[float | None] = ContextVar("srh_call_deadline", default=None)


@contextmanager
def call_deadline(deadline: float | None) -> Iterator[None]:
    """Run a call that must end by ``deadline`` (its ``ToolCall.deadline``, epoch seconds).

    A context variable, like :func:`call_conversation`: each thread sees its own.
    """
    token = _CALL_DEADLINE.set(deadline)
    try:
        yield
    finally:
        _CALL_DEADLINE.reset(token)


@contextmanager
def call_conversation(messages: list[dict[str, str]] | None) -> Iterator[None]:
    """Run a call with ``messages`` (its ``ToolCall.conversation``) as its conversation.

    A context variable: each thread (a branch, a pool worker's call) sees its own.
    """
    token = _CALL_CONVERSATION.set(messages)
    try:
        yield
    finally:
        _CALL_CONVERSATION.reset(token)
_CODE_FENCE_CHARS = "`$ \n\t"
#: What a tool call does with numpy's floating-point errors: "record" counts them in
#: ``meta_data["numeric_warnings"]`` and the debug log; "warn" leaves numpy's default
#: RuntimeWarnings (the test suite's choice, where its filters turn them into errors).
NUMERIC_ERRORS: Literal["record", "warn"] = "record"


class NumericErrors:
    """numpy's floating-point errors in one tool call, by kind (numpy's ``errstate`` call)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str, flag: int) -> None:
        name = kind.split()[0]  # "overflow", "invalid value", "divide by zero"
        self.counts[name] = self.counts.get(name, 0) + 1

    def errstate(self) -> np.errstate:
        """numpy's error state that sends the errors here (or numpy's default, see
        NUMERIC_ERRORS); underflow stays ignored, as numpy's default has it."""
        if NUMERIC_ERRORS == "warn":
            return np.errstate()
        return np.errstate(divide="call", over="call", invalid="call", call=self)


class BaseTool(ABC):
    """Base class of every tool the model can call.

    Attributes:
        metadata: Name, description and JSON parameter schema (set by
            :meth:`register`).
        result_str_limit: Maximum characters of ``result_str``.
        context: The run's :class:`~srh_core.context.AgentContext` (data,
            target, evaluator, workspace, settings).
    """

    metadata: ClassVar[ToolMetadata]
    result_str_limit: ClassVar[int] = RESULT_STR_LIMIT

    def __init__(self, context: Any = None, **values: Any) -> None:
        self.context = context
        self.values = values
        self._cancel_event = threading.Event()

    # ------------------------------------------------------------ registry
    @classmethod
    def register(cls, name: str, *, aliases: Iterable[str] = ()
                 ) -> Callable[[ToolClass], ToolClass]:
        """Class decorator registering a tool under ``name``.

        Args:
            name: The canonical name: the one the model sees and every result carries.
            aliases: Other names a lookup (settings, ``create``) accepts for this tool.
        """
        aliases = tuple(aliases)

        def decorate(tool_class: ToolClass) -> ToolClass:
            tool_class.metadata = _resolve_metadata(tool_class, name)
            for taken in (name, *aliases):
                existing = TOOLS.find(taken, load=False)
                if existing is not None and _qualname(existing) != _qualname(tool_class):
                    raise ToolError(f"Tool name {taken!r} is already registered by "
                                    f"{_qualname(existing)}; choose another name.")
            TOOLS.add(name, tool_class, aliases=aliases)
            return tool_class

        return decorate

    @classmethod
    def registered_names(cls) -> list[str]:
        """Canonical names of every registered tool (built-ins included), sorted."""
        return TOOLS.names()

    @classmethod
    def canonical_name(cls, name: str) -> str:
        """The canonical name of ``name`` (itself unless it is an alias).

        Raises:
            ToolError: When no tool has that name.
        """
        return cls.get_class(name).metadata.name

    @classmethod
    def get_class(cls, name: str) -> type[BaseTool]:
        """Return the registered class of ``name`` (a canonical name or an alias).

        The built-in tools are registered on the first lookup; nothing needs
        importing first.

        Raises:
            ToolError: When no tool has that name.
        """
        return TOOLS.get(name)

    @classmethod
    def create(cls, name: str, context: Any = None, **values: Any) -> BaseTool:
        """Instantiate the tool registered as ``name`` for ``context``."""
        return cls.get_class(name)(context=context, **values)

    @classmethod
    def load_tool_classes(cls, tools_used: Iterable[str] | None = None) -> list[type[BaseTool]]:
        """Return the selected registered classes (all when ``tools_used`` is None)."""
        names = cls.registered_names() if tools_used is None else list(tools_used)
        return [cls.get_class(name) for name in names]

    @classmethod
    def to_tool_list(cls, tools_used: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI function-tool definitions of the selected tools."""
        return [tool.to_dict() for tool in cls.load_tool_classes(tools_used)]

    @classmethod
    def load_tool_list(cls, tools_used: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Name, description and parameter schema of the selected tools."""
        return [tool.metadata.to_dict() for tool in cls.load_tool_classes(tools_used)]

    @classmethod
    def to_dict(cls) -> dict[str, Any]:
        """This tool as an OpenAI-compatible function-tool definition."""
        meta = cls.metadata
        return {"type": "function", "function": {
            "name": meta.name, "description": meta.description or "",
            "parameters": meta.parameters or {"type": "object", "properties": {}}}}

    @classmethod
    def get_doc(cls) -> dict[str, str] | None:
        """Documentation to offer as a runtime skill (``read_skill``), or None.

        Returns:
            ``{"name": skill name, "description": when to read it, "content": Markdown}``.
        """
        return None

    @classmethod
    def availability(cls) -> str | None:
        """Why this tool cannot run here (an optional backend missing), or None."""
        return None

    @classmethod
    def call_conversation(cls, messages: Sequence[dict[str, Any]]) -> list[dict[str, str]] | None:
        """Hook: what of the calling branch's ``messages`` a call of this tool carries.

        An agent that runs the call (SRAgent's samples, in both runtimes) attaches it to
        the call (``ToolCall.conversation``); a tool that drafts from the conversation
        returns a bounded copy. The base carries nothing.
        """
        return None

    def conversation(self) -> list[dict[str, Any]]:
        """The conversation this call works from: the one its call carried, else the
        messages the agent set (:meth:`~srh_core.agent.base.Agent.set_messages`)."""
        carried = _CALL_CONVERSATION.get()
        return list(carried if carried is not None else self.values.get("messages") or [])

    def seconds_left(self) -> float | None:
        """Seconds until this call must have ended (its executor's time limit for it), or
        None when it has none; a tool that can stop early ends its work within them."""
        deadline = _CALL_DEADLINE.get()
        return None if deadline is None else deadline - time.time()

    def warm_up(self, *, wait: bool = False) -> None:
        """Hook: start what this tool's first call would start (processes, imports), in
        the process that runs its calls, before the run's first call; with ``wait``,
        return once it is ready. The base has nothing to start."""
        return None

    # ----------------------------------------------------------- execution
    @abstractmethod
    def execute(self, **params: Any) -> dict[str, Any]:
        """Run the tool; the arguments come from the model."""

    def __call__(self, **params: Any) -> ToolCallResult:
        """Validate, run, time, format and bound one call. Never raises but ToolRunAbort."""
        started = time.perf_counter()
        meta: dict[str, Any] = {"tool": self.metadata.name}
        numeric = NumericErrors()
        try:
            self.check_cancelled()
            arguments = validate_arguments(self.metadata.parameters or {}, params)
            with numeric.errstate():
                result = self.execute(**arguments)
                text = self.format_result_dict(result)
        except ToolRunAbort:
            raise
        except Exception as error:  # the tool boundary: the model reads the error
            meta["elapsed_s"] = time.perf_counter() - started
            meta["error_type"] = type(error).__name__
            return ToolCallResult.failure(self._error_text(error), **self._numeric(meta, numeric))
        meta["elapsed_s"] = time.perf_counter() - started
        return ToolCallResult(ok=True, result=result, result_str=self.truncate_result_str(text),
                              meta_data=self._numeric(meta, numeric))

    def _numeric(self, meta: dict[str, Any], numeric: NumericErrors) -> dict[str, Any]:
        """``meta`` with the call's floating-point errors, which go to the debug log too."""
        if numeric.counts:
            logger.debug("Tool %r: numpy floating-point errors %s (on the data or the formula; "
                         "counted in meta_data['numeric_warnings'])", self.metadata.name,
                         numeric.counts)
            meta["numeric_warnings"] = dict(numeric.counts)
        return meta

    def _error_text(self, error: Exception) -> str:
        kind = "Invalid arguments" if isinstance(error, ToolArgumentError) else "Error"
        message = str(error) or type(error).__name__
        return self.truncate_result_str(f"{kind} in tool {self.metadata.name!r}: {message}")

    def cancel(self) -> None:
        """Ask this tool to stop at its next cancellation check."""
        self._cancel_event.set()

    @property
    def cancelled(self) -> bool:
        event = getattr(self.context, "cancel_event", None)
        return self._cancel_event.is_set() or bool(event is not None and event.is_set())

    def check_cancelled(self) -> None:
        """Raise :class:`ToolRunAbort` when cancellation was requested.

        Long-running tools call this between units of work.
        """
        if self.cancelled:
            raise ToolRunAbort(f"Tool {self.metadata.name!r} was cancelled.")

    # ---------------------------------------------------------- formatting
    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """Text for the model; the default is compact JSON. Tools override it."""
        return json.dumps(json_value(result), ensure_ascii=False, separators=(", ", ": "))

    @classmethod
    def truncate_result_str(cls, text: str, limit: int | None = None) -> str:
        """Bound ``text`` to the limit, saying how much was cut."""
        limit = cls.result_str_limit if limit is None else limit
        if len(text) <= limit:
            return text
        note = f"\n... [truncated: {len(text) - limit} of {len(text)} characters omitted]"
        return text[: max(0, limit - len(note))] + note

    # ----------------------------------------------------------- formulas
    @classmethod
    def normalize_formula(cls, eq: str, *, strip_modules: bool = True) -> str:
        """Clean formula text a model wrote: fences, backticks, ``$``, whitespace.

        Raises:
            ToolArgumentError: For non-text, empty or over-long formulas.
        """
        if not isinstance(eq, str):
            raise ToolArgumentError(f"A formula must be text; got {type(eq).__name__}.")
        text = eq.strip().strip(_CODE_FENCE_CHARS).strip()
        text = text.removeprefix("python").strip() if text.startswith("python\n") else text
        if not text:
            raise ToolArgumentError("The formula is empty.")
        if len(text) > MAX_FORMULA_LENGTH:
            raise ToolArgumentError(f"The formula has {len(text)} characters; at most "
                                    f"{MAX_FORMULA_LENGTH} are allowed.")
        if strip_modules:
            for prefix in ("numpy.", "np.", "math."):
                text = text.replace(prefix, "")
        return text

    @classmethod
    def parse_formula(cls, eq: str) -> Any:
        """Normalise and parse formula text with the engine (never ``eval``)."""
        return parse(cls.normalize_formula(eq))


def _qualname(tool_class: type) -> str:
    return f"{tool_class.__module__}.{tool_class.__qualname__}"


def _resolve_metadata(tool_class: type[BaseTool], name: str) -> ToolMetadata:
    declared = tool_class.__dict__.get("metadata")
    where = f"tool {name!r} ({_qualname(tool_class)}).execute"
    if "execute" not in vars(tool_class) and declared is None:
        raise ToolError(f"{where}: a tool must define execute().")
    description = getattr(declared, "description", None)
    parameters = getattr(declared, "parameters", None)
    if description is None:
        description = split_docstring(tool_class.execute)[0] or f"The {name} tool."
    if parameters is None:
        parameters = infer_parameters(tool_class.execute, where)
    if parameters.get("type") != "object":
        raise ToolError(f"{where}: the parameter schema must be a JSON object schema.")
    return ToolMetadata(name=name, description=description, parameters=parameters)
