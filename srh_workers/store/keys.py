"""Every Redis key of a run, owned by one class through one key template.

All keys of run ``r`` have the form ``srh:{r}:<name>``. The braces are a
Redis Cluster hash tag: every key of a run hashes to the same slot, so the
Lua scripts (which take several keys of one run) also work on a cluster.

The schema is :data:`KEY_SCHEMA`: one :class:`KeySpec` per key (template,
family, Redis type, writers, readers, TTL). Each family has one owner
(:data:`FAMILY_OWNERS`) whose methods are the only writers of its keys:
:class:`srh_workers.store.RedisRunStore` (the run's record and its candidate
records) and its parts ``flow``, ``controls`` and ``delivery``. A write that
spans families is one Lua script of the store, taking each family's KEYS from
that family's owner. The cluster-wide keys (:data:`CLUSTER_KEY_SCHEMA`) belong
to :class:`srh_workers.store.cluster.ClusterIndex`.

TTL policy: while a run is running no key expires; once it is finished,
:meth:`RedisRunStore.result` (or ``expire_run``) gives every key of the
run, of every family, the store's TTL (:data:`FINISHED_RUN_TTL_SECONDS`, 7 days, by default).
Keys with a coordinate in their name are made on the fly, so their writer
adds the name to the ``keys`` set in the same atomic step; that set is how
``expire_run`` and ``delete_run`` find them.

Field and member encodings (see :func:`entry_field` and :func:`rank_member`)
are defined here too, since they are part of the key space's contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.jsonio import dumps
from srh_core.ranking import RankingPolicy
from srh_core.types import CandidateRecord

KEY_PREFIX = "srh"
KEY_TEMPLATE = "{prefix}:{{{run_id}}}:{name}"
FINISHED_RUN_TTL_SECONDS = 7 * 24 * 3600
MAX_RUN_ID_CHARS = 200
COMPLEXITY_DIGITS = 12
MAX_COMPLEXITY = 10**COMPLEXITY_DIGITS - 1
_RUN_ID_PATTERN = re.compile(r"[^\s{}]+")
_TERMINATOR = "\x00\x01"
_ESCAPED_NUL = "\x00\x02"


#: The key families of a run, each with its one owner (rq's "each concept owns its keys"):
#: ``candidates`` the candidate store (RedisRunStore: nodes, pool, tool log, spend),
#: ``run`` the run's record (RedisRunStore: meta, spec and data, result, the key registry),
#: ``flow`` RedisRunStore.flow (FlowState), ``controls`` RedisRunStore.controls
#: (ControlRecords), ``delivery`` RedisRunStore.delivery (DeliveryGuard); the cluster's own
#: keys (:data:`CLUSTER_KEY_SCHEMA`) belong to ClusterIndex.
FAMILY_OWNERS = {
    "candidates": "RedisRunStore", "run": "RedisRunStore", "flow": "FlowState",
    "controls": "ControlRecords", "delivery": "DeliveryGuard", "cluster": "ClusterIndex",
}


@dataclass(frozen=True, slots=True)
class KeySpec:
    """Documentation of one key: its template, family, Redis type, writers, readers and TTL."""

    template: str
    family: str
    type: str
    writer: str
    reader: str
    ttl: str = "none while running; the store's TTL once finished"


KEY_SCHEMA: tuple[KeySpec, ...] = (
    # the run's record: RedisRunStore
    KeySpec("meta", "run", "hash", "store (create, result, compact)", "store, srh status"),
    KeySpec("result", "run", "string", "store.result (store_result.lua)",
            "srh result, stored_result"),
    KeySpec("keys", "run", "set", "every writer of a registered key (all families)",
            "expire_run, compact, delete_run"),
    KeySpec("spec", "run", "string", "store.publish (submit)", "every task (load the run)"),
    KeySpec("clock", "run", "string",
            "store.start_clock (SET NX: a \"fit\" clock's first task, once its tools are up)",
            "the run view (the agent's deadline), the run directory's clock record"),
    KeySpec("context", "run", "hash",
            "store.publish (submit), store.publish_data (a data refresh: rev:<n>: fields)",
            "workers (context cache, per data revision)"),
    # candidate records: RedisRunStore (the CandidateStore seam)
    KeySpec("nodes", "candidates", "hash", "record_node, record_sample", "store listings"),
    KeySpec("node_detail", "candidates", "hash", "record_node, record_sample",
            "node_record, export_state"),
    KeySpec("node_order", "candidates", "list", "record_node, record_sample",
            "records, latest_coordinate"),
    KeySpec("cands", "candidates", "hash", "push_candidate, record_sample",
            "ranked, export_state"),
    KeySpec("cand_order", "candidates", "list", "push_candidate, record_sample",
            "candidates, export_state"),
    KeySpec("rank", "candidates", "zset", "push_candidate, record_sample", "ranked script"),
    KeySpec("best", "candidates", "hash", "push_candidate, record_sample",
            "push_candidate (dedup)"),
    KeySpec("spend", "candidates", "string", "save_plan (Lua: adds each kept step's spend)",
            "budgets (branch steps), srh status, result totals"),
    KeySpec("toollog", "candidates", "list", "record_sample, log_tool_calls",
            "tool_log (tool_calls.jsonl)"),
    # flow state: RedisRunStore.flow (FlowState)
    KeySpec("branch:{R}:{C}", "flow", "string", "flow.save_branches, flow.finish_branch",
            "flow.step_state, flow.load_branches"),
    KeySpec("plan:{R}:{C}:{L}", "flow", "string", "store.save_plan (flow.plan_keys)",
            "flow.sample_state, flow.load_plan"),
    KeySpec("requests", "flow", "string", "store.save_plan (INCR per model request)",
            "flow.model_requests (srh status)"),
    KeySpec("results:{R}:{C}:{L}", "flow", "hash",
            "record_sample (flow.sample_keys), flow.store_results (HSETNX per K)",
            "flow.sample_state, flow.close_state"),
    KeySpec("done:{R}:{C}:{L}", "flow", "set", "record_sample (flow.sample_keys)",
            "record_sample (K-set fan-in)"),
    KeySpec("advanced:{R}:{C}:{L}", "flow", "string",
            "record_sample, flow.claim_advance (SET NX)", "flow.claim_advance"),
    KeySpec("restart:{R}:finished", "flow", "set", "flow.finish_branch",
            "flow.finish_branch, flow.level_done (barrier)"),
    KeySpec("restart:{R}:advanced", "flow", "string", "flow.claim_restart (SET NX)",
            "flow.claim_restart"),
    KeySpec("level:{R}:{L}", "flow", "set",
            "flow.level_done (early stop: branches done with step L)", "flow.level_done"),
    KeySpec("level:{R}:{L}:released", "flow", "string", "flow.level_done (SET NX)",
            "flow.level_done"),
    KeySpec("stop", "flow", "string", "flow.request_stop (SET NX: cancel, failure)",
            "flow.stop_reason, flow.step_state"),
    KeySpec("lock", "flow", "string", "flow.hold_lock (SET NX PX: who runs a whole run)",
            "flow.hold_lock, controls.update_control (WATCH)"),
    # controls: RedisRunStore.controls (ControlRecords)
    KeySpec("control", "controls", "string", "controls.update_control (WATCH/MULTI)",
            "update_control, control_view, the cancel signal"),
    KeySpec("control:commands", "controls", "stream",
            "controls.update_control (XADD MAXLEN ~: the command log)", "controls.command_log"),
    KeySpec("control:events", "controls", "stream",
            "controls.publish_events (id <seq>-0, MAXLEN ~)", "controls.read_events (srh web)"),
    KeySpec("control:seq", "controls", "string", "controls.publish_events (INCR)",
            "controls.read_events, controls.control_view"),
    KeySpec("control:held", "controls", "set",
            "controls.update_control (a paused run parks a step)",
            "update_control (a release takes them all), control_view"),
    KeySpec("control:taken", "controls", "hash",
            "controls.update_control (R:C:L -> a step's boundary decision)",
            "update_control (a re-delivered step takes the same)"),
    # delivery guard: RedisRunStore.delivery (DeliveryGuard)
    KeySpec("delivery:{task_id}:{retries}", "delivery", "string",
            "delivery.count_delivery (SRHTask: SET NX EX, INCR)", "delivery.count_delivery",
            ttl="24 h from the first delivery"),
    KeySpec("poison", "delivery", "hash",
            "delivery.report_poison (task id -> PoisonRecord JSON)",
            "delivery.poison_reports (srh status)"),
)

CLUSTER_KEY_SCHEMA: tuple[KeySpec, ...] = (
    KeySpec("srh:runs", "cluster", "zset", "index_run (store.publish), unindex_run",
            "recent_runs (srh status), submitted_at", ttl="none"),
    KeySpec("srh:active", "cluster", "zset",
            "index_run, touch_active, forget_active, store_result.lua (finished_keys)",
            "watched_runs (the watchdog)", ttl="none"),
    KeySpec("srh:active:progress", "cluster", "hash", "watch_progress, forget_active",
            "watch_progress", ttl="none"),
    KeySpec("srh:watchdog:lock", "cluster", "string", "take_watchdog_turn (SET NX PX)",
            "take_watchdog_turn", ttl="90 % of the watchdog's interval"),
    KeySpec("srh:endpoints", "cluster", "string", "publish_endpoints (a worker's start)",
            "endpoints (submit_access)", ttl="none"),
    KeySpec("srh:workers:drained", "cluster", "hash", "drain_worker, undrain_worker",
            "drained_worker(s) (srh status)", ttl="none"),
)
"""The keys of the whole cluster, every one read and written by
:class:`srh_workers.store.cluster.ClusterIndex` (quota keys: :func:`quota_key`)."""

RUNS_INDEX = "srh:runs"
"""Zset of every submitted run id, scored by submission time (``srh status`` lists it)."""
ACTIVE_RUNS = "srh:active"
"""Zset of the runs without a result, scored by when the watchdog last saw them progress
(added at submission, left with the result)."""
ACTIVE_PROGRESS = "srh:active:progress"
"""Hash: run id -> the progress marker the watchdog saw last (``progress_marker``)."""
WATCHDOG_LOCK = "srh:watchdog:lock"
"""String: the worker whose watchdog checks the runs this interval (SET NX with a TTL)."""

ENDPOINTS_KEY = "srh:endpoints"
"""String: JSON list of the operator's model endpoints (public part), set by workers at start."""

DRAINED_WORKERS = "srh:workers:drained"
"""Hash: node name -> JSON {queues, at} of a worker drained by ``srh worker drain``."""


def quota_key(endpoint: str, part: str) -> str:
    """A model endpoint's cluster-wide quota key (srh_workers.quota): ``part`` is
    ``cooldown`` (string: epoch ms until which nobody sends), ``in_flight`` (zset: holder
    -> lease expiry ms), ``bell`` (list: one item per slot released, for the waiters'
    BLPOP), ``rpm`` or ``tpm`` (string: the GCRA's theoretical arrival ms)."""
    return f"srh:quota:{{{endpoint}}}:{part}"


def _coordinate(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"Coordinate {name} must be an int >= 1 (coordinates are one-based). "
            f"Got {value!r} instead.", setting=name)
    return value


def _static_key(name: str, doc: str) -> property:
    return property(lambda self: self.key(name), doc=doc)


@dataclass(frozen=True, slots=True)
class RunKeys:
    """The key names of one run; the only place a Redis key name is built.

    Args:
        run_id: The run identifier: non-empty, no whitespace and no braces
            (braces would break the cluster hash tag).
        prefix: Namespace of the harness's keys.

    Raises:
        ConfigurationError: When ``run_id`` cannot be part of a key.
    """

    run_id: str
    prefix: str = KEY_PREFIX

    STATIC: ClassVar[tuple[str, ...]] = tuple(
        spec.template for spec in KEY_SCHEMA if "{" not in spec.template)

    def __post_init__(self) -> None:
        run_id = self.run_id
        if (not isinstance(run_id, str) or len(run_id) > MAX_RUN_ID_CHARS
                or not _RUN_ID_PATTERN.fullmatch(run_id)):
            raise ConfigurationError(
                f"The run id must be a non-empty string of at most {MAX_RUN_ID_CHARS} "
                f"characters without whitespace or braces. Got {run_id!r} instead.",
                setting="run_id")

    def key(self, name: str) -> str:
        """Return the full key of ``name`` (e.g. "nodes" -> "srh:{run}:nodes")."""
        return KEY_TEMPLATE.format(prefix=self.prefix, run_id=self.run_id, name=name)

    @property
    def pattern(self) -> str:
        """A SCAN/KEYS glob matching every key of this run (glob characters escaped)."""
        escaped = re.sub(r"([\\*?\[\]])", r"\\\1", self.run_id)
        return f"{self.prefix}:\\{{{escaped}\\}}:*"

    def static_keys(self) -> tuple[str, ...]:
        """Every key whose name does not depend on a coordinate."""
        return tuple(self.key(name) for name in self.STATIC)

    meta = _static_key("meta", "Hash: ranking policy, agent metadata, created_at, status.")
    nodes = _static_key("nodes", "Hash: node id -> node JSON without detail.")
    node_detail = _static_key("node_detail", "Hash: node id -> the node's detail JSON.")
    node_order = _static_key("node_order", "List: node ids in recording order.")
    cands = _static_key("cands", "Hash: entry field -> candidate JSON.")
    cand_order = _static_key("cand_order", "List: entry fields in pooling order.")
    rank = _static_key("rank", "Zset: best entry per canonical key, by signed metric.")
    best = _static_key("best", "Hash: canonical key -> rank member of its best entry.")
    result = _static_key("result", "String: the SearchResult JSON of a finished run.")
    stop = _static_key("stop", "String: set when the run must stop early (the reason).")
    registry = _static_key("keys", "Set: names of the run's coordinate keys.")
    spec = _static_key("spec", "String: the run specification JSON (settings, problem).")
    clock = _static_key("clock", "String: epoch seconds when a \"fit\" time limit started "
                        "counting (the run's first task on a worker).")
    context = _static_key("context", "Hash: context metadata JSON and one .npy per array "
                          "(a refreshed version's fields prefixed rev:<revision>:).")
    requests = _static_key("requests", "String: counter of model requests actually sent.")
    spend = _static_key("spend", "String: JSON totals of the kept steps (tokens, cost, time).")
    poison = _static_key("poison", "Hash: task id -> PoisonRecord JSON of a poison task.")
    tool_log = _static_key("toollog", "List: tool_calls.jsonl records, in recording order.")
    lock = _static_key("lock", "String: id of the task running a run-granularity run.")
    control = _static_key("control", "String: an interactive run's control state JSON.")
    control_commands = _static_key("control:commands", "Stream: the commands received.")
    control_events = _static_key("control:events", "Stream: timeline events, id <seq>-0.")
    control_seq = _static_key("control:seq", "String: the last event seq published.")
    control_held = _static_key("control:held", "Set: the parked steps of a paused run.")
    control_taken = _static_key("control:taken", "Hash: R:C:L -> boundary decision JSON.")

    def delivery(self, task_id: str, retries: int) -> str:
        """Counter of the deliveries of one task message (one retry generation)."""
        return self.key(f"delivery:{task_id}:{retries}")

    @property
    def node_keys(self) -> tuple[str, str, str]:
        """KEYS of a node write: nodes, node_detail, node_order."""
        return self.nodes, self.node_detail, self.node_order

    @property
    def pool_keys(self) -> tuple[str, str, str, str]:
        """KEYS of a candidate write: cands, cand_order, rank, best."""
        return self.cands, self.cand_order, self.rank, self.best

    def branch(self, R: int, C: int) -> str:
        """JSON ``BranchState`` of branch (R, C)."""
        return self.key(f"branch:{_coordinate('R', R)}:{_coordinate('C', C)}")

    def plan(self, R: int, C: int, L: int) -> str:
        """JSON step plan (the K cached model responses) of step (R, C, L)."""
        return self.key(f"plan:{_coordinate('R', R)}:{_coordinate('C', C)}:"
                        f"{_coordinate('L', L)}")

    def done(self, R: int, C: int, L: int) -> str:
        """Set of the sample indices K of step (R, C, L) whose tool calls are recorded."""
        return self.key(f"done:{_coordinate('R', R)}:{_coordinate('C', C)}:"
                        f"{_coordinate('L', L)}")

    def advanced(self, R: int, C: int, L: int) -> str:
        """SET NX flag: who advances step (R, C, L) once its K-set is complete."""
        return self.key(f"advanced:{_coordinate('R', R)}:{_coordinate('C', C)}:"
                        f"{_coordinate('L', L)}")

    def restart_finished(self, R: int) -> str:
        """Set of the branch indices C of restart R that have finished."""
        return self.key(f"restart:{_coordinate('R', R)}:finished")

    def results(self, R: int, C: int, L: int) -> str:
        """Hash: sample index K -> the sample's ToolCallResults and the candidates found in
        them (``flow.sample_record``; a bare results list before they were kept); first
        write wins."""
        return self.key(f"results:{_coordinate('R', R)}:{_coordinate('C', C)}:"
                        f"{_coordinate('L', L)}")

    def level(self, R: int, L: int) -> str:
        """Set of the branch indices C of restart R done with step level L (early stop)."""
        return self.key(f"level:{_coordinate('R', R)}:{_coordinate('L', L)}")

    def level_released(self, R: int, L: int) -> str:
        """SET NX flag: who moves restart R's branches past step level L."""
        return self.key(f"level:{_coordinate('R', R)}:{_coordinate('L', L)}:released")

    def restart_advanced(self, R: int) -> str:
        """SET NX flag: who starts restart R + 1 once every branch of R has finished."""
        return self.key(f"restart:{_coordinate('R', R)}:advanced")


def _order_preserving(text: str) -> str:
    # NUL is escaped and every part ends in NUL+1, so the byte order of an
    # encoded tuple equals Python's order of the tuple of strings.
    return text.replace("\x00", _ESCAPED_NUL) + _TERMINATOR


def entry_field(node_id: str, canonical_key: str) -> str:
    """The ``cands`` field of one pool entry: an injective, order-preserving pair encoding.

    Byte order of fields equals Python's order of ``(node_id, canonical_key)``
    (UTF-8 preserves code-point order), which the ``rank`` members rely on.
    """
    return _order_preserving(node_id) + _order_preserving(canonical_key)


def rank_member(complexity: int, field: str) -> str:
    """The ``rank`` member of a pool entry: zero-padded complexity, then its field.

    Redis orders equal scores by member bytes, so members order ties exactly
    as ``RankingPolicy.sort_key`` does: complexity, node id, canonical key.

    Raises:
        SearchStateError: When ``complexity`` is outside [0, MAX_COMPLEXITY].
    """
    if not 0 <= complexity <= MAX_COMPLEXITY:
        raise SearchStateError(
            f"A candidate's complexity must be a node count in [0, {MAX_COMPLEXITY}] to be "
            f"ranked in Redis. Got {complexity!r} instead.")
    return f"{complexity:0{COMPLEXITY_DIGITS}d}{field}"


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """One candidate as the pool scripts take it (ARGV of ``push_candidate.lua``).

    Attributes:
        field: ``cands`` field, from :func:`entry_field`.
        record: The candidate's JSON.
        key: Its canonical key (the ``best`` field).
        score: Signed ranking metric as ``repr`` text ("" when unranked).
        member: ``rank`` member, from :func:`rank_member` ("" when unranked).
    """

    field: str
    record: str
    key: str
    score: str
    member: str

    def argv(self) -> tuple[str, str, str, str, str]:
        return self.field, self.record, self.key, self.score, self.member


def pool_entry(candidate: CandidateRecord, policy: RankingPolicy) -> PoolEntry | None:
    """Encode a candidate for the pool; None when it is unrankable.

    The score is ``repr`` of the signed metric, so Redis parses the exact
    double; Lua never turns it into a number.
    """
    sort_key = policy.sort_key(candidate)
    if sort_key is None:
        return None
    metric, complexity, node_id, key = sort_key
    field = entry_field(node_id, key)
    # + 0.0 turns -0.0 into 0.0: Python ranks them equal, so Redis must see one score.
    return PoolEntry(field, dumps(candidate.to_dict()), key, repr(metric + 0.0),
                     rank_member(complexity, field))


def unranked_entry(candidate: CandidateRecord) -> PoolEntry:
    """Encode a candidate to be pooled without a rank (a snapshot's unrankable record)."""
    field = entry_field(candidate.node_id, candidate.canonical_key)
    return PoolEntry(field, dumps(candidate.to_dict()), candidate.canonical_key, "", "")
