"""Tool-task coordination on the Redis store: recording samples and claiming steps.

These writes exist only in the distributed runtime (the embedded
:class:`srh_core.state.SearchRunState` has no counterpart): a tool task
records its sample with :meth:`ToolTaskCoordination.record_sample`, and the
tasks that see a step, a branch or a restart complete race for it with
``claim_*`` (SET NX flags), so exactly one of them advances it, re-delivered
tasks included. :class:`srh_workers.store.RedisCandidateStore` inherits them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from srh_core.jsonio import dumps
from srh_core.ranking import RankingPolicy
from srh_core.types import CandidateRecord, SearchNode
from srh_workers.keys import RunKeys, pool_entry
from srh_workers.scripts import RunScripts, node_args

if TYPE_CHECKING:
    from srh_core.agent.branch import BranchState


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    """What :meth:`RedisCandidateStore.record_sample` did.

    Attributes:
        recorded: True when the node was new.
        pushed: One flag per candidate: True when it entered the pool.
        done: How many samples of the step are recorded (the K-set's size).
        samples: How many samples the step has (K).
    """

    recorded: bool
    pushed: tuple[bool, ...]
    done: int
    samples: int

    @property
    def complete(self) -> bool:
        """True once every sample of the step is recorded (on every later call too)."""
        return self.done >= self.samples


class ToolTaskCoordination:
    """The runtime-only writes of the store, used by the Celery tasks (a mixin).

    The class that mixes it in provides the run's ``keys``, its ranking
    ``policy`` and its registered ``_scripts``.
    """

    keys: RunKeys
    policy: RankingPolicy
    _scripts: RunScripts

    def record_sample(self, node: SearchNode, candidates: Iterable[CandidateRecord], *,
                      samples: int) -> SampleOutcome:
        """Record one sample's node and candidates and mark it done, in one atomic step.

        This is the tool task's write. A re-delivered task changes nothing and
        still reports ``complete`` once the K-set is; :meth:`claim_advance`
        then decides which caller advances the step.

        Args:
            node: The sample's node; its coordinate names the step and sample.
            candidates: The sample's candidates (unrankable ones are not pooled).
            samples: K, the number of samples of the step.
        """
        entries = [pool_entry(candidate, self.policy) for candidate in candidates]
        coordinate = node.coordinate
        keys = (*self.keys.node_keys, *self.keys.pool_keys,
                self.keys.done(coordinate.R, coordinate.C, coordinate.L), self.keys.registry)
        args = [*node_args(node), coordinate.K]
        args += [value for entry in entries if entry is not None for value in entry.argv()]
        reply = self._scripts.call("record_sample", keys, args)
        flags = iter(reply[2:])
        pushed = tuple(entry is not None and bool(next(flags)) for entry in entries)
        return SampleOutcome(bool(reply[0]), pushed, int(reply[1]), samples)

    def _claim(self, flag: str, claimant: str | int) -> bool:
        return bool(self._scripts.call("claim", (flag, self.keys.registry), [str(claimant)]))

    def claim_advance(self, R: int, C: int, L: int, claimant: str | int) -> bool:
        """SET NX the step's advanced flag: True for one claimant only (and its re-deliveries).

        Args:
            claimant: Who asks, stable across re-deliveries (the sample index K).
        """
        return self._claim(self.keys.advanced(R, C, L), claimant)

    def finish_branch(self, R: int, C: int,
                      branch_state: BranchState | Mapping[str, Any] | None = None) -> int:
        """Mark branch C of restart R finished (storing its final state); return how many are.

        Idempotent: a re-delivered call counts the branch once. Whoever sees
        the count reach the number of branches calls :meth:`claim_restart`.
        """
        state = "" if branch_state is None else dumps(branch_state)
        keys = (self.keys.restart_finished(R), self.keys.registry, self.keys.branch(R, C))
        return int(self._scripts.call("finish_branch", keys, [C, state]))

    def claim_restart(self, R: int, claimant: str | int) -> bool:
        """SET NX the flag that starts restart R + 1; True for one claimant only (the branch C)."""
        return self._claim(self.keys.restart_advanced(R), claimant)


__all__ = ["SampleOutcome", "ToolTaskCoordination"]
