"""One model quota for the whole cluster, and the operators' model metrics.

An endpoint of the operator's endpoints file (:mod:`srh_core.api.endpoints`)
may carry limits that hold for every worker together::

    [endpoints.gpt]
    provider = "openai"
    base_url = "https://api.openai.com/v1"
    rpm = 500            # requests per minute
    tpm = 200000         # tokens (prompt + completion) per minute
    max_in_flight = 32   # requests in flight at once

Every model request a worker sends to it passes :class:`EndpointGate` (the
adapters' :class:`~srh_core.api.gate.RequestGate`): one Lua script admits
it atomically when

- no cooldown is on: a 429 from the endpoint (with its ``Retry-After``, else
  :data:`DEFAULT_COOLDOWN_SECONDS`) stops every worker until it passes, not
  only the branch that got it;
- fewer than ``max_in_flight`` leases are held: a lease is a zset member with
  an expiry (the request's timeout plus :data:`LEASE_MARGIN_SECONDS`), released
  when the request ends, so a worker killed mid-request frees its slot when its
  lease expires; a release also pushes a "bell" (a list of at most
  ``max_in_flight`` items) on which waiting requests block (``BLPOP``), so a
  freed slot is taken at once and nobody polls;
- ``rpm`` and ``tpm`` allow it: a GCRA (generic cell rate algorithm: one
  "theoretical arrival time" per limit, no buckets to refill) lets through a
  burst of :data:`BURST_SECONDS` worth of the rate and then the steady rate.
  A request reserves its prompt's estimate plus its output limit in tokens;
  the reply's usage corrects the reservation.

Otherwise the script says how long to wait and why; the worker waits
(interruptibly: a cancelled run sends nothing more) and asks again. The
time comes from Redis (``TIME``), so workers' clocks need not agree. A 429
that still comes is absorbed: the attempt is sent again after the shared
cooldown, for up to :data:`MAX_QUOTA_WAIT_SECONDS` in all, without using the
adapter's retries, so a 429 storm slows a sweep down instead of failing its
cells.

The gate also counts, on every worker with metrics on
(``SRH_METRICS_PORT``; limits or not): ``srh_model_requests_total{endpoint,
status}``, ``srh_model_request_seconds{endpoint}``, ``srh_model_tokens_total
{endpoint, direction}`` (``prompt``, ``completion``), ``srh_model_cost_usd_total
{endpoint}`` and ``srh_quota_wait_seconds{endpoint, reason}`` (``cooldown``,
``in_flight``, ``rpm``, ``tpm``). A run's own base URL (not one of the
operator's endpoints) is labelled ``endpoint="run"`` and has no limits.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from srh_core.api.endpoints import Endpoint
from srh_core.api.gate import RequestOutcome
from srh_core.errors import ModelRequestCancelledError, ModelRequestError
from srh_workers.observability.metrics import ModelMetrics, enable_model_metrics, model_metrics
from srh_workers.store.keys import quota_key

#: Seconds of each rate a burst may use at once (then the steady rate applies).
BURST_SECONDS = 1.0
#: Seconds a lease outlives its request's timeout (a dead worker's slot frees after this).
LEASE_MARGIN_SECONDS = 30.0
#: Lease of a request whose adapter has no timeout.
DEFAULT_LEASE_SECONDS = 600.0
#: Cooldown after a 429 that names no Retry-After.
DEFAULT_COOLDOWN_SECONDS = 2.0
#: Longest cooldown one 429 may impose (a Retry-After beyond it is capped).
MAX_COOLDOWN_SECONDS = 120.0
#: Longest a request waits for the quota, 429 cooldowns included, before it fails.
MAX_QUOTA_WAIT_SECONDS = 900.0
#: Longest a request waiting for an in-flight slot blocks on the release bell before it
#: asks again (a slot freed by an expired lease rings no bell; cancel is seen this soon).
BELL_SECONDS = 0.5
#: Label of requests to a run's own base URL.
RUN_ENDPOINT_LABEL = "run"
WAIT_REASONS = ("cooldown", "in_flight", "rpm", "tpm")

# KEYS: cooldown, in_flight, rpm, tpm
# ARGV: holder, lease_ms, max_in_flight, rpm, tpm, cost_tokens, burst_seconds
# Returns {0, "ok"} (admitted, lease taken) or {wait_ms, reason}.
_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = tonumber(redis.call('GET', KEYS[1]) or '0')
if until_ms > now then return {until_ms - now, 'cooldown'} end
local slots = tonumber(ARGV[3])
if slots > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= slots then
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {math.max(1, math.min(tonumber(first[2]) - now, 1000)), 'in_flight'}
  end
end
local burst = tonumber(ARGV[7])
local function gcra(key, per_minute, cost)
  if per_minute <= 0 then return nil, 0 end
  local step = 60000 / per_minute
  local tolerance = math.max(burst * 1000, cost * step) - step
  local tat = math.max(tonumber(redis.call('GET', key) or '0'), now)
  local next_tat = tat + cost * step
  local late = next_tat - now - tolerance - step
  if late > 0 then return math.ceil(late), next_tat end
  return nil, next_tat
end
local rpm_wait, rpm_tat = gcra(KEYS[3], tonumber(ARGV[4]), 1)
if rpm_wait then return {rpm_wait, 'rpm'} end
local tpm_wait, tpm_tat = gcra(KEYS[4], tonumber(ARGV[5]), tonumber(ARGV[6]))
if tpm_wait then return {tpm_wait, 'tpm'} end
if tonumber(ARGV[4]) > 0 then
  redis.call('SET', KEYS[3], tostring(rpm_tat), 'PX', math.ceil(rpm_tat - now) + 1000)
end
if tonumber(ARGV[5]) > 0 then
  redis.call('SET', KEYS[4], tostring(tpm_tat), 'PX', math.ceil(tpm_tat - now) + 1000)
end
if slots > 0 then
  local lease = now + tonumber(ARGV[2])
  redis.call('ZADD', KEYS[2], lease, ARGV[1])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then  -- the set outlives its last lease
    redis.call('PEXPIREAT', KEYS[2], lease)
  end
end
return {0, 'ok'}
"""

# KEYS: cooldown, in_flight, tpm, bell
# ARGV: holder, token correction (tokens, may be negative), tpm, cooldown_ms, max_in_flight
_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
  local slots = tonumber(ARGV[5])
  if slots > 0 then  -- wake one waiter (BLPOP); at most one bell per slot is kept
    redis.call('LPUSH', KEYS[4], '1')
    redis.call('LTRIM', KEYS[4], 0, slots - 1)
    redis.call('PEXPIRE', KEYS[4], 60000)
  end
end
local correction, tpm = tonumber(ARGV[2]), tonumber(ARGV[3])
if correction ~= 0 and tpm > 0 then
  local tat = tonumber(redis.call('GET', KEYS[3]) or '0') + correction * 60000 / tpm
  if tat > now then
    redis.call('SET', KEYS[3], tostring(tat), 'PX', math.ceil(tat - now) + 1000)
  else
    redis.call('DEL', KEYS[3])
  end
end
local cooldown = tonumber(ARGV[4])
if cooldown > 0 then
  local until_ms = now + cooldown
  if until_ms > tonumber(redis.call('GET', KEYS[1]) or '0') then
    redis.call('SET', KEYS[1], tostring(until_ms), 'PX', cooldown)
  end
end
return 1
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """An endpoint's cluster-wide limits (None: that limit does not apply)."""

    rpm: float | None = None
    tpm: float | None = None
    max_in_flight: int | None = None

    @classmethod
    def of(cls, endpoint: Endpoint | None) -> Limits:
        if endpoint is None:
            return cls()
        return cls(endpoint.rpm, endpoint.tpm, endpoint.max_in_flight)

    @property
    def any(self) -> bool:
        return any(value is not None for value in (self.rpm, self.tpm, self.max_in_flight))


class _Lease:
    """One admitted attempt: closed with its outcome (releases the slot, corrects tokens)."""

    def __init__(self, gate: EndpointGate, holder: str | None, reserved: int) -> None:
        self.gate, self.holder, self.reserved = gate, holder, reserved
        self.closed = False

    def close(self, outcome: RequestOutcome) -> None:
        if self.closed:
            return
        self.closed = True
        self.gate.release(self, outcome)


class EndpointGate:
    """The cluster's :class:`~srh_core.api.gate.RequestGate` for one endpoint.

    Args:
        client: Redis holding the quota keys (the run store's).
        name: The endpoint's name (:data:`RUN_ENDPOINT_LABEL` for a run's own URL).
        limits: Its limits; without any, nothing is asked of Redis (metrics only).
        max_wait: Longest a request waits for the quota, 429 cooldowns included.
    """

    def __init__(self, client: Redis | None, name: str, limits: Limits, *,
                 max_wait: float = MAX_QUOTA_WAIT_SECONDS) -> None:
        self.client, self.name, self.limits = client, name, limits
        self.max_wait = max_wait
        self.patience = max_wait if limits.any and client is not None else 0.0
        self._keys = [quota_key(name, part) for part in ("cooldown", "in_flight", "rpm", "tpm")]
        self._bell = quota_key(name, "bell")
        self._admit = client.register_script(_ADMIT) if client is not None else None
        self._release = client.register_script(_RELEASE) if client is not None else None
        self._holder_prefix = f"{socket.gethostname()}:{os.getpid()}:"

    @property
    def limited(self) -> bool:
        return self.patience > 0

    def admit(self, reserved_tokens: int, lease_seconds: float | None, token: Any) -> _Lease:
        """Wait for the quota (interruptibly); return the attempt's lease."""
        if not self.limited:
            return _Lease(self, None, reserved_tokens)
        lease_ms = int(1000 * ((lease_seconds or DEFAULT_LEASE_SECONDS) + LEASE_MARGIN_SECONDS))
        holder = self._holder_prefix + uuid.uuid4().hex
        limits = self.limits
        started = time.monotonic()
        waited: dict[str, float] = {}
        while True:
            if token.cancelled:
                self._record_waits(waited)
                raise ModelRequestCancelledError(
                    f"The request to endpoint {self.name!r} was cancelled while it waited "
                    "for the cluster's quota.")
            wait_ms, reason = self._admit(keys=self._keys, args=[
                holder, lease_ms, limits.max_in_flight or 0, limits.rpm or 0, limits.tpm or 0,
                max(int(reserved_tokens), 1), BURST_SECONDS])
            if int(wait_ms) == 0:
                self._record_waits(waited)
                return _Lease(self, holder, reserved_tokens)
            reason = reason.decode() if isinstance(reason, bytes) else str(reason)
            elapsed = time.monotonic() - started
            if elapsed >= self.max_wait:
                self._record_waits(waited)
                raise ModelRequestError(
                    f"The request to endpoint {self.name!r} waited {elapsed:.0f} s for the "
                    f"cluster's quota (last: {reason}) and was given up; raise the endpoint's "
                    "limits or run fewer branches.", retryable=True)
            pause = min(int(wait_ms) / 1000.0, self.max_wait - elapsed)
            slept = time.monotonic()
            if reason == "in_flight":  # a release rings the bell: no polling while we wait
                self.client.blpop([self._bell], timeout=max(0.01, min(pause, BELL_SECONDS)))
            else:
                token.wait(pause)
            waited[reason] = waited.get(reason, 0.0) + time.monotonic() - slept

    def release(self, lease: _Lease, outcome: RequestOutcome) -> None:
        metrics = model_metrics()
        if metrics is not None:
            metrics.request(self.name, outcome)
        if not self.limited:
            return
        correction = 0
        if outcome.usage is not None and self.limits.tpm:
            correction = int(outcome.usage.prompt_tokens + outcome.usage.completion_tokens
                             - lease.reserved)
        cooldown_ms = 0
        if outcome.status == "429":
            seconds = DEFAULT_COOLDOWN_SECONDS if outcome.retry_after is None else \
                outcome.retry_after
            cooldown_ms = int(1000 * min(max(seconds, 0.0), MAX_COOLDOWN_SECONDS))
        try:
            self._release(keys=[self._keys[0], self._keys[1], self._keys[3], self._bell], args=[
                lease.holder or "", correction, self.limits.tpm or 0, cooldown_ms,
                self.limits.max_in_flight or 0])
        except RedisError:  # the lease expires by itself; the request already ended
            pass

    def _record_waits(self, waited: dict[str, float]) -> None:
        metrics = model_metrics()
        if metrics is not None:
            for reason, seconds in waited.items():
                metrics.waited(self.name, reason, seconds)


def gate_factory(client: Redis) -> Any:
    """``ModelAccess.gate_for`` on a worker: one gate per endpoint, shared by its threads."""
    gates: dict[str, EndpointGate] = {}
    lock = threading.Lock()

    def gate_for(endpoint: Endpoint | None) -> EndpointGate:
        name = RUN_ENDPOINT_LABEL if endpoint is None else endpoint.name
        limits = Limits.of(endpoint)
        with lock:
            gate = gates.get(name)
            if gate is None or gate.limits != limits:
                gate = gates[name] = EndpointGate(client, name, limits)
            return gate

    return gate_for


def quota_state(client: Redis, endpoint: str) -> dict[str, Any]:
    """What the quota keys of ``endpoint`` hold now (for status views and tests)."""
    seconds, micros = client.time()
    now = seconds * 1000 + micros // 1000
    cooldown = client.get(quota_key(endpoint, "cooldown"))
    in_flight = client.zcount(quota_key(endpoint, "in_flight"), now, math.inf)
    return {"endpoint": endpoint, "in_flight": int(in_flight),
            "cooldown_seconds": max(0.0, (int(cooldown) - now) / 1000) if cooldown else 0.0}


__all__ = ["BURST_SECONDS", "DEFAULT_COOLDOWN_SECONDS", "EndpointGate", "LEASE_MARGIN_SECONDS",
           "Limits", "MAX_QUOTA_WAIT_SECONDS", "ModelMetrics", "RUN_ENDPOINT_LABEL",
           "WAIT_REASONS", "enable_model_metrics", "gate_factory", "model_metrics",
           "quota_state"]
