"""BranchState: everything a branch needs between two steps, as plain JSON.

The agent loop is a state machine over this record, so a branch can stop
after any step and continue in another process (a resumed run, or the next
Celery task of the branch) without replaying work.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from srh_core.types import ParentLink, SearchCoordinate, json_value

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
        status: "running", "done" (budget used) or "stopped" (early stop).
        stop_reason: Why the branch ended, when it has.
        seeds: The restart's seed candidates (``CandidateRecord.to_dict()``),
            part of what this branch's progress messages show.
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

    @property
    def finished(self) -> bool:
        return self.status != "running"

    def coordinate(self, K: int) -> SearchCoordinate:
        return SearchCoordinate(R=self.R, C=self.C, L=self.L, K=K)

    def copy(self) -> BranchState:
        return BranchState(self.run_id, self.R, self.C, self.L, copy.deepcopy(self.buffer),
                           list(self.parents), self.status, self.stop_reason,
                           copy.deepcopy(self.seeds))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "R": self.R, "C": self.C, "L": self.L,
            "buffer": json_value(self.buffer),
            "parents": [link.to_dict() for link in self.parents],
            "status": self.status, "stop_reason": self.stop_reason,
            "seeds": json_value(self.seeds),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BranchState:
        return cls(
            run_id=str(data["run_id"]), R=int(data["R"]), C=int(data["C"]), L=int(data["L"]),
            buffer=list(data.get("buffer") or []),
            parents=[ParentLink.from_dict(link) for link in data.get("parents") or []],
            status=data.get("status", "running"), stop_reason=data.get("stop_reason"),
            seeds=list(data.get("seeds") or []))
