"""RedisCandidateStore: the ``CandidateStore`` seam on Redis, for the distributed runtime.

It keeps the same records as the embedded :class:`srh_core.state.SearchRunState`
and answers every query exactly as it does: the ranking metric and the sort
key come from :class:`srh_core.ranking.RankingPolicy` in Python, and Redis
only stores and orders what Python computed.

How the ranking rules map onto Redis (keys in :mod:`srh_workers.keys`):

- ``rank`` is a sorted set holding the best-ranked entry of each canonical
  key, scored by the signed metric (``repr`` text, so the double is exact;
  -0.0 is stored as 0.0, which Python ranks equal to it). Redis orders equal
  scores by member bytes, and a member is the zero-padded complexity followed
  by an order-preserving encoding of (node id, canonical key), so ties fall
  exactly as ``RankingPolicy.sort_key`` orders them.
- ``best`` maps a canonical key to its entry in ``rank``; a new entry of the
  same key is added to ``rank`` and whichever of the two ranks lower is
  removed, so the zset decides, never a Lua comparison.
- The Pareto front is not stored: a short script walks ``rank`` on read, so
  it can never disagree with the ranked list (an incremental front would
  have to be repaired whenever dedup removes an entry).

Every write is a Lua script (``srh_workers/lua``), atomic and idempotent by
node id or by (node id, canonical key); reads that combine keys are scripts
or MULTI transactions, so they see one consistent state.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.jsonio import dumps
from srh_core.ranking import RankingPolicy, pareto_indices
from srh_core.state import SNAPSHOT_VERSION, SearchRunState
from srh_core.types import (
    CandidateRecord,
    ParentLink,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    json_value,
)
from srh_workers.keys import (
    COMPLEXITY_DIGITS,
    FINISHED_RUN_TTL_SECONDS,
    RunKeys,
    pool_entry,
    unranked_entry,
)

if TYPE_CHECKING:
    from redis import Redis
    from redis.commands.core import Script

    from srh_core.agent.branch import BranchState

SCRIPTS = ("record_node", "push_candidate", "record_sample", "claim", "finish_branch",
           "set_ttl", "ranked", "front", "values")
_USES_LIB = frozenset({"record_node", "push_candidate", "record_sample"})


@functools.cache
def script_source(name: str) -> str:
    """Lua text of one script; the pool writers get ``lib.lua`` prepended."""
    folder = resources.files("srh_workers").joinpath("lua")
    body = folder.joinpath(f"{name}.lua").read_text(encoding="utf-8")
    if name in _USES_LIB:
        return folder.joinpath("lib.lua").read_text(encoding="utf-8") + "\n" + body
    return body


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


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _ttl(ttl_seconds: int | None) -> int | None:
    if ttl_seconds is None or (isinstance(ttl_seconds, int) and not isinstance(ttl_seconds, bool)
                               and ttl_seconds >= 1):
        return ttl_seconds
    raise ConfigurationError(
        "The 'ttl_seconds' parameter of RedisCandidateStore must be an int >= 1 or None. "
        f"Got {ttl_seconds!r} instead.", setting="ttl_seconds")


class RedisCandidateStore:
    """Nodes, candidates, ranking and Pareto front of one run, in Redis.

    Creating a store registers the run (its ranking policy and metadata) in
    ``meta`` unless it is already there; any number of processes may create
    a store for the same run, and all of them see the same state.

    Args:
        client: A redis-py client (``decode_responses`` either way).
        run_id: The run identifier (no whitespace, no braces).
        ranking_metric: Metric that ranks candidates (e.g. "mse").
        larger_is_better: Whether larger metric values rank higher.
        ttl_seconds: TTL given to every key of the run once it is finished
            (see :meth:`result`); None keeps finished runs forever.
        agent_metadata: Settings and facts kept with the run (as in ``run.json``).

    Raises:
        SearchStateError: When the run exists with another ranking policy.
        ConfigurationError: When ``run_id`` or ``ttl_seconds`` is invalid.
    """

    def __init__(self, client: Redis, run_id: str, ranking_metric: str = "mse",
                 larger_is_better: bool = False, *,
                 ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS,
                 agent_metadata: Mapping[str, Any] | None = None) -> None:
        self.keys = RunKeys(run_id)
        self.run_id = run_id
        self.client = client
        self.policy = RankingPolicy(metric=ranking_metric, larger_is_better=larger_is_better)
        self.ttl_seconds = _ttl(ttl_seconds)
        self.agent_metadata = dict(agent_metadata or {})
        # The embedded state supplies the pure naming and node-building helpers.
        self._naming = SearchRunState(None, ranking_metric, larger_is_better, run_id=run_id)
        self._scripts: dict[str, Script] = {
            name: client.register_script(script_source(name)) for name in SCRIPTS}
        self._register_run()

    def _register_run(self) -> None:
        meta, policy = self.keys.meta, self.policy
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(meta, "ranking_metric", policy.metric)
        pipe.hsetnx(meta, "larger_is_better", int(policy.larger_is_better))
        pipe.hsetnx(meta, "agent_metadata", dumps(self.agent_metadata))
        pipe.hsetnx(meta, "created_at", self.now())
        pipe.hsetnx(meta, "status", "running")
        pipe.hmget(meta, ["ranking_metric", "larger_is_better"])
        metric, larger = (_text(value) for value in pipe.execute()[-1])
        if (metric, larger) != (policy.metric, str(int(policy.larger_is_better))):
            raise SearchStateError(
                f"Run {self.run_id!r} ranks by {metric!r} (larger_is_better={larger == '1'}); "
                f"got {policy.metric!r} (larger_is_better={policy.larger_is_better}) instead.")

    @classmethod
    def open(cls, client: Redis, run_id: str, *,
             ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS) -> RedisCandidateStore:
        """Attach to an existing run, reading its ranking policy from Redis.

        Raises:
            SearchStateError: When Redis holds no run ``run_id``.
        """
        meta = {_text(k): _text(v) for k, v in client.hgetall(RunKeys(run_id).meta).items()}
        if "ranking_metric" not in meta:
            raise SearchStateError(f"Redis holds no run {run_id!r}.")
        return cls(client, run_id, meta["ranking_metric"], meta["larger_is_better"] == "1",
                   ttl_seconds=ttl_seconds, agent_metadata=json.loads(meta["agent_metadata"]))

    @property
    def ranking_metric(self) -> str:
        return self.policy.metric

    @property
    def larger_is_better(self) -> bool:
        return self.policy.larger_is_better

    # -------------------------------------------------------------- naming
    now = staticmethod(SearchRunState.now)
    node_label = staticmethod(SearchRunState.node_label)
    parent_link = staticmethod(SearchRunState.parent_link)

    def node_id(self, R: int, C: int, L: int, K: int) -> str:
        return self._naming.node_id(R, C, L, K)

    def build_node(self, response: Any, results: Sequence[Any], parents: tuple[ParentLink, ...],
                   *, R: int, C: int, L: int, K: int, prompt: list[dict[str, Any]] | None = None,
                   usage: Mapping[str, Any] | None = None) -> SearchNode:
        """Build (without recording) a node exactly as ``SearchRunState.build_node`` does."""
        return self._naming.build_node(response, results, parents, R=R, C=C, L=L, K=K,
                                       prompt=prompt, usage=usage)

    # -------------------------------------------------------------- writes
    def _call(self, name: str, keys: Sequence[str], args: Sequence[Any], client: Any = None
              ) -> Any:
        return self._scripts[name](keys=list(keys), args=list(args), client=client)

    @staticmethod
    def _node_args(node: SearchNode) -> tuple[str, str, str]:
        return node.node_id, dumps(node.to_dict(include_detail=False)), dumps(node.detail)

    def record_node(self, node: SearchNode) -> bool:
        """Add one node; False (and no change) when its id is already recorded."""
        return bool(self._call("record_node", self.keys.node_keys, self._node_args(node)))

    def register_iteration(self, response_list: Sequence[Any],
                           results_list: Sequence[Sequence[Any]], parents: tuple[ParentLink, ...],
                           prompt: list[dict[str, Any]], usage: Mapping[str, Any] | None,
                           R: int, L: int, C: int) -> list[SearchNode]:
        """Record the K responses of one step as nodes sharing ``parents``."""
        recorded = []
        for k, (response, results) in enumerate(zip(response_list, results_list, strict=True), 1):
            node = self.build_node(response, results, parents, R=R, C=C, L=L, K=k,
                                   prompt=prompt if k == 1 else None, usage=usage)
            if self.record_node(node):
                recorded.append(node)
        return recorded

    def push_candidate(self, candidate: CandidateRecord) -> bool:
        """Add a candidate to the pool.

        Returns:
            False, without writing, when the candidate is unrankable; False
            when the same node already pooled the same canonical key; True
            when added.
        """
        entry = pool_entry(candidate, self.policy)
        if entry is None:
            return False
        return bool(self._call("push_candidate", self.keys.pool_keys, entry.argv()))

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
        args = [*self._node_args(node), coordinate.K]
        args += [value for entry in entries if entry is not None for value in entry.argv()]
        reply = self._call("record_sample", keys, args)
        flags = iter(reply[2:])
        pushed = tuple(entry is not None and bool(next(flags)) for entry in entries)
        return SampleOutcome(bool(reply[0]), pushed, int(reply[1]), samples)

    def _claim(self, flag: str, claimant: str | int) -> bool:
        return bool(self._call("claim", (flag, self.keys.registry), [str(claimant)]))

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
        return int(self._call("finish_branch", keys, [C, state]))

    def claim_restart(self, R: int, claimant: str | int) -> bool:
        """SET NX the flag that starts restart R + 1; True for one claimant only (the branch C)."""
        return self._claim(self.keys.restart_advanced(R), claimant)

    def update_diagnostics(self, formula: str, diagnostics: Mapping[str, Any]) -> None:
        """Attach diagnostics (e.g. from ``eic``) to every pooled record of ``formula``."""
        updates = {}
        for field, value in self.client.hgetall(self.keys.cands).items():
            candidate = CandidateRecord.from_dict(json.loads(value))
            if candidate.formula == formula:
                candidate.details["diagnostics"] = json_value(dict(diagnostics))
                updates[field] = dumps(candidate.to_dict())
        if updates:
            self.client.hset(self.keys.cands, mapping=updates)

    # --------------------------------------------------------------- reads
    @staticmethod
    def _candidates(replies: Iterable[Any]) -> list[CandidateRecord]:
        return [CandidateRecord.from_dict(json.loads(reply)) for reply in replies]

    def candidates(self) -> list[CandidateRecord]:
        """Every pooled candidate in pooling order (duplicates across nodes kept)."""
        keys = (self.keys.cand_order, self.keys.cands)
        return self._candidates(self._call("values", keys, [0, -1]))

    def _ranked(self, start: int, stop: int) -> list[CandidateRecord]:
        keys = (self.keys.rank, self.keys.cands)
        return self._candidates(self._call("ranked", keys, [start, stop, COMPLEXITY_DIGITS]))

    def ranked_candidates(self) -> list[CandidateRecord]:
        """Ranked pool, best first, one entry per canonical key."""
        return self._ranked(0, -1)

    def top_k(self, k: int) -> list[CandidateRecord]:
        return self._ranked(0, k - 1) if k > 0 else []

    def best_candidate(self) -> CandidateRecord | None:
        best = self._ranked(0, 0)
        return best[0] if best else None

    def pareto_indices(self, candidates: list[CandidateRecord] | None = None) -> list[int]:
        """Indices of the Pareto front in ``candidates`` (default: the ranked pool)."""
        return pareto_indices(self.ranked_candidates() if candidates is None else candidates)

    def pareto_front(self) -> list[CandidateRecord]:
        """The Pareto front of the ranked pool, best first (one atomic script)."""
        keys = (self.keys.rank, self.keys.cands)
        return self._candidates(self._call("front", keys, [COMPLEXITY_DIGITS]))

    get_pareto_front = pareto_front

    @property
    def node_count(self) -> int:
        return int(self.client.hlen(self.keys.nodes))

    @property
    def latest_coordinate(self) -> SearchCoordinate | None:
        last = self._call("values", (self.keys.node_order, self.keys.nodes), [-1, -1])
        return SearchCoordinate.from_dict(json.loads(last[0])["coordinate"]) if last else None

    def run_summary(self) -> dict[str, Any]:
        """Status, policy and counts of the run, read atomically (for ``srh status``)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.keys.meta)
        pipe.hlen(self.keys.nodes)
        pipe.llen(self.keys.cand_order)
        pipe.zcard(self.keys.rank)
        meta, nodes, pooled, ranked = pipe.execute()
        summary = {_text(k): _text(v) for k, v in meta.items() if _text(k) != "agent_metadata"}
        return {**summary, "run_id": self.run_id, "nodes": nodes, "candidates": pooled,
                "ranked": ranked}

    def node_record(self, node_id: str) -> dict[str, Any] | None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hget(self.keys.nodes, node_id)
        pipe.hget(self.keys.node_detail, node_id)
        record, detail = pipe.execute()
        return None if record is None else {**json.loads(record), "detail": json.loads(detail)}

    def records(self, *, include_detail: bool = False) -> list[dict[str, Any]]:
        """Node records in recording order, with their detail when asked."""
        if not include_detail:
            keys = (self.keys.node_order, self.keys.nodes)
            return [json.loads(value) for value in self._call("values", keys, [0, -1])]
        keys = (self.keys.node_order, self.keys.nodes, self.keys.node_detail)
        values = self._call("values", keys, [0, -1])
        return [{**json.loads(record), "detail": json.loads(detail)}
                for record, detail in zip(values[::2], values[1::2], strict=True)]

    # ------------------------------------------------------ result and TTL
    def result(self, status: str, progress: str, *, stop_reason: str | None = None
               ) -> SearchResult:
        """Build the result from the ranked pool, store it, and start the finished-run TTL."""
        ranked = self.ranked_candidates()
        result = SearchResult(
            status=status, progress=progress, candidates=ranked,  # type: ignore[arg-type]
            pareto_front=pareto_indices(ranked), best_candidate=0 if ranked else None,
            run_id=self.run_id, stop_reason=stop_reason)
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.keys.result, dumps(result.to_dict()))
        pipe.hset(self.keys.meta, "status", status)
        pipe.execute()
        self.expire_run()
        return result

    def stored_result(self) -> SearchResult | None:
        """The result written by :meth:`result`, or None while the run has none."""
        stored = self.client.get(self.keys.result)
        return None if stored is None else SearchResult.from_dict(json.loads(stored))

    def run_keys(self) -> list[str]:
        """Every key of the run: the static ones and the registered coordinate keys."""
        registered = sorted(_text(key) for key in self.client.smembers(self.keys.registry))
        return [*self.keys.static_keys(), *registered]

    def expire_run(self) -> int:
        """Give every key of the run the store's TTL (or none when it is None); count changed keys.

        Call it when the run is finished: a key created afterwards has no TTL.
        """
        seconds = 0 if self.ttl_seconds is None else self.ttl_seconds
        return int(self._call("set_ttl", self.run_keys(), [seconds]))

    def persist_run(self) -> int:
        """Remove the TTL from every key of the run (e.g. to resume a finished run)."""
        return int(self._call("set_ttl", self.run_keys(), [0]))

    def delete_run(self) -> int:
        """Delete every key of the run; return how many existed."""
        return int(self.client.delete(*self.run_keys()))

    # ------------------------------------------------------ snapshot/resume
    def export_state(self) -> dict[str, Any]:
        """A ``SearchRunState.export_state()`` snapshot of the run, read atomically."""
        keys = self.keys
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(keys.meta)
        pipe.lrange(keys.node_order, 0, -1)
        pipe.hgetall(keys.nodes)
        pipe.hgetall(keys.node_detail)
        pipe.lrange(keys.cand_order, 0, -1)
        pipe.hgetall(keys.cands)
        meta, order, nodes, details, cand_order, cands = (
            {_text(k): v for k, v in reply.items()} if isinstance(reply, dict) else reply
            for reply in pipe.execute())
        records = [{**json.loads(nodes[_text(node_id)]),
                    "detail": json.loads(details[_text(node_id)])} for node_id in order]
        agent = json.loads(meta.get("agent_metadata") or "{}")
        return {"version": SNAPSHOT_VERSION, "run_id": self.run_id,
                "ranking_metric": self.policy.metric,
                "larger_is_better": self.policy.larger_is_better, "agent_metadata": agent,
                "nodes": records,
                "candidates": [json.loads(cands[_text(field)]) for field in cand_order]}

    def save_snapshot(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return :meth:`export_state` with ``extra`` under "runtime" (nothing is written)."""
        snapshot = self.export_state()
        if extra is not None:
            snapshot["runtime"] = json_value(dict(extra))
        return snapshot

    @classmethod
    def from_snapshot(cls, client: Redis, snapshot: Mapping[str, Any], *,
                      ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS
                      ) -> RedisCandidateStore:
        """Load an ``export_state()`` snapshot (either store's) into Redis, in one transaction.

        Records already in Redis are kept (every write is idempotent), so
        loading the same snapshot twice changes nothing.

        Raises:
            SearchStateError: When the snapshot is malformed or of another version.
        """
        if snapshot.get("version") != SNAPSHOT_VERSION:
            raise SearchStateError(f"Snapshot version {snapshot.get('version')!r} is not "
                                   f"supported; expected {SNAPSHOT_VERSION}.")
        try:
            store = cls(client, snapshot["run_id"], snapshot["ranking_metric"],
                        bool(snapshot["larger_is_better"]), ttl_seconds=ttl_seconds,
                        agent_metadata=snapshot.get("agent_metadata"))
            nodes = [SearchNode.from_dict(node) for node in snapshot.get("nodes", [])]
            pool = [CandidateRecord.from_dict(c) for c in snapshot.get("candidates", [])]
        except (KeyError, TypeError, ValueError) as error:
            raise SearchStateError(f"Malformed run snapshot: {error!r}.") from error
        store._load(nodes, pool)
        return store

    def _load(self, nodes: Sequence[SearchNode], pool: Sequence[CandidateRecord]) -> None:
        pipe = self.client.pipeline(transaction=True)
        for node in nodes:
            self._call("record_node", self.keys.node_keys, self._node_args(node), pipe)
        for candidate in pool:
            entry = pool_entry(candidate, self.policy) or unranked_entry(candidate)
            self._call("push_candidate", self.keys.pool_keys, entry.argv(), pipe)
        pipe.execute()


__all__ = ["SCRIPTS", "RedisCandidateStore", "SampleOutcome", "script_source"]
