"""The cluster-wide model quota and the model metrics: real redis-server, the real openai
client, a local OpenAI-compatible server. Two gates on two Redis connections stand for two
workers (the gate keeps nothing in the process: all its state is in Redis)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest

from srh_core.api.cancel import CancelToken
from srh_core.api.endpoints import EndpointRegistry
from srh_core.api.openai_api import OpenAIAPI
from srh_core.api.response import Usage
from srh_core.errors import ConfigurationError, ModelRequestCancelledError
from srh_workers import quota
from srh_workers.observability import metrics as observed
from srh_workers.quota import EndpointGate, Limits, ModelMetrics, quota_state
from srh_workers.store.keys import quota_key
from tests.support.openai_payloads import chat_completion, usage
from tests.support.openai_server import FakeOpenAIServer, Reply, unused_port


@pytest.fixture
def client(redis_server: str) -> Iterator[redis.Redis]:
    made = redis.Redis.from_url(redis_server)
    made.flushdb()
    yield made
    made.flushdb()
    made.close()


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> tuple[ModelMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    made = ModelMetrics(registry)
    monkeypatch.setattr(observed, "_metrics", made)  # the process's model metrics
    return made, registry


class Counting:
    """A model server's responder: each reply held ``hold`` s; arrivals recorded (the
    server itself counts the requests in flight: ``peak_in_flight``)."""

    def __init__(self, hold: float = 0.0, prompt: int = 10, completion: int = 5) -> None:
        self.hold, self.prompt, self.completion = hold, prompt, completion
        self.arrivals: list[float] = []

    def __call__(self, request) -> Reply:
        self.arrivals.append(time.monotonic())
        return Reply.json(chat_completion(content="ok", usage_block=usage(
            self.prompt, self.completion)), delay=self.hold)


def adapter(server: FakeOpenAIServer, gate: EndpointGate, **options) -> OpenAIAPI:
    return OpenAIAPI(model="m", base_url=server.base_url, api_key="test", gate=gate,
                     max_tokens=100, **options)


def worker_gate(url: str, limits: Limits, name: str = "gpt") -> EndpointGate:
    return EndpointGate(redis.Redis.from_url(url), name, limits)


def calls(api: OpenAIAPI, n: int) -> list[threading.Thread]:
    threads = [threading.Thread(target=lambda: api("hello").contents) for _ in range(n)]
    for thread in threads:
        thread.start()
    return threads


def test_max_in_flight_holds_across_workers(redis_server: str, client: redis.Redis,
                                            metrics) -> None:
    responder = Counting(hold=1.0)  # two calls overlap though a client is slow to send
    limits = Limits(max_in_flight=2)
    with FakeOpenAIServer() as server:
        server.respond_with(responder)
        threads = [*calls(adapter(server, worker_gate(redis_server, limits)), 3),
                   *calls(adapter(server, worker_gate(redis_server, limits)), 3)]
        for thread in threads:
            thread.join(20)
    assert len(responder.arrivals) == 6 and server.peak_in_flight == 2
    assert quota_state(client, "gpt")["in_flight"] == 0  # every lease was released
    text = generate_latest(metrics[1]).decode()
    assert 'srh_model_requests_total{endpoint="gpt",status="200"} 6.0' in text
    assert 'srh_model_tokens_total{direction="prompt",endpoint="gpt"} 60.0' in text
    assert 'srh_model_tokens_total{direction="completion",endpoint="gpt"} 30.0' in text
    assert 'srh_quota_wait_seconds_count{endpoint="gpt",reason="in_flight"}' in text


def test_the_request_rate_is_shared_by_every_worker(redis_server: str, client: redis.Redis,
                                                   metrics) -> None:
    responder = Counting()
    limits = Limits(rpm=240)  # one per 0.25 s after a burst of one second's worth (4)
    with FakeOpenAIServer() as server:
        server.respond_with(responder)
        threads = [*calls(adapter(server, worker_gate(redis_server, limits)), 5),
                   *calls(adapter(server, worker_gate(redis_server, limits)), 5)]
        for thread in threads:
            thread.join(20)
    arrivals = sorted(responder.arrivals)
    assert len(arrivals) == 10
    # 4 at once, then the other 6 at the steady rate: at least 5 gaps of 0.25 s after the 5th
    assert arrivals[-1] - arrivals[4] >= 5 * 0.25 - 0.1
    assert arrivals[3] - arrivals[0] < 0.5
    assert 'reason="rpm"' in generate_latest(metrics[1]).decode()


def test_a_token_rate_counts_the_replies_usage(redis_server: str, client: redis.Redis) -> None:
    responder = Counting(prompt=500, completion=500)  # 1000 tokens per reply
    limits = Limits(tpm=120_000)  # 2000 tokens a second
    with FakeOpenAIServer() as server:
        server.respond_with(responder)
        api = adapter(server, worker_gate(redis_server, limits))
        started = time.monotonic()
        for _ in range(6):
            assert api("hello").contents == ["ok"]
    # each reply's 1000 tokens replace the reservation: 6000 tokens at 2000/s, 2 s in burst
    assert time.monotonic() - started >= 1.5
    assert len(responder.arrivals) == 6


def test_a_429_cools_every_worker_down_and_is_absorbed(redis_server: str,
                                                       client: redis.Redis, metrics) -> None:
    limits = Limits(max_in_flight=8)
    replies = iter([Reply.error(429, "slow down", headers={"Retry-After": "1"})])
    arrivals: list[float] = []

    def respond(request) -> Reply:
        arrivals.append(time.monotonic())
        return next(replies, None) or Reply.json(chat_completion(content="ok"))

    with FakeOpenAIServer() as server:
        server.respond_with(respond)
        first = adapter(server, worker_gate(redis_server, limits), max_retries=0)
        second = adapter(server, worker_gate(redis_server, limits), max_retries=0)
        answer = {}
        thread = threading.Thread(target=lambda: answer.update(first=first("hello").contents))
        thread.start()
        deadline = time.monotonic() + 5
        while not client.exists(quota_key("gpt", "cooldown")) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert quota_state(client, "gpt")["cooldown_seconds"] > 0.5
        assert second("hello").contents == ["ok"]  # another worker: it waits out the same cooldown
        thread.join(10)
    assert answer["first"] == ["ok"]  # no retries allowed, yet the 429 was absorbed
    assert len(arrivals) == 3 and min(arrivals[1:]) - arrivals[0] >= 0.9
    text = generate_latest(metrics[1]).decode()
    assert 'srh_model_requests_total{endpoint="gpt",status="429"} 1.0' in text
    assert 'reason="cooldown"' in text


def test_a_dead_workers_slot_frees_when_its_lease_expires(redis_server: str,
                                                          client: redis.Redis,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(quota, "LEASE_MARGIN_SECONDS", 0.0)
    limits = Limits(max_in_flight=1)
    dead = worker_gate(redis_server, limits)
    dead.admit(10, 0.5, CancelToken())  # admitted, then its worker was killed: never closed
    assert quota_state(client, "gpt")["in_flight"] == 1
    started = time.monotonic()
    lease = worker_gate(redis_server, limits).admit(10, 5.0, CancelToken())
    assert 0.3 <= time.monotonic() - started < 3
    lease.close(quota.RequestOutcome("200", 0.1))
    assert quota_state(client, "gpt")["in_flight"] == 0


def test_a_cancelled_run_sends_nothing_while_it_waits(redis_server: str,
                                                      client: redis.Redis) -> None:
    client.set(quota_key("gpt", "cooldown"), str(int(time.time() * 1000) + 60_000), px=60_000)
    started = time.monotonic()
    with FakeOpenAIServer() as server:
        api = adapter(server, worker_gate(redis_server, Limits(rpm=600)))
        threading.Timer(0.2, api.cancel).start()
        with pytest.raises(ModelRequestCancelledError):
            _ = api("hello").contents
        assert server.requests == []
    assert time.monotonic() - started < 2


def test_an_endpoint_without_limits_asks_nothing_of_redis(redis_server: str,
                                                          client: redis.Redis,
                                                          metrics) -> None:
    with FakeOpenAIServer() as server:
        server.respond_with(Counting())
        api = adapter(server, EndpointGate(None, "run", Limits()))
        assert api("hello").contents == ["ok"]
    assert client.keys("srh:quota:*") == []
    assert 'srh_model_requests_total{endpoint="run",status="200"} 1.0' in generate_latest(
        metrics[1]).decode()


def test_limits_are_read_from_the_endpoints_file(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.toml"
    path.write_text('[endpoints.gpt]\nprovider = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'rpm = 500\ntpm = 200000\nmax_in_flight = 32\n')
    endpoint = EndpointRegistry.from_file(path).get("gpt")
    assert Limits.of(endpoint) == Limits(500.0, 200000.0, 32)
    path.write_text('[endpoints.gpt]\nprovider = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'max_in_flight = 0\n')
    with pytest.raises(ConfigurationError, match="max_in_flight must be a positive integer"):
        EndpointRegistry.from_file(path)
    path.write_text('[endpoints.gpt]\nprovider = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'rpm = "fast"\n')
    with pytest.raises(ConfigurationError, match="rpm must be a positive number"):
        EndpointRegistry.from_file(path)


def test_the_grafana_dashboard_queries_only_metrics_the_workers_export(
        redis_server: str, client: redis.Redis) -> None:
    import json
    import re

    from srh_workers.observability.metrics import QueueDepthCollector, TaskMetrics
    from srh_workers.observability.sweep_metrics import SweepCollector
    from tests.workers.support import ROOT

    registry = CollectorRegistry()
    TaskMetrics(registry).observe("srh.tool.ping", "success", 0.1)
    metrics = ModelMetrics(registry)
    metrics.request("gpt", quota.RequestOutcome("200", 0.5, Usage(10, 5, 15, price=0.01)))
    metrics.waited("gpt", "rpm", 0.2)
    registry.register(QueueDepthCollector(redis_server, ["tools", "branches"]))
    registry.register(SweepCollector(redis_server))
    client.hset("srh:sweep:s:cells", "c", json.dumps({"status": "done", "solved": True}))
    client.sadd("srh:sweeps:active", "s")  # an active sweep, so its series exist
    exported = {line.split("{")[0].split(" ")[0]
                for line in generate_latest(registry).decode().splitlines()
                if line.startswith("srh_")}
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "srh-dashboard.json").read_text())
    queried = {name for panel in dashboard["panels"] for target in panel["targets"]
               for name in re.findall(r"\bsrh_[a-z_]+", target["expr"])}
    assert len(queried) >= 12
    assert queried <= exported, sorted(queried - exported)


def test_a_workers_adapters_pass_the_quota_of_the_endpoint_they_reach(
        client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.agent import SearchSettings
    from srh_core.api.endpoints import ModelAccess, build_api
    from srh_workers.quota import gate_factory

    path = tmp_path / "endpoints.toml"
    path.write_text('[endpoints.gpt]\nprovider = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'model = "m"\nmax_in_flight = 3\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    access = ModelAccess(EndpointRegistry.from_file(path), gate_for=gate_factory(client))
    api = build_api(SearchSettings.build(llm_provider="openai", endpoint="gpt"), "openai",
                    None, access)
    again = build_api(SearchSettings.build(llm_provider="openai", endpoint="gpt"), "openai",
                      None, access)
    assert api.gate is again.gate and api.gate.name == "gpt"
    assert api.gate.limits == Limits(max_in_flight=3) and api.gate.limited
    own = build_api(SearchSettings.build(llm_provider="openai", base_url="http://10.0.0.1/v1"),
                    "openai", None, ModelAccess(EndpointRegistry(), run_key="sk-run",
                                                gate_for=gate_factory(client)))
    assert own.gate.name == "run" and not own.gate.limited  # a run's own key: its own quota


def test_two_worker_processes_keep_one_in_flight_cap(cluster, tmp_path: Path) -> None:
    """Real branch workers in two processes, 4 threads each, one run of 4 branches: the
    model server never sees more than the endpoint's max_in_flight, and does see it."""
    import numpy as np

    from srh_core.agent import SearchSettings
    from tests.support.openai_payloads import evaluating_reply

    hold = 1.0  # long enough that the two calls the quota allows overlap under load
    with FakeOpenAIServer() as server:
        server.respond_with(evaluating_reply(("x1*x2", "x1 + x2", "x1**2"), delay=hold))
        endpoints = tmp_path / "endpoints.toml"
        endpoints.write_text(f'[endpoints.capped]\nprovider = "openai"\nbase_url = '
                             f'"{server.base_url}"\napi_key_env = "CAPPED_KEY"\nmodel = "m"\n'
                             'max_in_flight = 2\n', encoding="utf-8")
        env = {"SRH_ENDPOINTS": str(endpoints), "CAPPED_KEY": "sk-operator"}
        ports = [unused_port(), unused_port()]
        workers = [cluster.start("branches", concurrency=4, wait=False, **env,
                                 SRH_METRICS_PORT=str(port),
                                 PROMETHEUS_MULTIPROC_DIR=str(tmp_path / f"metrics{port}"))
                   for port in ports]
        workers.append(cluster.start("tools", concurrency=2, wait=False, **env))
        for worker in workers:
            cluster.ready(worker)
        x1, x2 = np.random.default_rng(0).uniform(1, 5, (2, 60))
        settings = SearchSettings.build(
            run_id="capped", llm_provider="openai", endpoint="capped", tool_parser="openai",
            tools=["evaluate_formula"], global_width=4, max_refinement_depth=2,
            local_sample_size=1, early_stop=False, granularity="step")
        run_id = cluster.submit(settings, {"x1": x1, "x2": x2}, {"y": x1 * x2})
        result = cluster.result(run_id, timeout=90)
        arrivals = [request.received_at for request in server.requests]
    assert result.status == "completed", result.stop_reason
    assert len(arrivals) == 8  # 4 branches x 2 steps, none lost, none repeated
    # 8 threads could send 4 at once; the quota allows 2
    assert server.peak_in_flight == 2, sorted(arrivals)
    assert quota_state(cluster.client, "capped")["in_flight"] == 0
    counted = 0.0  # every request on the workers' own metrics endpoints, by status
    for port in ports:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        for line in text.decode().splitlines():
            if line.startswith('srh_model_requests_total{endpoint="capped",status="200"}'):
                counted += float(line.split()[-1])
    assert counted == 8
