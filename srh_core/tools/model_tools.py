"""Tools that ask the run's model a question: ``call_llm``, ``subagent``, ``report_model_test``.

``call_llm`` and ``subagent`` send one request with no tools: they cannot run
a tool or change the search. They reach the model the way the run does: the
adapter is built by :func:`srh_core.api.endpoints.build_api` from the run's
settings (``settings``: provider, model, ``base_url``, ``endpoint``) and its
``model_access``, both given to the tool by the agent
(:meth:`srh_core.agent.base.Agent.bind_tool_values`). So on a cluster worker a
call goes where the run's own requests may go, with the key they may use, and
through the endpoint's shared quota; a tool built without an access (a
process-pool worker of an embedded run, ``srh tool call``) uses this process's
operator access, as an embedded SRAgent does. A tool built with no settings
at all refuses (``ok=False``). The offline provider is a rule-based proposer,
not a language model: both tools answer ``ok=False`` saying so rather than
return its search plan as an answer.

What these calls spend is reported in the result's ``usage`` but not added to
the run's budget (``max_cost`` / ``max_tokens`` count the search's requests).
A cancelled tool (a force-pause) cuts its request in flight and raises
:class:`~srh_core.errors.ToolRunAbort`, as every tool does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from srh_core.api.cancel import cancel_when
from srh_core.api.endpoints import build_api
from srh_core.errors import ModelRequestCancelledError, ToolArgumentError, ToolError
from srh_core.tools.base import BaseTool

#: Seconds between two looks at the tool's cancellation while its request is in flight.
CANCEL_POLL_SECONDS = 0.1
#: Characters of a free-text argument (objective, evidence, one message).
MAX_TEXT_CHARS = 20_000
MAX_MESSAGES = 50
MAX_CANDIDATES = 20
#: Variables the subagent's data summary lists.
MAX_SUMMARY_VARIABLES = 30
SUBAGENT_MODES = {
    "hypothesis_generation": (
        "Propose 2 to 4 structurally different formula families that could explain the data. "
        "For each, name the invariant or transformation that supports it and the cheapest "
        "call of the main agent's tools that would refute it. Do not guess constants."),
    "candidate_critique": (
        "Audit the candidate formulas independently: identifiability, domain, units, "
        "extrapolation, numerical stability, redundant parts, simpler equivalent forms. "
        "Rank the follow-up tests that would separate them."),
    "residual_diagnosis": (
        "From the residual evidence, find what is missing: a variable, a factor, a pole, a "
        "symmetry, a transformation, or a numerical artifact. Propose one bounded next test."),
    "search_recovery": (
        "Assume the search has stalled. Challenge its assumptions, name a formula family it "
        "has not explored, and give a short recovery plan with a stop criterion."),
}
SUBAGENT_SYSTEM = (
    "You are an independent symbolic-regression critic. Do not repeat the main agent's "
    "conclusion by default: give falsifiable hypotheses or objections and a bounded plan of "
    "tests. You cannot run tools and you have not seen the raw data beyond the summary "
    "below; never claim otherwise.")


class ModelQueryTool(BaseTool):
    """What ``call_llm`` and ``subagent`` share: the run's adapter, one request (not registered)."""

    def run_settings(self) -> Any:
        """The run's settings (given by the agent, else the context's when they are a run's).

        Raises:
            ToolError: No run settings: the tool does not know which model the run uses.
        """
        settings = self.values.get("settings")
        if settings is None:
            args = getattr(self.context, "args", None)
            settings = args if hasattr(args, "llm_provider") else None
        if settings is None:
            raise ToolError(f"{self.metadata.name} needs the run's model settings; it runs "
                            "inside a run (or `srh tool call ... --llm PROVIDER:MODEL`).")
        return settings

    def ask(self, messages: list[dict[str, str]], provider: str = "", model: str = ""
            ) -> dict[str, Any]:
        """One request without tools to the run's model (or another model of its provider).

        Returns:
            ``content``, ``provider``, ``model`` and ``usage`` (token counts, price).
        """
        settings = self.run_settings()
        provider = provider or settings.llm_provider
        allowed = {settings.llm_provider, settings.strong_llm_provider or settings.llm_provider}
        if provider not in allowed:
            raise ToolArgumentError(
                f"llm_provider must be one the run uses ({', '.join(sorted(allowed))}), or "
                f"empty for the run's own. Got {provider!r} instead.", parameter="llm_provider")
        if provider == "offline":
            raise ToolError(f"{self.metadata.name}: the run's model is the offline rule-based "
                            "proposer, not a language model; it cannot answer free-form "
                            "questions. Use a model provider (--llm PROVIDER:MODEL).")
        model = model or (settings.llm_model if provider == settings.llm_provider
                          else settings.strong_llm_model)
        api = build_api(settings, provider, model or None, self.values.get("model_access"),
                        tool_list=None, tool_parser_name=settings.tool_parser)
        self.check_cancelled()
        with self.cut_when_cancelled(api):
            try:
                summary = api(messages, n=1, max_tokens=settings.llm_max_tokens).result()
            except ModelRequestCancelledError:
                self.check_cancelled()  # a force-pause: ToolRunAbort, as for every tool
                raise
        response = summary.responses[0] if summary.responses else None
        usage = summary.usage
        return {"content": response.content if response is not None else "",
                "finish_reason": response.finish_reason if response is not None else "missing",
                "provider": summary.provider, "model": summary.model,
                "usage": {"prompt_tokens": usage.prompt_tokens,
                          "completion_tokens": usage.completion_tokens,
                          "total_tokens": usage.total_tokens, "price": usage.price}}

    @contextmanager
    def cut_when_cancelled(self, api: Any) -> Iterator[None]:
        """Cancel ``api``'s request in flight as soon as this tool is cancelled."""
        with cancel_when(lambda: self.cancelled, api.cancel, poll_seconds=CANCEL_POLL_SECONDS,
                         name="srh-tool-request-cut"):
            yield


@BaseTool.register("call_llm")
class LLMTool(ModelQueryTool):
    """One plain request to the run's model (no tools; nothing in the search changes)."""

    def execute(self, messages: list[dict[str, str]] | str, llm_provider: str = "",
                llm_model: str = "") -> dict[str, Any]:
        """Ask the run's language model a question and return its answer.

        The model gets no tools and nothing of the search changes. Use it for an
        independent reading of text you already have; it has not seen the data.

        Args:
            messages: The question as text, or chat messages
                [{"role": "user"|"assistant"|"system", "content": "..."}].
            llm_provider: Empty for the run's provider (another must be one the run uses).
            llm_model: Empty for the run's model; another model name of that provider.
        """
        conversation = checked_messages(messages)
        return self.ask(conversation, str(llm_provider or ""), str(llm_model or ""))

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The model's answer, then who answered."""
        return f"{result['content']}\n[{result['provider']}:{result['model']}]"


def checked_messages(messages: Any) -> list[dict[str, str]]:
    """``messages`` as chat messages: text becomes one user message; roles and sizes checked.

    Raises:
        ToolArgumentError: Empty text, too many or too long messages, unknown roles.
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise ToolArgumentError(f"messages must be text or a list of 1 to {MAX_MESSAGES} "
                                "messages.", parameter="messages")
    checked = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ToolArgumentError(f"messages[{index}] must be {{'role': 'system'|'user'|"
                                    "'assistant', 'content': text}.", parameter="messages")
        checked.append({"role": role, "content": bounded_text(content, f"messages[{index}]")})
    if not any(m["content"].strip() for m in checked):
        raise ToolArgumentError("messages hold no text.", parameter="messages")
    return checked


def bounded_text(text: str, name: str) -> str:
    if len(text) > MAX_TEXT_CHARS:
        raise ToolArgumentError(f"{name} has {len(text)} characters; at most {MAX_TEXT_CHARS}.",
                                parameter=name.split("[")[0])
    return text


@BaseTool.register("subagent", aliases=("delegate_subagent",))
class SubagentTool(ModelQueryTool):
    """An independent critic on the run's model, in one of four roles (no tools)."""

    def execute(self, objective: str, mode: str = "hypothesis_generation",
                candidate_formulas: list[str] | None = None, evidence: str = ""
                ) -> dict[str, Any]:
        """Run a bounded independent SR analysis with a specific scientific role.

        Use this only when diversity or an independent audit is valuable: competing
        hypotheses before committing search budget, a critique of near-tied candidates,
        a diagnosis of structured residuals, or a way out of a stalled search. The
        subagent cannot run tools or change the search; it returns falsifiable advice.

        Args:
            objective: The precise scientific question or search decision to resolve.
            mode: hypothesis_generation, candidate_critique, residual_diagnosis or
                search_recovery.
            candidate_formulas: Candidate expressions to compare, when relevant.
            evidence: Compact metrics, residual summaries, units or history from your tools.
        """
        if not isinstance(objective, str) or not objective.strip():
            raise ToolArgumentError("objective must be a non-empty question.",
                                    parameter="objective")
        if mode not in SUBAGENT_MODES:
            raise ToolArgumentError(f"mode must be one of {', '.join(SUBAGENT_MODES)}. Got "
                                    f"{mode!r} instead.", parameter="mode")
        candidates = [str(f) for f in (candidate_formulas or [])]
        if len(candidates) > MAX_CANDIDATES:
            raise ToolArgumentError(f"At most {MAX_CANDIDATES} candidate_formulas.",
                                    parameter="candidate_formulas")
        messages = [{"role": "system", "content": SUBAGENT_SYSTEM},
                    {"role": "user", "content": self.brief(
                        bounded_text(objective, "objective"), mode, candidates,
                        bounded_text(evidence or "", "evidence"))}]
        return {"mode": mode, "objective": objective, **self.ask(messages)}

    def brief(self, objective: str, mode: str, candidates: Sequence[str], evidence: str) -> str:
        listed = "\n".join(f"- {formula}" for formula in candidates) or "(none)"
        return (f"Mode: {mode}\nMandate: {SUBAGENT_MODES[mode]}\n\nObjective:\n{objective}\n\n"
                f"Data summary:\n{data_summary(self.context)}\n\nCandidate formulas:\n{listed}"
                f"\n\nEvidence from the main agent:\n{evidence.strip() or '(none)'}")

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The subagent's answer under its role."""
        return f"Independent subagent ({result['mode']}):\n{result['content']}"


def data_summary(context: Any) -> str:
    """One line per variable: range, median, spread, and correlation with the target."""
    data = getattr(context, "data", None) or {}
    target = getattr(context, "target", None)
    y = _numeric(data.get(target)) if target in data else None
    lines = []
    for name, values in list(data.items())[:MAX_SUMMARY_VARIABLES]:
        array = _numeric(values)
        finite = None if array is None else array[np.isfinite(array)]
        if finite is None or finite.size == 0:
            lines.append(f"- {name}: shape {np.shape(values)}, no finite numeric summary")
            continue
        role = " (target)" if name == target else ""
        lines.append(f"- {name}{role}: n={finite.size}, min={finite.min():.4g}, "
                     f"median={np.median(finite):.4g}, max={finite.max():.4g}, "
                     f"std={finite.std():.4g}{_correlation(array, y, name == target)}")
    if len(data) > MAX_SUMMARY_VARIABLES:
        lines.append(f"... {len(data) - MAX_SUMMARY_VARIABLES} more variables")
    return "\n".join(lines) or "(no data)"


def _numeric(values: Any) -> np.ndarray | None:
    array = np.asarray(values)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.number):
        return None
    return array.astype(float)


def _correlation(x: np.ndarray, y: np.ndarray | None, is_target: bool) -> str:
    if y is None or is_target or len(x) != len(y):
        return ""
    both = np.isfinite(x) & np.isfinite(y)
    if both.sum() < 3 or np.std(x[both]) == 0 or np.std(y[both]) == 0:
        return ""
    return f", pearson with target {np.corrcoef(x[both], y[both])[0, 1]:.3g}"


@BaseTool.register("report_model_test", aliases=("model_test",))
class ModelTestTool(BaseTool):
    """Report a requested value during a model connectivity test."""

    def execute(self, answer: str) -> dict[str, str]:
        """Report the value the model-test prompt asked for, to complete the test.

        Args:
            answer: The exact value requested by the test prompt.
        """
        if not isinstance(answer, str):
            raise ToolArgumentError("answer must be text.", parameter="answer")
        return {"answer": answer}
