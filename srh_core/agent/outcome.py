"""How branches move on and how a run ends: the rules both runtimes apply.

Stop reasons (``BranchState.stop_reason``) are the constants below. The
scheduler (:mod:`srh_core.agent.scheduler`), which both runtimes drain,
applies these rules, and nothing else decides when a branch may open its
next step or when the next restart starts; :func:`run_outcome` gives the
status of a finished run in both.

The early-stop rule (``early_stop = true``), the same in both runtimes and
independent of scheduling:

    A restart's *exact level* is the lowest step L at which any of its
    branches recorded a candidate that meets the exact-fit rule. Every
    branch runs its steps up to that level (steps of that level finish) and
    opens none beyond it; no later restart starts; the run ends
    ``early_stopped``.

To obey it, a branch may open step L+1 only once every branch of its
restart has finished step L (or has ended): the branches of a restart move
level by level. A branch's own steps depend only on its own history (its
seeds and its own candidates, see :mod:`srh_core.agent.branch`), so the
nodes of a run are the same whatever the number of threads or workers.
With ``early_stop = false`` branches never wait for each other.

The failure rule: a step that raises (e.g. its model request still fails
after its retries) fails the run, in both runtimes. Embedded, the error ends
the run at once; on a cluster the step's branch ends with the stop reason
``failed: <error>`` (:func:`failed_reason`) and the run's stop flag is set to
it, so the other branches end at their next step, no later restart starts,
and the run ends ``failed`` with that reason, everything recorded kept.
A cancelled run ends ``interrupted`` with the reason ``cancelled`` (the
reference API's four statuses), even when a branch failed meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from srh_core.agent.branch import BranchState

if TYPE_CHECKING:
    from srh_core.records import RunTotals

STOP_DEPTH = "depth"
STOP_EARLY = "early_stopped"
STOP_TIME_LIMIT = "time_limit"
STOP_INTERRUPTED = "interrupted"
STOP_CANCELLED = "cancelled"
STOP_FAILED = "failed"
#: The run's spend reached ``max_cost`` or ``max_tokens`` (:func:`budget_stop`).
STOP_BUDGET = "budget"
#: The stop reason of a run ended by Ctrl-C or SIGTERM of the process that runs it.
INTERRUPTED_BY_USER = "interrupted by the user"
#: ``prepare_iteration`` reasons that end a branch as done, not the search: the interactive
#: controls' "next branch" and "next restart" (every remaining branch of that restart).
MOVE_ON_REASONS = frozenset({"next_c", "next_r"})
#: Reasons after which ``srh resume`` continues the branch (cut short, not finished; a
#: budget stop continues once the budget is raised).
RESUMABLE_STOPS = frozenset({STOP_TIME_LIMIT, STOP_INTERRUPTED, STOP_CANCELLED, STOP_BUDGET})

Gate = Literal["open", "wait", "stop"]
RunStatus = Literal["completed", "early_stopped", "interrupted", "failed"]
MAX_FAILURE_CHARS = 500


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The status and stop reason a finished run reports."""

    status: RunStatus
    reason: str


def failed_reason(error: BaseException | str) -> str:
    """The stop reason of a branch whose step failed with ``error`` (``failed: ...``)."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    if len(text) > MAX_FAILURE_CHARS:
        text = text[:MAX_FAILURE_CHARS] + "..."
    return f"{STOP_FAILED}: {text}"


def is_failure(reason: str | None) -> bool:
    """Whether a stop reason is a failed step's (:func:`failed_reason`)."""
    return reason is not None and reason.startswith(f"{STOP_FAILED}: ")


def exact_level(branches: Sequence[BranchState]) -> int | None:
    """The restart's exact level: the lowest step at which a branch recorded an exact candidate."""
    levels = [branch.exact_level for branch in branches if branch.exact_level is not None]
    return min(levels) if levels else None


def step_gate(branch: BranchState, siblings: Sequence[BranchState], early_stop: bool) -> Gate:
    """May ``branch`` (running, next step ``branch.L``) open its next step now?

    Args:
        branch: The branch about to open step ``branch.L``.
        siblings: Every branch of the restart, ``branch`` included (its latest states).
        early_stop: The run's ``early_stop`` setting.

    Returns:
        "open" to open the step, "wait" until the siblings finish step
        ``branch.L - 1``, or "stop" when the early-stop rule ends the branch.
    """
    if not early_stop:
        return "open"
    level = exact_level(siblings)
    if level is not None and level < branch.L:
        return "stop"
    behind = [s for s in siblings if not s.finished and s.L < branch.L]
    return "wait" if behind else "open"


def restart_is_last(branches: Sequence[BranchState], R: int, max_restart: int,
                    early_stop: bool) -> bool:
    """After every branch of restart R ended: True when no further restart runs."""
    if R >= max_restart or (early_stop and exact_level(branches) is not None):
        return True
    return any(branch.status == "stopped" for branch in branches)


def budget_stop(settings: Any, totals: RunTotals) -> str | None:
    """STOP_BUDGET once ``totals`` reached the run's ``max_cost`` or ``max_tokens``, else None.

    A budget is checked before a step opens, so the step that crosses it
    finishes (its responses are paid for) and no further step starts.
    """
    max_cost, max_tokens = settings.max_cost, settings.max_tokens
    if max_cost is not None and totals.cost >= max_cost:
        return STOP_BUDGET
    if max_tokens is not None and totals.tokens >= max_tokens:
        return STOP_BUDGET
    return None


def budget_message(settings: Any) -> str:
    """The stop reason a run ended by its budget reports."""
    parts = []
    if settings.max_cost is not None:
        parts.append(f"max_cost ${settings.max_cost:g}")
    if settings.max_tokens is not None:
        parts.append(f"max_tokens {settings.max_tokens}")
    return f"budget ({', '.join(parts) or 'unset'}) reached; resume with a higher budget"


def run_outcome(branches: Sequence[BranchState], *, early_stop: bool,
                time_limit: float | None, failure: str | None = None,
                settings: Any = None) -> RunOutcome:
    """The status and reason of a run whose last restart's branches are ``branches``.

    Args:
        branches: The branch states of the last restart that ran.
        early_stop: The run's ``early_stop`` setting.
        time_limit: The run's time limit (for the message).
        failure: Set when the run ended by an error (its description).
        settings: The run's settings (for the budget message).
    """
    if failure is not None:
        return RunOutcome("failed", failure)
    reasons = {branch.stop_reason for branch in branches if branch.status == "stopped"}
    if STOP_BUDGET in reasons:
        return RunOutcome("interrupted", budget_message(settings) if settings is not None
                          else "budget reached")
    if STOP_INTERRUPTED in reasons:
        return RunOutcome("interrupted", INTERRUPTED_BY_USER)
    if STOP_CANCELLED in reasons:
        return RunOutcome("interrupted", "cancelled")
    failures = sorted(reason for reason in reasons if is_failure(reason))
    if failures:
        return RunOutcome("failed", failures[0].removeprefix(f"{STOP_FAILED}: "))
    if STOP_TIME_LIMIT in reasons:
        limit = f" of {time_limit:g}s" if time_limit is not None else ""
        return RunOutcome("interrupted", f"time limit{limit} reached")
    if early_stop and exact_level(branches) is not None:
        return RunOutcome("early_stopped", "a candidate reached the exact-fit threshold")
    others = sorted(reason for reason in reasons if reason not in (STOP_EARLY, None))
    if others:
        return RunOutcome("interrupted", "; ".join(others))
    return RunOutcome("completed", "search budget used")


def resumable(branch: BranchState) -> BranchState:
    """The branch as ``srh resume`` continues it: a resumable stop is lifted."""
    if branch.status == "stopped" and branch.stop_reason in RESUMABLE_STOPS:
        branch.status, branch.stop_reason = "running", None
    return branch
