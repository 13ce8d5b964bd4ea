"""The hooks that build what the model reads: initial buffers and progress messages.

:class:`PromptHooks` is one of SRAgent's bases (with the lifecycle and the
step hooks in :mod:`srh_core.agent.sragent`), so a subclass of SRAgent can
override any of these to change the prompts in both runtimes.

Progress messages show only what the active branch can know
deterministically: the restart's seed candidates and the branch's own
candidates. The active branch is a context variable, because the Celery
runtime shares one agent between threads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from srh_core.agent import prompts
from srh_core.agent.branch import BranchState
from srh_core.ranking import pareto_indices, rank_candidates
from srh_core.types import CandidateRecord, ParentLink

Message = dict[str, Any]

_ACTIVE_BRANCH: ContextVar[BranchState | None] = ContextVar("srh_active_branch", default=None)


class PromptHooks:
    """Initial buffers of a restart's branches, and per-step progress messages."""

    def create_initial_system_prompt(self, restart_records: list[CandidateRecord]) -> str:
        return prompts.system_prompt(self.settings.max_refinement_depth, restart_records,
                                     self.settings.ranking_metric)

    def create_initial_user_prompt(self, problem_description: str, X: Mapping[str, Any],
                                   y: Mapping[str, Any],
                                   restart_records: list[CandidateRecord]) -> str:
        target, values = next(iter(y.items()))
        descriptions = getattr(self.context, "variable_descriptions", {}) or {}
        return prompts.user_prompt(problem_description, X, target, values, descriptions,
                                   restart_records, self.settings.ranking_metric)

    def customize_initial_prompts(self, messages: list[Message], *, X: Mapping[str, Any],
                                  y: Mapping[str, Any]) -> list[Message]:
        """Hook: edit the finished system and user messages (identity by default)."""
        return messages

    def create_initial_prompt_messages(self, problem_description: str, X: Mapping[str, Any],
                                       y: Mapping[str, Any],
                                       restart_records: list[CandidateRecord]) -> list[Message]:
        messages = [
            {"role": "system", "content": self.create_initial_system_prompt(restart_records)},
            {"role": "user", "content": self.create_initial_user_prompt(
                problem_description, X, y, restart_records)},
        ]
        return self.customize_initial_prompts(messages, X=X, y=y)

    def create_initial_buffer(self, problem_description: str, X: Mapping[str, Any],
                              y: Mapping[str, Any],
                              restart_records: list[CandidateRecord]) -> list[Message]:
        """System and user prompts plus the first progress message of a branch."""
        messages = self.create_initial_prompt_messages(problem_description, X, y,
                                                       restart_records)
        return messages + [self.build_progress_message(0)]

    def start_restart(self, R: int) -> list[BranchState]:
        """The C branches of restart R, seeded from the pool's top-k."""
        records = self.store.top_k(self.settings.restart_top_k) if R > 1 else []
        seeds = [record.to_dict() for record in records]
        X, y = self.problem_arrays()
        template = BranchState(self.store.run_id, R, 0, 1, [], seeds=seeds)
        with self.active_branch(template):
            buffer = self.create_initial_buffer(self.problem_description, X, y, records)
        links = [ParentLink(record.node_id, "restart_seed") for record in records]
        self.emit("restart", R=R, seeds=[record.formula for record in records])
        return [BranchState(self.store.run_id, R, C, 1, [dict(m) for m in buffer], list(links),
                            seeds=list(seeds))
                for C in range(1, self.settings.global_width + 1)]

    @contextmanager
    def active_branch(self, branch: BranchState) -> Iterator[BranchState]:
        """Make ``branch`` the one progress messages describe, for this context."""
        token = _ACTIVE_BRANCH.set(branch)
        try:
            yield branch
        finally:
            _ACTIVE_BRANCH.reset(token)

    def visible_front(self, branch: BranchState | None) -> list[CandidateRecord]:
        """The Pareto front of what ``branch`` has seen: its seeds and its own candidates."""
        if branch is None or self.store is None:
            return []
        prefix = self.node_id(branch.R, branch.C, 0, 0).rsplit("-L", 1)[0] + "-L"
        own = [c for c in self.store.candidates() if c.node_id.startswith(prefix)]
        seeds = [CandidateRecord.from_dict(seed) for seed in branch.seeds]
        ranked = rank_candidates(seeds + own, self.policy)
        return [ranked[index] for index in pareto_indices(ranked)]

    def problem_arrays(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Feature and target arrays of the context, keyed by name."""
        data = self.context.data
        X = {name: data[name] for name in self.context.feature_names()}
        return X, {self.context.target: data[self.context.target]}

    def build_progress_message(self, L: int) -> dict[str, str]:
        """Step L+1 of the active branch, its Pareto front and the time left."""
        branch = _ACTIVE_BRANCH.get()
        settings = self.settings
        where = f"restart {branch.R if branch else 1}/{settings.max_restart_loop}"
        if branch is not None and branch.C > 0:
            where += f", branch {branch.C}/{settings.global_width}"
        return prompts.progress_message(L + 1, settings.max_refinement_depth,
                                        self.visible_front(branch), settings.ranking_metric,
                                        where, self.seconds_left())

