"""StepPlan: one opened refinement step, as plain JSON.

``open_step`` produces it (prompt, the K model responses, usage, the parent
links the K nodes will carry); tool execution and ``advance`` consume it.
The distributed runtime stores it in Redis between tasks, which is also what
makes a re-delivered step never re-sample the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from srh_core.api import ModelResponse
from srh_core.types import ParentLink, json_value


@dataclass(slots=True)
class StepPlan:
    """The opened step (R, C, L) of a branch and its K model responses."""

    R: int
    C: int
    L: int
    prompt: list[dict[str, Any]]
    responses: list[ModelResponse]
    parents: list[ParentLink]
    usage: dict[str, Any] = field(default_factory=dict)
    route: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "R": self.R, "C": self.C, "L": self.L,
            "prompt": json_value(self.prompt),
            "responses": [response.to_dict() for response in self.responses],
            "parents": [link.to_dict() for link in self.parents],
            "usage": json_value(self.usage), "route": json_value(self.route),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepPlan:
        return cls(
            R=int(data["R"]), C=int(data["C"]), L=int(data["L"]),
            prompt=list(data.get("prompt") or []),
            responses=[ModelResponse.from_dict(r) for r in data.get("responses") or []],
            parents=[ParentLink.from_dict(link) for link in data.get("parents") or []],
            usage=dict(data.get("usage") or {}), route=dict(data.get("route") or {}))
