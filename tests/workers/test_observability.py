"""Structured logs carry the run and coordinate; the metrics endpoints serve Prometheus text."""

from __future__ import annotations

import io
import json
import logging
import socket
import sys
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from srh_workers.app import make_app
from srh_workers.config import WorkerSettings
from srh_workers.observability import (
    ContextFilter,
    JsonFormatter,
    KeyValueFormatter,
    TaskContext,
    current_context,
    exporter_registry,
    log_context,
    queue_depths,
    redis_queue_keys,
    start_metrics_server,
)
from tests.workers.support import WORKER_START_DEADLINE, WorkerProcess, wait_until, worker_env


# --------------------------------------------------------------------- logs
@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    log = logging.getLogger(f"srh.test.{uuid.uuid4().hex}")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    yield log, stream
    log.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_the_bound_context(captured) -> None:  # type: ignore[no-untyped-def]
    log, stream = captured
    log.info("outside")
    with log_context(run_id="run-1", R=1, C=2):
        with log_context(L=3, K=4):
            log.info("step %d", 3, extra={"event": "step"})
        log.warning("branch")
    inner, outer = lines(stream)[1:]
    assert "run_id" not in lines(stream)[0]
    assert inner["message"] == "step 3" and inner["event"] == "step"
    assert (inner["run_id"], inner["R"], inner["C"], inner["L"], inner["K"]) == (
        "run-1", 1, 2, 3, 4)
    assert outer["level"] == "WARNING" and "L" not in outer and outer["C"] == 2
    assert current_context() == TaskContext()


def test_exceptions_are_one_json_line(captured) -> None:  # type: ignore[no-untyped-def]
    log, stream = captured
    try:
        raise ValueError("broken")
    except ValueError:
        log.exception("failed")
    [entry] = lines(stream)
    assert "ValueError: broken" in str(entry["exc_info"])


def test_key_value_format() -> None:
    record = logging.LogRecord("srh.x", logging.INFO, __file__, 1, "hello", None, None)
    with log_context(run_id="r", R=2):
        ContextFilter().filter(record)
    text = KeyValueFormatter().format(record)
    assert text.endswith("INFO srh.x: hello run_id=r R=2")


def test_log_context_rejects_unknown_fields() -> None:
    with pytest.raises(TypeError, match="unknown fields"):
        log_context(run="r")


def test_contexts_do_not_leak_between_threads(captured) -> None:  # type: ignore[no-untyped-def]
    log, stream = captured
    barrier = threading.Barrier(2)

    def branch(C: int) -> None:
        with log_context(run_id="run", C=C):
            barrier.wait(timeout=5)
            log.info("step")

    threads = [threading.Thread(target=branch, args=(C,)) for C in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert sorted(entry["C"] for entry in lines(stream)) == [1, 2]  # type: ignore[type-var]


def test_task_logs_carry_run_and_coordinate(captured) -> None:  # type: ignore[no-untyped-def]
    log, stream = captured
    app = make_app(WorkerSettings(broker_url="memory://", result_backend="cache+memory://",
                                  redis_url="redis://127.0.0.1:6379/0", task_modules=()))

    @app.task(name="srh.tool.logged")
    def logged(run_id: str, R: int, C: int, L: int, K: int, payload: dict) -> None:
        """Log one line."""
        log.info("tool ran")

    result = logged.apply(args=("run-7", 1, 2, 3), kwargs={"K": 4, "payload": {"x": 1}})
    [entry] = lines(stream)
    assert (entry["run_id"], entry["R"], entry["C"], entry["L"], entry["K"]) == (
        "run-7", 1, 2, 3, 4)
    assert entry["task_name"] == "srh.tool.logged" and entry["task_id"] == result.id


# ------------------------------------------------------------------ metrics
@pytest.fixture
def prometheus_client():  # type: ignore[no-untyped-def]
    return pytest.importorskip("prometheus_client",
                               reason="prometheus-client (the 'metrics' extra) is not installed")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def scrape_when(port: int, expected: str) -> str:
    """The page once it contains ``expected``; "" while the endpoint is not up or not there."""
    try:
        page = scrape(port)
    except OSError:
        return ""
    return page if expected in page else ""


def test_task_metrics_in_prometheus_text(prometheus_client) -> None:  # type: ignore[no-untyped-def]
    from srh_workers.observability import TaskMetrics

    registry = prometheus_client.CollectorRegistry()
    metrics = TaskMetrics(registry)
    metrics.observe("srh.tool.calls", "success", 0.2)
    metrics.observe("srh.tool.calls", "poison", None)
    text = prometheus_client.generate_latest(registry).decode()
    assert 'srh_tasks_total{state="success",task="srh.tool.calls"} 1.0' in text
    assert 'srh_tasks_total{state="poison",task="srh.tool.calls"} 1.0' in text
    assert 'srh_task_seconds_bucket{le="0.25",task="srh.tool.calls"} 1.0' in text
    assert 'srh_task_seconds_count{task="srh.tool.calls"} 1.0' in text


def test_redis_queue_keys_include_priorities() -> None:
    assert redis_queue_keys("tools") == ["tools", "tools\x06\x163", "tools\x06\x166",
                                         "tools\x06\x169"]


@pytest.mark.usefixtures("prometheus_client")
def test_exporter_serves_queue_depth_from_redis(redis_server: str) -> None:
    client = redis.Redis.from_url(redis_server)
    client.delete("tools", "branches", "tools\x06\x169", "unacked")
    client.lpush("tools", "a", "b")
    client.lpush("tools\x06\x169", "c")
    client.lpush("branches", "d")
    client.hset("unacked", "tag", "m")
    try:
        assert queue_depths(redis_server, ["tools", "branches"]) == (
            {"tools": 3, "branches": 1}, 1)
        server, _ = start_metrics_server(0, exporter_registry(redis_server, ["tools", "branches"]),
                                         addr="127.0.0.1")
        try:
            text = scrape(server.server_port)
        finally:
            server.shutdown()
    finally:
        client.delete("tools", "branches", "tools\x06\x169", "unacked")
    assert 'srh_queue_depth{queue="tools"} 3.0' in text
    assert 'srh_queue_depth{queue="branches"} 1.0' in text
    assert "srh_unacked_messages 1.0" in text and "srh_broker_up 1.0" in text


def test_a_broker_outage_is_a_gauge_not_an_error(prometheus_client) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = exporter_registry(f"redis://127.0.0.1:{port}/0", ["tools"])
    text = prometheus_client.generate_latest(registry).decode()
    assert "srh_broker_up 0.0" in text and "srh_queue_depth" not in text


@pytest.mark.integration
@pytest.mark.usefixtures("prometheus_client")
def test_worker_endpoint_counts_tasks_from_prefork_children(redis_server_factory,
                                                            tmp_path: Path) -> None:
    server = redis_server_factory()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = worker_env(server.url, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"))
    worker = WorkerProcess.start(
        [sys.executable, "-m", "srh_workers.cli", "worker", "--queues", "tools",
         "--concurrency", "2", "--metrics-port", str(port)], env, tmp_path / "worker.log")
    producer = make_app(WorkerSettings(broker_url=server.url, task_modules=()))
    try:
        for result in [producer.send_task("srh.tool.ping") for _ in range(4)]:
            result.get(timeout=WORKER_START_DEADLINE)  # the worker is starting
        for _ in range(2):
            producer.send_task("srh.branch.ping")  # nobody consumes branches here
        expected = 'srh_tasks_total{state="success",task="srh.tool.ping"} 4.0'
        text = str(wait_until(lambda: scrape_when(port, expected), 15,
                              "the endpoint to count four pings"))
    finally:
        worker.stop()
    assert 'srh_task_seconds_count{task="srh.tool.ping"} 4.0' in text
    assert 'srh_queue_depth{queue="branches"} 2.0' in text
    assert 'srh_queue_depth{queue="tools"} 0.0' in text
    assert list((tmp_path / "metrics").glob("*.db")), "children wrote no multiprocess files"


@pytest.mark.usefixtures("prometheus_client")
def test_every_listener_binds_loopback_unless_told_otherwise() -> None:
    from srh_core.cli import build_parser as srh_parser

    parser = srh_parser()
    assert parser.parse_args(["metrics"]).addr == "127.0.0.1"
    assert parser.parse_args(["web"]).host == "127.0.0.1"
    assert parser.parse_args(["worker", "--queues", "tools"]).metrics_addr is None
    assert WorkerSettings().metrics_addr == "127.0.0.1"
    told = WorkerSettings.from_env({"SRH_METRICS_ADDR": "0.0.0.0"})
    assert told.metrics_addr == "0.0.0.0"
    from srh_workers.cli.worker import worker_commands

    [command] = worker_commands(["tools"], told, metrics_port=9100, metrics_addr="0.0.0.0")
    assert command.env["SRH_METRICS_ADDR"] == "0.0.0.0"
    server, _ = start_metrics_server(0, exporter_registry("redis://127.0.0.1:1/0", ["tools"]))
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
