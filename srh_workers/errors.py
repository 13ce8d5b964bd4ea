"""The exception tree of srh_workers (one base class, under srh_core's)."""

from __future__ import annotations

from srh_core.errors import SRHarnessError


class WorkersError(SRHarnessError):
    """Base class of every error srh_workers raises on purpose."""


class BrokerSendError(WorkersError):
    """A task could not be handed to the broker (it is down or refused the message)."""


class PoisonTaskError(WorkersError):
    """A task was delivered more than ``max_deliveries`` times and was failed without running.

    Only the message survives the result backend's JSON round trip; the
    fields are set where the error is raised (and are in the poison record).
    """

    def __init__(self, message: str, *, task_id: str | None = None,
                 task_name: str | None = None, deliveries: int | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.task_name = task_name
        self.deliveries = deliveries


class TransientTaskError(WorkersError):
    """A task failed for a reason worth retrying (raise it to ask for a retry)."""


class AgentBuildError(WorkersError):
    """A worker cannot build a run's agent from the run's spec (a bad setting, skill, tool,
    data payload or agent class): deterministic, so the run ends failed with it at once,
    never retried or re-delivered.

    Attributes:
        run_id: The run.
        reason: The run's stop reason, ``failed: <ErrorType>: <message>`` of the cause
            (:func:`srh_core.agent.outcome.failed_reason`).
    """

    def __init__(self, message: str, *, run_id: str, reason: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.reason = reason
