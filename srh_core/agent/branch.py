"""BranchState: everything a branch needs between two steps, as plain JSON.

The agent loop is a state machine over this record, so a branch can stop
after any step and continue in another process (a resumed run, or the next
Celery task of the branch) without replaying work.

A branch knows only what it can know deterministically: the restart's seed
candidates and its own candidates. Its ``front`` is the Pareto front the
progress messages show, updated after every step as
``front <- pareto(rank(front + this step's candidates))``; ``exact_level``
is the first step in which it recorded an exact candidate. Neither depends
on what other branches did or when, so a branch runs the same steps
whichever runtime schedules it and however its siblings are scheduled.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from srh_core.ranking import RankingPolicy, pareto_front, rank_candidates
from srh_core.types import CandidateRecord, ParentLink, SearchCoordinate, json_value

BranchStatus = Literal["running", "done", "stopped"]


@dataclass(slots=True)
class BranchState:
    """One conversation branch of one restart.

    Attributes:
        run_id: The run the branch belongs to.
        R: One-based restart index.
        C: One-based branch index.
        L: The next refinement step to run (one-based).
        buffer: Conversation messages so far (provider-compatible dicts).
        parents: Parent links of the nodes the next step will create.
        status: "running", "done" (budget used) or "stopped" (see ``stop_reason``).
        stop_reason: Why the branch ended, when it has (:mod:`srh_core.agent.outcome`).
        seeds: The restart's seed candidates (``CandidateRecord.to_dict()``).
        front: The branch's visible Pareto front (candidate dicts, best first).
        exact_level: First step L in which the branch recorded an exact candidate.
        data_revision: The context's data revision the branch's model was last told
            about (None: a branch recorded before data refresh; it is not told).
    """

    run_id: str
    R: int
    C: int
    L: int
    buffer: list[dict[str, Any]]
    parents: list[ParentLink] = field(default_factory=list)
    status: BranchStatus = "running"
    stop_reason: str | None = None
    seeds: list[dict[str, Any]] = field(default_factory=list)
    front: list[dict[str, Any]] = field(default_factory=list)
    exact_level: int | None = None
    data_revision: int | None = None

    @property
    def finished(self) -> bool:
        return self.status != "running"

    def coordinate(self, K: int) -> SearchCoordinate:
        return SearchCoordinate(R=self.R, C=self.C, L=self.L, K=K)

    def stop(self, reason: str, status: BranchStatus = "stopped") -> BranchState:
        """End the branch with ``reason`` (in place); returns the branch."""
        self.status, self.stop_reason = status, reason
        return self

    def front_records(self) -> list[CandidateRecord]:
        return [CandidateRecord.from_dict(record) for record in self.front]

    def copy(self) -> BranchState:
        return BranchState.from_dict(copy.deepcopy(self.to_dict()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "R": self.R, "C": self.C, "L": self.L,
            "buffer": json_value(self.buffer),
            "parents": [link.to_dict() for link in self.parents],
            "status": self.status, "stop_reason": self.stop_reason,
            "seeds": json_value(self.seeds), "front": json_value(self.front),
            "exact_level": self.exact_level, "data_revision": self.data_revision,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BranchState:
        exact, revision = data.get("exact_level"), data.get("data_revision")
        return cls(
            run_id=str(data["run_id"]), R=int(data["R"]), C=int(data["C"]), L=int(data["L"]),
            buffer=list(data.get("buffer") or []),
            parents=[ParentLink.from_dict(link) for link in data.get("parents") or []],
            status=data.get("status", "running"), stop_reason=data.get("stop_reason"),
            seeds=list(data.get("seeds") or []), front=list(data.get("front") or []),
            exact_level=None if exact is None else int(exact),
            data_revision=None if revision is None else int(revision))


def updated_front(front: Sequence[CandidateRecord], candidates: Sequence[CandidateRecord],
                  policy: RankingPolicy) -> list[dict[str, Any]]:
    """The branch front after a step: the Pareto front of the old front and the new candidates."""
    ranked = rank_candidates([*front, *candidates], policy)
    return [candidate.to_dict() for candidate in pareto_front(ranked)]
