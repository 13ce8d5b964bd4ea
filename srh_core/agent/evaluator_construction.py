"""EvaluatorConstructionAgent: write a custom evaluator and prove it, never touching the live one.

The model reads the evaluator code (``read_source``), writes a
``DefaultEvaluator`` subclass under the workspace's ``context.evaluator/`` with
``workspace_code_executor`` and proves it with ``validate_evaluator``, which
loads the file in the sandbox on a copy of the data. The model may not end
its turn while a file of ``context.evaluator/`` changed after its last valid
validation: it is told so and goes on (up to ``max_steps`` responses). The
context's evaluator is never replaced; the result names the validated file,
which ``srh run --evaluator FILE`` then uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from srh_core.agent.conversation import ConversationAgent, python_files
from srh_core.tools.base import BaseTool
from srh_core.tools.evaluator_check import EVALUATOR_DIR
from srh_core.types import ToolCall, ToolCallResult, json_value

SYSTEM_PROMPT = """You write SRHarness evaluators: subclasses of \
srh_core.evaluator.DefaultEvaluator, one per Python file under context.evaluator/ of the \
workspace. Write the files with workspace_code_executor (create context.evaluator/ only right \
before the first file), inspect the workspace with workspace_shell, and read the evaluator \
code with read_source (start with srh_core/evaluator/default.py and srh_core/evaluator/utils; \
reuse their helpers rather than writing numerical code again). DefaultEvaluator's classmethods \
are split(context), fit(f, y, context), evaluate(f, y, context), fit_candidate(f, context) and \
evaluate_candidate(f, context): override fit/evaluate to change every equation, the candidate \
methods to change only candidates (an ODE rollout, say). fit returns the expression with every \
parameter bound; evaluate returns a flat dict of numbers and keeps the default metrics unless \
the user asks otherwise. Do not hide failures behind broad try/except or return placeholders \
(strings, NaN). Candidate fit/evaluate get a context that is already split: do not split or \
refit there.

Prove every version with validate_evaluator(f=..., evaluator_file="context.evaluator/<file>.py"): \
it loads the file in a sandbox on a copy of the data and is valid only when every metric you \
add is a finite number. You cannot finish while an evaluator file changed after its last valid \
validation. Never change the live context's evaluator: the user chooses the file afterwards.

The data (authoritative: use these names, shapes, axes and the target):
```json
{schema}
```"""


class EvaluatorConstructionAgent(ConversationAgent):
    """Construct and validate evaluator scripts without mutating the live context.

    Args:
        llm_provider: Model provider (not "offline": it cannot write code).
        llm_model: Model name.
        context: The data the evaluator is proved on; its workspace receives the files.
        tools: Tool names or ready tool instances (default: workspace_shell,
            workspace_code_executor, read_source, read_skill, validate_evaluator).
        interaction_manager: Receives the turn's events (None: none are published).
        tool_parser: How tool calls are exchanged.
        llm_max_tokens: Maximum tokens per response.
        max_steps: Model responses per instruction at most.
        **options: ``base_url``, ``skills``, ``skills_dir``, ``api``, ``model_access``.
    """

    DEFAULT_TOOLS = ("workspace_shell", "workspace_code_executor", "read_source", "read_skill",
                     "validate_evaluator")

    def __init__(self, *, llm_provider: str, llm_model: str | None = None, context: Any,
                 tools: Sequence[str | BaseTool] | None = None, interaction_manager: Any = None,
                 tool_parser: str = "openai", llm_max_tokens: int = 4096, max_steps: int = 16,
                 **options: Any) -> None:
        self.validated: dict[str, str] = {}  # file -> digest of its last valid version
        self.last_valid: dict[str, Any] | None = None
        super().__init__(llm_provider, llm_model, context=context, tools=tools,
                         tool_parser=tool_parser, llm_max_tokens=llm_max_tokens,
                         interaction_manager=interaction_manager, max_steps=max_steps,
                         **options)

    def system_prompt(self) -> str:
        schema = json.dumps(json_value(self.context.schema()), indent=1, ensure_ascii=False)
        return SYSTEM_PROMPT.replace("{schema}", schema)

    @property
    def evaluator_dir(self) -> Path:
        return self.context.workspace_path / EVALUATOR_DIR

    def digests(self) -> dict[str, str]:
        """Each evaluator file (workspace-relative) -> sha256 of its bytes."""
        root = self.context.workspace_path
        return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in python_files(self.evaluator_dir)}

    def after_tools(self, calls: Sequence[ToolCall], results: Sequence[ToolCallResult]) -> None:
        """Remember each file a validation found valid, as it was then."""
        current = self.digests()
        for call, result in zip(calls, results, strict=True):
            report = result.result if result.ok else {}
            name = report.get("evaluator_file")
            if call.name == "validate_evaluator" and report.get("valid") and name in current:
                self.validated[name] = current[name]
                self.last_valid = {"evaluator_file": name, "evaluator": report.get("evaluator"),
                                   "result_str": result.result_str}

    def unproved(self) -> list[str]:
        """Evaluator files changed (or written) after their last valid validation."""
        return [name for name, digest in self.digests().items()
                if self.validated.get(name) != digest]

    def completion_blocked(self) -> str | None:
        files = self.unproved()
        if not files:
            return None
        return ("[Harness] You cannot finish yet: " + ", ".join(files) + " changed after its "
                "last valid validation. Call validate_evaluator on it and repair it until it is "
                "valid (every metric you add a finite number), or remove it.")

    def finish(self, message: str, turn: dict[str, Any]) -> dict[str, Any]:
        """The turn plus ``evaluator_file`` (the last file proved valid and unchanged since,
        or None), ``valid`` and ``unproved`` (files not proved in their current version)."""
        unproved = self.unproved()
        proved = self.last_valid if self.last_valid and \
            self.last_valid["evaluator_file"] not in unproved else None
        path = None if proved is None else str(self.context.workspace_path
                                               / proved["evaluator_file"])
        return {**turn, "evaluator_file": None if proved is None else proved["evaluator_file"],
                "evaluator_path": path, "valid": proved is not None, "unproved": unproved}
