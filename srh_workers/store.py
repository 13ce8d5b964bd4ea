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

Every write is a Lua script (``srh_workers/lua``, registered and called
through :mod:`srh_workers.scripts`), atomic and idempotent by node id or by
(node id, canonical key); reads that combine keys are scripts or MULTI
transactions, so they see one consistent state.

The class also carries two mixins, each its own module: the tool tasks'
coordination writes (``record_sample``, ``claim_advance``, ``finish_branch``,
``claim_restart``; :mod:`srh_workers.store_runtime`, with
:class:`SampleOutcome`) and the run's status, stored result, TTL and
deletion (:mod:`srh_workers.store_lifecycle`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
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
from srh_workers.scripts import SCRIPTS, RunScripts, node_args, reply_text, script_source
from srh_workers.store_lifecycle import RunLifecycle
from srh_workers.store_runtime import SampleOutcome, ToolTaskCoordination

if TYPE_CHECKING:
    from redis import Redis


def _ttl(ttl_seconds: int | None) -> int | None:
    if ttl_seconds is None or (isinstance(ttl_seconds, int) and not isinstance(ttl_seconds, bool)
                               and ttl_seconds >= 1):
        return ttl_seconds
    raise ConfigurationError(
        "The 'ttl_seconds' parameter of RedisCandidateStore must be an int >= 1 or None. "
        f"Got {ttl_seconds!r} instead.", setting="ttl_seconds")


class RedisCandidateStore(ToolTaskCoordination, RunLifecycle):
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
        self._scripts = RunScripts(client)
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
        metric, larger = (reply_text(value) for value in pipe.execute()[-1])
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
        meta = {reply_text(k): reply_text(v)
                for k, v in client.hgetall(RunKeys(run_id).meta).items()}
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
    def record_node(self, node: SearchNode) -> bool:
        """Add one node; False (and no change) when its id is already recorded."""
        return bool(self._scripts.call("record_node", self.keys.node_keys, node_args(node)))

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
        return bool(self._scripts.call("push_candidate", self.keys.pool_keys, entry.argv()))

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
        return self._candidates(self._scripts.call("values", keys, [0, -1]))

    def _ranked(self, start: int, stop: int) -> list[CandidateRecord]:
        keys = (self.keys.rank, self.keys.cands)
        reply = self._scripts.call("ranked", keys, [start, stop, COMPLEXITY_DIGITS])
        return self._candidates(reply)

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
        return self._candidates(self._scripts.call("front", keys, [COMPLEXITY_DIGITS]))

    get_pareto_front = pareto_front

    @property
    def node_count(self) -> int:
        return int(self.client.hlen(self.keys.nodes))

    @property
    def latest_coordinate(self) -> SearchCoordinate | None:
        last = self._scripts.call("values", (self.keys.node_order, self.keys.nodes), [-1, -1])
        return SearchCoordinate.from_dict(json.loads(last[0])["coordinate"]) if last else None

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
            return [json.loads(value) for value in self._scripts.call("values", keys, [0, -1])]
        keys = (self.keys.node_order, self.keys.nodes, self.keys.node_detail)
        values = self._scripts.call("values", keys, [0, -1])
        return [{**json.loads(record), "detail": json.loads(detail)}
                for record, detail in zip(values[::2], values[1::2], strict=True)]

    # -------------------------------------------------------------- result
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
        pipe.hset(self.keys.meta, mapping={"status": status, "finished_at": repr(time.time())})
        pipe.execute()
        self.expire_run()
        return result

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
            {reply_text(k): v for k, v in reply.items()} if isinstance(reply, dict) else reply
            for reply in pipe.execute())
        records = [{**json.loads(nodes[reply_text(node_id)]),
                    "detail": json.loads(details[reply_text(node_id)])} for node_id in order]
        agent = json.loads(meta.get("agent_metadata") or "{}")
        return {"version": SNAPSHOT_VERSION, "run_id": self.run_id,
                "ranking_metric": self.policy.metric,
                "larger_is_better": self.policy.larger_is_better, "agent_metadata": agent,
                "nodes": records,
                "candidates": [json.loads(cands[reply_text(field)]) for field in cand_order]}

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
            self._scripts.call("record_node", self.keys.node_keys, node_args(node), pipe)
        for candidate in pool:
            entry = pool_entry(candidate, self.policy) or unranked_entry(candidate)
            self._scripts.call("push_candidate", self.keys.pool_keys, entry.argv(), pipe)
        pipe.execute()


__all__ = ["SCRIPTS", "RedisCandidateStore", "SampleOutcome", "script_source"]
