"""DataPreparationAgent: turn workspace files and web evidence into a ``context.data`` directory.

The model works in the context's workspace with the workspace, web and PDF
tools, writes ``context.data/`` (``manifest.json`` plus one ``.npy`` per
variable, :mod:`srh_core.context.manifest`) with ``workspace_code_executor``
and checks it with ``validate_context_data``. When it yields control, the
agent validates the directory itself with the same tool and, only when it
passes, loads it and commits it into the live context
(``AgentContext.commit_context_data``); an invalid directory is reported
with every repair and nothing is committed. ``srh run --data
WORKSPACE/context.data`` then searches it.
"""

from __future__ import annotations

from typing import Any

from srh_core.agent.conversation import ConversationAgent
from srh_core.context.manifest import load_context_data
from srh_core.context.manifest_schema import MANIFEST_NAME
from srh_core.tools.base import BaseTool

DATA_DIR = "context.data"
SYSTEM_PROMPT = f"""You are the data-preparation agent of SRHarness. Work in the user's \
workspace: inspect the files there (workspace_shell; read_pdf for PDF documents) and, when \
the user asks for outside evidence, use web_search and web_fetch; if a site refuses automated \
access, do not retry it, find another authoritative source. Do every transformation with \
workspace_code_executor, so it can be repeated.

Write the result as the flat directory {DATA_DIR}/ of the workspace: one <name>.npy per \
variable (numpy arrays that load with allow_pickle=False; numbers, booleans or unicode \
strings, never object arrays) and {MANIFEST_NAME} with "variables" and, when used, "axes". \
Each variable entry has "file" (<name>.npy), "description" (meaning and units) and "axes" \
(axis names in dimension order). Each axis entry has "description" and exactly one of \
"values" (a short inline list), "file" (<axis>.npy) or "size". Name the variable to predict \
in a top-level "target". For graph or hypergraph data add a positive integer "num_nodes", \
store the edge list A as an integer (E, 2) array (hyperedges T as (H, 3)) with entries in \
[0, num_nodes) and "kind": "relation" in its entry, and give each variable whose last \
dimension runs over the edges a "structure" naming A or T. Do not add fields such as \
format, version, shape or dtype.

After every write or edit call validate_context_data and repair every problem it reports \
before you claim to be done. It changes nothing; when you end your turn the harness \
validates {DATA_DIR}/ once more and commits it as the run's data only if it passes. State \
your assumptions and sources. Keep the conversation and the workspace files: a later request \
may extend the data."""


class DataPreparationAgent(ConversationAgent):
    """Turn workspace and web evidence into the shared structured dataset.

    Args:
        llm_provider: Model provider (not "offline": it cannot author data).
        llm_model: Model name.
        context: The shared context; its workspace receives ``context.data/``.
        tools: Tool names (default: workspace, web, PDF, skill and validation tools).
        tool_parser: How tool calls are exchanged.
        llm_max_tokens: Maximum tokens per response.
        skills: Skills ``read_skill`` offers (default: all but the search method's).
        interaction_manager: Receives the turn's events (None: none are published).
        **options: ``max_steps`` (default 24), ``base_url``, ``skills_dir``, ``api``,
            ``model_access`` (see :class:`ConversationAgent`).
    """

    DEFAULT_TOOLS = ("workspace_shell", "workspace_code_executor", "web_search", "web_fetch",
                     "read_pdf", "read_skill", "validate_context_data")
    EXCLUDED_SKILLS = frozenset({"discover-symbolic-laws"})

    def __init__(self, llm_provider: str, llm_model: str | None = None, *, context: Any,
                 tools: list[str] | None = None, tool_parser: str = "openai",
                 llm_max_tokens: int = 4096, skills: list[str] | None = None,
                 interaction_manager: Any = None, **options: Any) -> None:
        options.setdefault("max_steps", 24)
        super().__init__(llm_provider, llm_model, context=context, tools=tools,
                         tool_parser=tool_parser, llm_max_tokens=llm_max_tokens, skills=skills,
                         interaction_manager=interaction_manager, **options)

    def system_prompt(self) -> str:
        return SYSTEM_PROMPT

    def finish(self, message: str, turn: dict[str, Any]) -> dict[str, Any]:
        """Validate ``context.data/``; commit it into the context when it passes.

        Returns:
            The turn plus ``committed``, ``validation`` (the validator's report, or
            None when there is no directory) and ``context`` (the context's schema).
        """
        validation, committed = self.commit_prepared_data()
        return {**turn, "committed": committed, "validation": validation,
                "context": self.context.schema()}

    def commit_prepared_data(self) -> tuple[dict[str, Any] | None, bool]:
        """(the validation report, whether the data was committed)."""
        directory = self.context.workspace_path / DATA_DIR
        if not directory.is_dir():
            return None, False
        check = BaseTool.create("validate_context_data", self.context)(path=DATA_DIR)
        report = check.result if check.ok else {"ok": False, "errors": [
            {"location": DATA_DIR, "message": check.result_str, "hint": ""}]}
        if not report.get("ok"):
            return report, False
        summary = self.context.commit_context_data(load_context_data(directory))
        self.publish("workspace_changed", {"committed": DATA_DIR, **summary})
        return report, True
