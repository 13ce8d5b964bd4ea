"""RunSpec: what a worker needs to rebuild a run's agent, besides the data.

Submitting a run publishes its spec and its context payload once
(:meth:`srh_workers.store.RedisRunStore.publish`): settings, problem, the
agent's class as an import path, the wall-clock deadline. Workers load both
by run id; the data travels once per run, not with every task.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from srh_core.agent.settings import RUN_ID_PATTERN, SearchSettings
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.evaluator.sandboxed import EvaluatorSource, SandboxedEvaluator
from srh_core.skills.bundle import unpack_skills
from srh_workers.store import RedisRunStore

DEFAULT_AGENT_CLASS = "srh_core.agent.sragent:SRAgent"


class RunSpec(BaseModel):
    """A distributed run's specification.

    Attributes:
        run_id: The run identifier.
        settings: ``SearchSettings.model_dump()``.
        description: The problem description shown to the model.
        target: Target variable.
        features: Feature variables, in order.
        agent_class: Import path (``module:QualName``) of the SRAgent (sub)class.
        submitted_at: Epoch seconds at submission.
        deadline: Epoch seconds when the time limit ends, or None: no time limit, or a
            "fit" clock, which ends ``time_limit`` seconds after the run's first task on
            a worker started it (:meth:`~srh_workers.store.RedisRunStore.start_clock`):
            a run waiting in the queue loses none of its budget.
        api_key: The run's own model key (``srh run --own-key``), or None. It is
            stored with the spec in Redis (see deploy/README.md, "Model credentials")
            and is the only key a worker sends to a base URL the run chose.
        skills_bundle: The files of the run's ``skills_dir`` (srh_core.skills.bundle), or
            None; a worker unpacks them and points the run's ``skills_dir`` there.
        evaluator_source: The run's custom evaluator file (``evaluator`` setting), shipped
            as text; a worker runs it in the code sandbox
            (:class:`~srh_core.evaluator.sandboxed.SandboxedEvaluator`), never imports it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    settings: dict[str, Any]
    description: str
    target: str
    features: list[str]
    agent_class: str = DEFAULT_AGENT_CLASS
    submitted_at: float = Field(default_factory=time.time)
    deadline: float | None = None
    api_key: str | None = Field(default=None, repr=False)
    skills_bundle: dict[str, str] | None = Field(default=None, repr=False)
    evaluator_source: EvaluatorSource | None = Field(default=None, repr=False)

    def search_settings(self) -> SearchSettings:
        """The run's settings here: its shipped skills unpacked into this machine's temp dir."""
        settings = SearchSettings.build(**self.settings)
        if settings.evaluator is not None and self.evaluator_source is None:
            raise ConfigurationError(
                f"The run names a custom evaluator ({settings.evaluator}) but its spec carries "
                "no evaluator source: submit it with srh_workers.submit.submit_run, which "
                "ships the file.", setting="evaluator")
        if self.skills_bundle is not None:
            import tempfile

            folder = unpack_skills(self.skills_bundle, tempfile.gettempdir())
            settings = settings.replace(skills_dir=str(folder))
        return settings


    def evaluator(self) -> Any:
        """The run's custom evaluator for this worker (sandboxed), or None for the default.

        Raises:
            EvaluatorLoadError: The shipped source is damaged or does not load.
        """
        if self.evaluator_source is None:
            return None
        return SandboxedEvaluator(self.evaluator_source)


def load_spec(store: RedisRunStore) -> RunSpec:
    """The run's spec.

    Raises:
        SearchStateError: The run is unknown (never submitted, or expired).
    """
    raw = store.spec_json()
    if raw is None:
        raise SearchStateError(f"Run {store.run_id!r} is not known to this Redis (never "
                               "submitted, or its keys expired).")
    return RunSpec.model_validate_json(raw)
