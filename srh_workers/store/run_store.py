"""RedisRunStore: one run in Redis, its key families composed, through the key schema.

It is the ``CandidateStore`` seam on Redis (nodes, candidates, ranking,
Pareto front, step plans, tool-call log) and the run's record (meta, spec and
data, the stored result, key retention, snapshots). The run's other key
families are parts of it, each the one owner of its keys, as rq gives each
concept its keys: ``store.flow`` (:mod:`srh_workers.store.flow`),
``store.controls`` (:mod:`srh_workers.store.control`), ``store.delivery``
(:mod:`srh_workers.store.delivery`); the cluster's keys belong to
:class:`~srh_workers.store.cluster.ClusterIndex`. Nothing else in srh_workers
builds a key or talks to Redis about a run.

It answers every query exactly as the embedded :class:`srh_core.state.SearchRunState`
does: the ranking metric and the sort key come from
:class:`srh_core.ranking.RankingPolicy` in Python, and Redis only stores and
orders what Python computed:

- ``rank`` is a sorted set holding the best-ranked entry of each canonical
  key, scored by the signed metric (``repr`` text, so the double is exact;
  -0.0 is stored as 0.0, which Python ranks equal to it). Redis orders equal
  scores by member bytes, and a member is the zero-padded complexity followed
  by an order-preserving encoding of (node id, canonical key), so ties fall
  exactly as ``RankingPolicy.sort_key`` orders them.
- ``best`` maps a canonical key to its entry in ``rank``; a new entry of the
  same key is added to ``rank`` and whichever of the two ranks lower is
  removed, so the zset decides, never a Lua comparison.
- The Pareto front is not stored: :func:`srh_core.ranking.pareto_front` walks
  the ranked pool on read.

Every write is a Lua script (``lua/``) or a MULTI transaction, atomic and
idempotent by node id, (node id, canonical key) or coordinate. A write that
spans families (a sample's write, a kept plan, the result) is still one
script: it takes each family's KEYS from that family's owner. One sample's
writes (its results, node, log lines and candidates, the K-set fan-in and
the advance claim) are batched by :meth:`RedisRunStore.sample` into one
script call: a tool task costs two round trips to Redis, one to read its
step and one to write its sample.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from redis.exceptions import WatchError

from srh_core.context.payload import ContextPayload
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.jsonio import dumps
from srh_core.ranking import (
    RankingPolicy,
    Selection,
    pareto_front,
    pareto_indices,
    ranked_result,
)
from srh_core.records import RunTotals, StepPlan, plan_spend, tool_call_record, tool_seconds
from srh_core.state import SNAPSHOT_VERSION, SearchRunState, coordinate_order
from srh_core.types import (
    CandidateRecord,
    ParentLink,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    ToolCall,
    ToolCallResult,
    json_value,
)
from srh_workers.store.cluster import ClusterIndex
from srh_workers.store.control import ControlRecords
from srh_workers.store.delivery import DeliveryGuard
from srh_workers.store.flow import FlowState, sample_record
from srh_workers.store.keys import (
    COMPLEXITY_DIGITS,
    FINISHED_RUN_TTL_SECONDS,
    PoolEntry,
    RunKeys,
    pool_entry,
    unranked_entry,
)
from srh_workers.store.scripts import RunScripts, node_args, reply_text

#: The RunTotals fields a kept step adds to the ``spend`` key.
SPEND_FIELDS = ("requests", "responses", "input_tokens", "output_tokens", "cached_tokens", "cost",
                "unpriced", "model_seconds")

if TYPE_CHECKING:
    from redis import Redis

CONTEXT_METADATA_FIELD = b"metadata"
CONTEXT_ARRAY_PREFIX = "array:"


def _ttl(ttl_seconds: int | None) -> int | None:
    if ttl_seconds is None or (isinstance(ttl_seconds, int) and not isinstance(ttl_seconds, bool)
                               and ttl_seconds >= 1):
        return ttl_seconds
    raise ConfigurationError(
        "The 'ttl_seconds' parameter of RedisRunStore must be an int >= 1 or None. "
        f"Got {ttl_seconds!r} instead.", setting="ttl_seconds")


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    """What the one write of a sample did.

    Attributes:
        recorded: True when the node was new.
        pushed: One flag per candidate: True when it entered the pool.
        done: How many samples of the step are recorded (the K-set's size).
        samples: How many samples the step has (K).
        claimed: True for the one sample (and its re-deliveries) that advances the step.
    """

    recorded: bool
    pushed: tuple[bool, ...]
    done: int
    samples: int
    claimed: bool = False

    @property
    def complete(self) -> bool:
        """True once every sample of the step is recorded (on every later call too)."""
        return self.done >= self.samples


@dataclass(slots=True)
class SampleBatch:
    """The writes of one sample, queued by the store until the scope ends.

    It is the store's :class:`~srh_core.records.SampleScope`: the loop
    hands it the sample's results with :meth:`keep_results`.
    """

    R: int
    C: int
    L: int
    K: int
    samples: int
    node: SearchNode | None = None
    entries: list[PoolEntry | None] = field(default_factory=list)
    log_lines: list[str] = field(default_factory=list)
    results: list[ToolCallResult] = field(default_factory=list)
    found: list[CandidateRecord] | None = None
    kept: bool = False
    outcome: SampleOutcome | None = None

    def keep_results(self, results: list[ToolCallResult],
                     candidates: Sequence[CandidateRecord] | None = None) -> None:
        """The sample's results, and the candidates found in them (stored for the closer)."""
        self.results, self.kept = list(results), True
        self.found = None if candidates is None else list(candidates)

    def matches(self, coordinate: SearchCoordinate) -> bool:
        return (coordinate.R, coordinate.C, coordinate.L, coordinate.K) == (
            self.R, self.C, self.L, self.K)


class RedisRunStore:
    """One run in Redis: its candidate records (the ``CandidateStore`` seam), its spec and
    data, its result and the retention of its keys; the other key families of the run are
    its parts, each owning its keys (all named by :class:`RunKeys`):

    - :attr:`flow`, a :class:`~srh_workers.store.flow.FlowState`: branches, plans, sample
      results, claims, levels, the stop flag and the whole-run lock;
    - :attr:`controls`, a :class:`~srh_workers.store.control.ControlRecords`: an
      interactive run's control state, command log, events and parked steps;
    - :attr:`delivery`, a :class:`~srh_workers.store.delivery.DeliveryGuard`: delivery
      counts and poison records;
    - :attr:`cluster`, the :class:`~srh_workers.store.cluster.ClusterIndex` it lists the
      run in (the run index and the watched runs).

    Creating a store registers the run (its ranking policy and metadata) in
    ``meta`` unless it is already there (``register=False`` skips that round
    trip for a run known to exist); any number of processes may hold a
    store of the same run, and all of them see the same state. A store may be
    shared between threads: a sample's batched writes belong to its thread.

    Args:
        client: A redis-py client (``decode_responses`` either way).
        run_id: The run identifier (no whitespace, no braces).
        ranking_metric: Metric that ranks candidates (e.g. "mse").
        larger_is_better: Whether larger metric values rank higher.
        ttl_seconds: TTL given to every key of the run once it is finished
            (see :meth:`result`); None keeps finished runs forever.
        agent_metadata: Settings and facts kept with the run (as in ``run.json``).
        register: Register the run's policy (skip for a run known to exist).

    Raises:
        SearchStateError: When the run exists with another ranking policy.
        ConfigurationError: When ``run_id`` or ``ttl_seconds`` is invalid.
    """

    def __init__(self, client: Redis, run_id: str, ranking_metric: str = "mse",
                 larger_is_better: bool = False, *,
                 ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS,
                 agent_metadata: Mapping[str, Any] | None = None,
                 register: bool = True) -> None:
        self.keys = RunKeys(run_id)
        self.run_id = run_id
        self.client = client
        self.policy = RankingPolicy(metric=ranking_metric, larger_is_better=larger_is_better)
        self.ttl_seconds = _ttl(ttl_seconds)
        self.agent_metadata = dict(agent_metadata or {})
        # The embedded state supplies the pure naming and node-building helpers.
        self._naming = SearchRunState(None, ranking_metric, larger_is_better, run_id=run_id)
        self._scripts = RunScripts(client)
        self.flow = FlowState(client, self.keys, self._scripts)
        self.controls = ControlRecords(client, self.keys, self._scripts, self.flow)
        self.delivery = DeliveryGuard(client, self.keys)
        self.cluster = ClusterIndex(client)
        if register:
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
             ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS) -> RedisRunStore:
        """Attach to an existing run, reading its ranking policy from Redis.

        Raises:
            SearchStateError: When Redis holds no run ``run_id``.
        """
        meta = {reply_text(k): reply_text(v)
                for k, v in client.hgetall(RunKeys(run_id).meta).items()}
        if "ranking_metric" not in meta:
            raise SearchStateError(f"Redis holds no run {run_id!r}.")
        return cls(client, run_id, meta["ranking_metric"], meta["larger_is_better"] == "1",
                   ttl_seconds=ttl_seconds, agent_metadata=json.loads(meta["agent_metadata"]),
                   register=False)

    @property
    def ranking_metric(self) -> str:
        return self.policy.metric

    @property
    def larger_is_better(self) -> bool:
        return self.policy.larger_is_better

    # ------------------------------------------------------------- naming
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

    # ------------------------------------------------------ candidate store
    @contextlib.contextmanager
    def sample(self, R: int, C: int, L: int, K: int, samples: int) -> Iterator[SampleBatch]:
        """Batch sample K's writes (of a step of ``samples``) into one script call at the end.

        The node, its candidates and its tool-call log lines written with the
        yielded batch (their writers' ``batch`` argument) are sent together
        with the sample's kept results, the K-set fan-in and, once the K-set
        is complete, the advance claim; the yielded batch's ``outcome`` says
        what happened. Reads inside the scope
        do not see the scope's own writes.
        """
        batch = SampleBatch(R, C, L, K, samples)
        yield batch  # the writers queue into it when they are given it
        batch.outcome = self._flush(batch)

    def _flush(self, batch: SampleBatch) -> SampleOutcome:
        if batch.node is None:
            raise SearchStateError(f"Sample R{batch.R}-C{batch.C}-L{batch.L}-K{batch.K} "
                                   "recorded no node.")
        return self.record_sample(batch.node, batch.entries, samples=batch.samples,
                                  results=batch.results if batch.kept else None,
                                  found=batch.found, log_lines=batch.log_lines)

    def record_sample(self, node: SearchNode,
                      candidates: Iterable[CandidateRecord | PoolEntry | None], *,
                      samples: int, results: Sequence[ToolCallResult] | None = None,
                      found: Sequence[CandidateRecord] | None = None,
                      log_lines: Sequence[str] = ()) -> SampleOutcome:
        """One sample's writes in one atomic script: what a tool task records.

        Stores the sample's results (first write wins), its node, its log lines
        (only with a new node) and its candidates, marks the sample done and,
        once every one of the ``samples`` is, claims the step's advance for it
        (SET NX: one sample wins, and so do its re-deliveries). Idempotent.

        Args:
            node: The sample's node; its coordinate names the step and sample.
            candidates: The sample's candidates (unrankable ones are not pooled).
            samples: K, the number of samples of the step (0: claim nothing).
            results: The sample's tool results, kept for closing the step.
            found: The candidates found in ``results``, kept with them (so the
                step's closer does not parse the sample's formulas again).
            log_lines: ``tool_calls.jsonl`` records of the sample, as JSON text.
        """
        entries = [c if isinstance(c, PoolEntry) or c is None else pool_entry(c, self.policy)
                   for c in candidates]
        keys, at = self.keys, node.coordinate
        done, results_key, advanced = self.flow.sample_keys(at.R, at.C, at.L)
        script_keys = (*keys.node_keys, *keys.pool_keys, done, keys.registry, results_key,
                       keys.tool_log, advanced)
        payload = "" if results is None else sample_record(results, found)
        argv: list[Any] = [*node_args(node), at.K, samples, payload, len(log_lines), *log_lines]
        argv += [value for entry in entries if entry is not None for value in entry.argv()]
        reply = self._scripts.call("record_sample", script_keys, argv)
        flags = iter(reply[3:])
        pushed = tuple(entry is not None and bool(next(flags)) for entry in entries)
        return SampleOutcome(bool(reply[0]), pushed, int(reply[1]), samples, bool(reply[2]))

    def record_node(self, node: SearchNode, *, batch: SampleBatch | None = None) -> bool:
        """Add one node; False (and no change) when its id is already recorded.

        With the ``batch`` of its sample (:meth:`sample`) the node is queued and
        True is returned; the batch's outcome says whether it was new.
        """
        if batch is not None and batch.matches(node.coordinate):
            batch.node = node
            return True
        return bool(self._scripts.call("record_node", self.keys.node_keys, node_args(node)))

    def push_candidate(self, candidate: CandidateRecord, *,
                       batch: SampleBatch | None = None) -> bool:
        """Add a candidate to the pool.

        Returns:
            False, without writing, when the candidate is unrankable; False
            when the same node already pooled the same canonical key; True
            when added (with a ``batch``: when queued).
        """
        entry = pool_entry(candidate, self.policy)
        if entry is None:
            return False
        if batch is not None:
            batch.entries.append(entry)
            return True
        return bool(self._scripts.call("push_candidate", self.keys.pool_keys, entry.argv()))

    def log_tool_calls(self, coordinate: Mapping[str, int], calls: Sequence[ToolCall],
                       results: Sequence[ToolCallResult], forced: bool, *,
                       batch: SampleBatch | None = None) -> None:
        """Append executed calls to the run's log (``tool_calls.jsonl`` when it finishes)."""
        lines = [dumps(tool_call_record(coordinate, call, result, forced))
                 for call, result in zip(calls, results, strict=False)]
        if batch is not None and not forced:
            batch.log_lines.extend(lines)
        elif lines:
            self.client.rpush(self.keys.tool_log, *lines)

    def tool_log(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.client.lrange(self.keys.tool_log, 0, -1)]

    def update_diagnostics(self, formula: str, diagnostics: Mapping[str, Any]) -> None:
        """Attach diagnostics (e.g. from ``eic``) to every pooled record of ``formula``."""
        updates = {}
        for field_, value in self.client.hgetall(self.keys.cands).items():
            candidate = CandidateRecord.from_dict(json.loads(value))
            if candidate.formula == formula:
                candidate.details["diagnostics"] = json_value(dict(diagnostics))
                updates[field_] = dumps(candidate.to_dict())
        if updates:
            self.client.hset(self.keys.cands, mapping=updates)

    # ------------------------------------------------------------- plans
    def save_plan(self, plan: StepPlan) -> StepPlan:
        """Store the plan unless one exists; return the stored one (first write wins).

        Counts the model request that made it in ``requests`` (every request
        sent counts, also one whose plan lost the race to a re-delivered twin).
        """
        keys = (*self.flow.plan_keys(plan.R, plan.C, plan.L), self.keys.spend)
        spent = plan_spend(plan).to_dict()
        delta = {name: spent[name] for name in SPEND_FIELDS}
        text = dumps(plan.to_dict())
        stored = self._scripts.call("save_plan", keys, [text, dumps(delta)])
        return StepPlan.from_dict(json.loads(text if stored is None else stored))

    def spend(self) -> RunTotals:
        """The kept steps' totals: tokens, cost and model time (what budgets read).

        One GET per budget check. Tool and wall time are not kept live (the
        tool time would cost a write per sample); :meth:`run_totals` adds them.
        """
        raw = self.client.get(self.keys.spend)
        return RunTotals.from_dict(None if raw is None else json.loads(raw))

    def run_totals(self) -> RunTotals:
        """:meth:`spend` with the tool time of the tool-call log and the wall time so far."""
        return self.spend().with_times(tool_seconds=tool_seconds(self.tool_log()),
                                       wall_seconds=self._wall_seconds())

    def _wall_seconds(self) -> float:
        submitted = self.cluster.submitted_at(self.run_id)
        return 0.0 if submitted is None else max(time.time() - submitted, 0.0)

    def load_plan(self, R: int, C: int, L: int) -> StepPlan | None:
        return self.flow.load_plan(R, C, L)

    # ----------------------------------------------------------- spec, data
    def publish(self, spec_json: str, payload: Any, submitted_at: float) -> None:
        """Write the run's spec and context payload and index the run (one transaction)."""
        mapping: dict[str, bytes] = {CONTEXT_METADATA_FIELD.decode(): json.dumps(
            payload.metadata_json()).encode()}
        mapping.update({CONTEXT_ARRAY_PREFIX + name: _npy(value)
                        for name, value in payload.arrays.items()})
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.keys.spec, spec_json)
        pipe.delete(self.keys.context)
        pipe.hset(self.keys.context, mapping=mapping)
        self.cluster.index_run(self.run_id, submitted_at, pipe)
        pipe.execute()

    def start_clock(self, at: float) -> float:
        """Start a "fit" time limit at ``at`` (epoch seconds) unless a task started it
        already (SET NX): the start every task of the run then counts from."""
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.keys.clock, repr(float(at)), nx=True)
        pipe.get(self.keys.clock)
        started = pipe.execute()[1]
        return float(at) if started is None else float(reply_text(started))

    def clock_started(self) -> float | None:
        """When the run's "fit" time limit started (epoch seconds); None: not yet."""
        raw = self.client.get(self.keys.clock)
        return None if raw is None else float(reply_text(raw))

    def spec_json(self) -> str | None:
        raw = self.client.get(self.keys.spec)
        return None if raw is None else reply_text(raw)

    def payload(self, revision: int | None = None) -> Any:
        """The context payload of the run (arrays decoded without pickle).

        Args:
            revision: A version published by :meth:`publish_data`; None: the one
                published at submit.

        Raises:
            SearchStateError: The run (or that version of its data) was not published.
        """
        if revision is not None:
            return self._revised_payload(revision)
        fields: Mapping[bytes, bytes] = self.client.hgetall(self.keys.context)
        if CONTEXT_METADATA_FIELD not in fields:
            raise SearchStateError(f"Run {self.run_id!r} has no published data.")
        metadata = json.loads(fields[CONTEXT_METADATA_FIELD])
        arrays = {key.decode()[len(CONTEXT_ARRAY_PREFIX):]:
                  np.load(io.BytesIO(value), allow_pickle=False)
                  for key, value in fields.items()
                  if key.decode().startswith(CONTEXT_ARRAY_PREFIX)}
        return ContextPayload.from_parts(metadata, arrays)

    def publish_data(self, payload: Any) -> int:
        """Publish a new version of the run's data; its tasks load it from their next one.

        The version is the payload's data revision; it is written next to the
        earlier ones (a task that read the old name still finds its data) and then
        named in the run's record (``meta`` field ``data_revision``), in one
        transaction. Versions are kept until the run's keys expire.

        Args:
            payload: ``AgentContext.to_payload()`` of the changed context.

        Returns:
            The published revision.

        Raises:
            ConfigurationError: The revision is not above the run's current one.
        """
        revision = payload.metadata.revision
        prefix = f"rev:{revision}:"
        mapping = {prefix + CONTEXT_METADATA_FIELD.decode(): json.dumps(payload.metadata_json())}
        mapping.update({f"{prefix}{CONTEXT_ARRAY_PREFIX}{name}": _npy(value)
                        for name, value in payload.arrays.items()})
        with self.client.pipeline(transaction=True) as pipe:
            pipe.watch(self.keys.meta)  # two refreshes at once: one of them is refused
            raw = pipe.hget(self.keys.meta, "data_revision")
            base = json.loads(pipe.hget(self.keys.context, CONTEXT_METADATA_FIELD) or "{}")
            current = int(raw) if raw is not None else int(base.get("revision", 0))
            if revision <= current:
                raise ConfigurationError(
                    f"Run {self.run_id!r} already has data revision {current}; a refresh must "
                    f"publish a later one. Got revision {revision} instead.", setting="data")
            pipe.multi()
            pipe.hset(self.keys.context, mapping=mapping)
            pipe.hset(self.keys.meta, "data_revision", revision)
            try:
                pipe.execute()
            except WatchError as error:
                raise ConfigurationError(f"Another data refresh of run {self.run_id!r} was "
                                         "published at the same time; load it and retry.",
                                         setting="data") from error
        return revision

    def data_revision(self) -> int | None:
        """The data version the run's record names (None: the one published at submit)."""
        raw = self.client.hget(self.keys.meta, "data_revision")
        return None if raw is None else int(raw)

    def _revised_payload(self, revision: int) -> Any:
        prefix = f"rev:{revision}:"
        raw = self.client.hget(self.keys.context, prefix + CONTEXT_METADATA_FIELD.decode())
        if raw is None:
            base = self.payload(None)  # the version published at submit has no prefix
            if base.metadata.revision != revision:
                raise SearchStateError(f"Run {self.run_id!r} has no data revision {revision}.")
            return base
        metadata = json.loads(raw)
        names = list(metadata.get("arrays") or {})
        values = self.client.hmget(self.keys.context,
                                   [f"{prefix}{CONTEXT_ARRAY_PREFIX}{name}" for name in names])
        arrays = {name: np.load(io.BytesIO(value), allow_pickle=False)
                  for name, value in zip(names, values, strict=True) if value is not None}
        return ContextPayload.from_parts(metadata, arrays)

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
        """The Pareto front of the ranked pool, best first (:func:`srh_core.ranking.pareto_front`
        of one atomic read of the ranked pool)."""
        return pareto_front(self.ranked_candidates())

    get_pareto_front = pareto_front

    @property
    def node_count(self) -> int:
        return int(self.client.hlen(self.keys.nodes))

    @property
    def latest_coordinate(self) -> SearchCoordinate | None:
        """The furthest coordinate recorded (by R, L, C, K), as the embedded store says."""
        coordinates = [SearchCoordinate.from_dict(json.loads(record)["coordinate"])
                       for record in self.client.hvals(self.keys.nodes)]
        return max(coordinates, key=coordinate_order, default=None)

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
    def result(self, status: str, progress: str, *, stop_reason: str | None = None,
               selection: Selection = "best") -> SearchResult:
        """Build the result from the ranked pool, store it, and start the finished-run TTL.

        ``selection`` picks the reported best candidate (:func:`srh_core.ranking.select_best`).
        Once: when another finalizer stored a result first (two branches ending at once),
        that one is returned and kept, so the run directory and Redis hold the same result.
        """
        result = ranked_result(self.ranked_candidates(), self.policy, selection, status=status,
                               progress=progress, run_id=self.run_id, stop_reason=stop_reason,
                               totals=self.run_totals().to_dict())
        stored = self._scripts.call(
            "store_result", (self.keys.result, self.keys.meta, *self.cluster.finished_keys()),
            [dumps(result.to_dict()), status, repr(time.time()), self.run_id])
        if not stored:
            return self.stored_result() or result
        self.expire_run()
        return result

    def stored_result(self) -> SearchResult | None:
        """The result written by :meth:`result`, or None while the run has none."""
        stored = self.client.get(self.keys.result)
        return None if stored is None else SearchResult.from_dict(json.loads(stored))

    def run_summary(self) -> dict[str, Any]:
        """Status, policy and counts of the run, read atomically (for ``srh status``)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.keys.meta)
        pipe.hlen(self.keys.nodes)
        pipe.llen(self.keys.cand_order)
        pipe.zcard(self.keys.rank)
        pipe.get(self.keys.spend)
        meta, nodes, pooled, ranked, spend = pipe.execute()
        summary = {reply_text(k): reply_text(v) for k, v in meta.items()
                   if reply_text(k) != "agent_metadata"}
        totals = RunTotals.from_dict(None if spend is None else json.loads(spend))
        return {**summary, "run_id": self.run_id, "nodes": nodes, "candidates": pooled,
                "ranked": ranked, "totals": totals.to_dict()}

    # ------------------------------------------------------- key retention
    def run_keys(self) -> list[str]:
        """Every key of the run: the static ones and the registered coordinate keys."""
        registered = sorted(reply_text(key) for key in self.client.smembers(self.keys.registry))
        return [*self.keys.static_keys(), *registered]

    def expire_run(self) -> int:
        """Give every key of the run the store's TTL (or none when it is None); count changed keys.

        Call it when the run is finished: a key created afterwards has no TTL.
        """
        seconds = 0 if self.ttl_seconds is None else self.ttl_seconds
        return int(self._scripts.call("set_ttl", self.run_keys(), [seconds]))

    def persist_run(self) -> int:
        """Remove the TTL from every key of the run (e.g. to resume a finished run)."""
        return int(self._scripts.call("set_ttl", self.run_keys(), [0]))

    def progress_marker(self) -> str:
        """A value that changes whenever the run moves: keys registered (plans, results,
        flags), nodes, model requests, the stop flag (one round trip; for the watchdog)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.scard(self.keys.registry)
        pipe.hlen(self.keys.nodes)
        pipe.get(self.keys.requests)
        pipe.get(self.keys.stop)
        pipe.exists(self.keys.result)
        return "|".join(str(reply_text(v) if isinstance(v, bytes) else v)
                        for v in pipe.execute())

    #: What a finished run keeps after :meth:`compact`: what ``srh status``, ``srh result``
    #: and a sweep report read (spec, meta, result, spend, requests, stop, node summaries,
    #: candidates, branches); the rest (node details with the messages, the data, the
    #: tool log, plans, per-step results and claims, the control streams) is in its run
    #: directory.
    COMPACTED_STATIC = ("node_detail", "node_order", "context", "toollog", "control:commands",
                        "control:events")
    COMPACTED_PREFIXES = ("plan:", "results:", "done:", "advanced:", "level:", "delivery:")

    def compact(self, exported_to: str | None = None) -> int:
        """Shrink a finished run's keys to what status, result and reports read.

        Call it only once its run directory is written (``exported_to`` says where; it is
        recorded in the meta hash). Returns how many keys were deleted.

        Raises:
            SearchStateError: The run has no result yet (its keys are still in use).
        """
        if self.client.get(self.keys.result) is None:
            raise SearchStateError(f"Run {self.run_id} has no result yet; only a finished "
                                   "run can be compacted.")
        registered = [reply_text(key) for key in self.client.smembers(self.keys.registry)]
        marker = self.keys.key("")
        doomed = [self.keys.key(name) for name in self.COMPACTED_STATIC] + [
            key for key in registered if key.removeprefix(marker).startswith(
                self.COMPACTED_PREFIXES)]
        known = set(registered)
        forgotten = [key for key in doomed if key in known]
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(*doomed)
        if forgotten:
            pipe.srem(self.keys.registry, *forgotten)
        pipe.hset(self.keys.meta, mapping={"compacted": "1",
                                           "exported_to": exported_to or ""})
        return int(pipe.execute()[0])

    def is_compacted(self) -> bool:
        return self.client.hget(self.keys.meta, "compacted") is not None

    def exported_to(self) -> str | None:
        value = self.client.hget(self.keys.meta, "exported_to")
        return reply_text(value) or None if value is not None else None

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
            {reply_text(k): v for k, v in reply.items()} if isinstance(reply, dict) else reply
            for reply in pipe.execute())
        records = [{**json.loads(nodes[reply_text(node_id)]),
                    "detail": json.loads(details[reply_text(node_id)])} for node_id in order]
        agent = json.loads(meta.get("agent_metadata") or "{}")
        return {"version": SNAPSHOT_VERSION, "run_id": self.run_id,
                "ranking_metric": self.policy.metric,
                "larger_is_better": self.policy.larger_is_better, "agent_metadata": agent,
                "nodes": records,
                "candidates": [json.loads(cands[reply_text(field_)]) for field_ in cand_order],
                "spend": self.run_totals().to_dict()}

    def save_snapshot(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return :meth:`export_state` with ``extra`` under "runtime" (nothing is written)."""
        snapshot = self.export_state()
        if extra is not None:
            snapshot["runtime"] = json_value(dict(extra))
        return snapshot

    @classmethod
    def from_snapshot(cls, client: Redis, snapshot: Mapping[str, Any], *,
                      ttl_seconds: int | None = FINISHED_RUN_TTL_SECONDS) -> RedisRunStore:
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
        store._load(nodes, pool, RunTotals.from_dict(snapshot.get("spend")))
        return store

    def _load(self, nodes: Sequence[SearchNode], pool: Sequence[CandidateRecord],
              spend: RunTotals) -> None:
        pipe = self.client.pipeline(transaction=True)
        spent = spend.to_dict()
        pipe.set(self.keys.spend, dumps({name: spent[name] for name in SPEND_FIELDS}), nx=True)
        for node in nodes:
            self._scripts.call("record_node", self.keys.node_keys, node_args(node), pipe)
        for candidate in pool:
            entry = pool_entry(candidate, self.policy) or unranked_entry(candidate)
            self._scripts.call("push_candidate", self.keys.pool_keys, entry.argv(), pipe)
        pipe.execute()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


__all__ = ["RedisRunStore", "SampleBatch", "SampleOutcome"]
