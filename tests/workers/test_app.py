"""The Celery app: settings from the environment, the reliability configuration, real workers.

The worker-process helpers live in :mod:`tests.workers.support`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from srh_core.errors import ConfigurationError
from srh_workers.app import PING_TASKS, celery_config, check_app, make_app
from srh_workers.config import SETTINGS_ENV, WorkerSettings
from tests.workers.support import (
    ROOT,
    STOP_DEADLINE,
    WORKER_START_DEADLINE,
    WorkerProcess,
    wait_until,
    worker_env,
)

if os.environ.get("SRH_TEST_TASKS") == "slow-limit":  # imported by a worker of this module
    from srh_workers.app import app as _worker_app

    @_worker_app.task(name="srh.tool.slow", time_limit=600)
    def _slow() -> None:
        """A tool task whose hard limit races the visibility timeout."""


# ------------------------------------------------------------------- helpers
@pytest.fixture
def producer_settings() -> Callable[..., WorkerSettings]:
    def make(redis_url: str, **overrides: object) -> WorkerSettings:
        return WorkerSettings(broker_url=redis_url, task_modules=(), **overrides)  # type: ignore[arg-type]
    return make


# ------------------------------------------------------------------ settings
def test_defaults_from_an_empty_environment() -> None:
    settings = WorkerSettings.from_env({})
    assert settings == WorkerSettings()
    assert settings.broker_url == "redis://127.0.0.1:6379/0"
    assert settings.redis_url == settings.broker_url == settings.result_backend
    assert settings.broker_kind == "redis"
    assert settings.task_modules == ("srh_workers.flow.tasks",)
    settings.check()


def test_every_variable_is_read() -> None:
    environ = {
        "SRH_BROKER_URL": "redis://broker:6379/1", "SRH_RESULT_BACKEND": "redis://results:6379/2",
        "SRH_REDIS_URL": "redis://store:6379/3", "SRH_VISIBILITY_TIMEOUT": "300",
        "SRH_TOOL_SOFT_LIMIT": "20", "SRH_TOOL_HARD_LIMIT": "25.5",
        "SRH_BRANCH_SOFT_LIMIT": "200", "SRH_BRANCH_HARD_LIMIT": "240",
        "SRH_MAX_DELIVERIES": "5", "SRH_TASK_MAX_RETRIES": "2", "SRH_RETRY_BACKOFF_MAX": "10",
        "SRH_RESTORE_INTERVAL": "2", "SRH_TOOL_MAX_TASKS_PER_CHILD": "0",
        "SRH_TOOL_MAX_MEMORY_PER_CHILD_KB": "500000", "SRH_RESULT_EXPIRES": "60",
        "SRH_METRICS_PORT": "9100", "SRH_METRICS_ADDR": "0.0.0.0", "SRH_LOG_FORMAT": "text",
        "SRH_RUNS_DIR": "/var/lib/srh",
        "SRH_TASK_MODULES": "a.tasks, b.tasks", "SRH_STALL_SECONDS": "260",
        "SRH_WATCHDOG_INTERVAL": "7.5", "SRH_SHUTDOWN_GRACE": "0",
        "SRH_SWEEP_INTERVAL": "2", "SRH_SWEEP_LEASE": "9", "SRH_ARTIFACTS": "/srv/artifacts"}
    assert set(environ) == set(SETTINGS_ENV.values())
    settings = WorkerSettings.from_env(environ)
    assert (settings.broker_url, settings.result_backend, settings.redis_url) == (
        "redis://broker:6379/1", "redis://results:6379/2", "redis://store:6379/3")
    assert settings.visibility_timeout == 300 and settings.tool_hard_limit == 25.5
    assert settings.limits("branch").soft == 200 and settings.max_deliveries == 5
    assert settings.max_retries == 2 and settings.tool_max_tasks_per_child == 0
    assert settings.metrics_port == 9100 and settings.log_format == "text"
    assert settings.metrics_addr == "0.0.0.0"
    assert settings.runs_dir == Path("/var/lib/srh")
    assert settings.task_modules == ("a.tasks", "b.tasks")
    assert (settings.stall_seconds, settings.watchdog_interval) == (260, 7.5)
    assert settings.shutdown_grace == 0
    assert (settings.sweep_interval, settings.sweep_lease) == (2, 9)
    assert settings.artifacts == Path("/srv/artifacts")
    assert settings.run_directories == Path("/srv/artifacts/runs")
    assert WorkerSettings.from_env(settings.to_env()) == settings


def test_rabbitmq_broker_keeps_redis_for_store_and_results() -> None:
    settings = WorkerSettings.from_env({"SRH_BROKER_URL": "amqp://guest:guest@rabbit:5672//",
                                        "SRH_REDIS_URL": "redis://store:6379/1"})
    assert settings.broker_kind == "amqp"
    assert settings.redis_url == settings.result_backend == "redis://store:6379/1"
    config = celery_config(settings)
    assert "visibility_timeout" not in config["broker_transport_options"]
    assert config["broker_transport_options"] == {"confirm_publish": True}


def test_a_broker_other_than_redis_needs_the_store_url() -> None:
    with pytest.raises(ConfigurationError, match="SRH_REDIS_URL' setting is required with a "
                                                 "amqp broker") as caught:
        WorkerSettings.from_env({"SRH_BROKER_URL": "amqp://guest:secret@rabbit:5672//"})
    assert caught.value.setting == "SRH_REDIS_URL"
    assert "secret" not in str(caught.value)  # the broker's password is not echoed


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("SRH_VISIBILITY_TIMEOUT", "soon", "must be an int"),
    ("SRH_VISIBILITY_TIMEOUT", "0", "an int >= 1"),
    ("SRH_TOOL_HARD_LIMIT", "-3", "> 0"),
    ("SRH_TOOL_SOFT_LIMIT", "nan", "finite number"),
    ("SRH_MAX_DELIVERIES", "0", "an int >= 1"),
    ("SRH_METRICS_PORT", "70000", "in [0, 65535]"),
    ("SRH_LOG_FORMAT", "xml", "one of ('json', 'text')"),
    ("SRH_BROKER_URL", "reddis://x:6379/0", "Did you mean 'redis'?"),
    ("SRH_REDIS_URL", "amqp://x//", "a redis:// or rediss:// URL"),
    ("SRH_SHUTDOWN_GRACE", "-1", ">= 0"),
], ids=["vis-text", "vis-zero", "negative-limit", "nan-limit", "deliveries", "port", "log-format",
        "broker-typo", "store-not-redis", "negative-grace"])
def test_bad_values_raise_errors_that_name_the_variable(variable: str, value: str,
                                                        expected: str) -> None:
    with pytest.raises(ConfigurationError, match=variable) as caught:
        WorkerSettings.from_env({variable: value})
    assert expected in str(caught.value)
    assert caught.value.setting == variable
    assert "Got " in str(caught.value)


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"visibility_timeout": 60, "tool_hard_limit": 50.0, "branch_soft_limit": 30.0,
      "branch_hard_limit": 35.0}, r"SRH_TOOL_HARD_LIMIT \(50 s\) plus SRH_RETRY_BACKOFF_MAX"),
    ({"visibility_timeout": 100}, r"SRH_BRANCH_HARD_LIMIT \(85 s\).*at least 106"),
    ({"tool_soft_limit": 50.0}, r"SRH_TOOL_SOFT_LIMIT \(50 s\) must be below"),
    ({"restore_interval": 120}, r"SRH_RESTORE_INTERVAL \(120 s\) must be shorter"),
], ids=["tool-hard-over-visibility", "branch-hard-over-visibility", "soft-not-below-hard",
        "slow-restore"])
def test_check_refuses_limits_that_race_the_visibility_timeout(overrides: dict[str, object],
                                                               expected: str) -> None:
    settings = WorkerSettings(**overrides)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=expected):
        settings.check()
    with pytest.raises(ConfigurationError, match=expected):
        make_app(settings)


def test_margin_scales_with_the_visibility_timeout() -> None:
    assert WorkerSettings().visibility_margin == 11.0
    tight = WorkerSettings(visibility_timeout=3, tool_soft_limit=0.5, tool_hard_limit=1.0,
                           branch_soft_limit=0.5, branch_hard_limit=1.0, retry_backoff_max=1.0,
                           restore_interval=1)
    assert tight.visibility_margin == 1.0
    tight.check()  # 1 + 1 + 1 <= 3


# -------------------------------------------------------------- configuration
@pytest.fixture
def memory_app():  # type: ignore[no-untyped-def]
    return make_app(WorkerSettings(broker_url="memory://", result_backend="cache+memory://",
                                   redis_url="redis://127.0.0.1:6379/0", task_modules=()))


def test_json_only(memory_app) -> None:  # type: ignore[no-untyped-def]
    conf = memory_app.conf
    assert conf.task_serializer == conf.result_serializer == conf.event_serializer == "json"
    assert list(conf.accept_content) == list(conf.result_accept_content) == ["json"]


def test_reliability_settings(memory_app) -> None:  # type: ignore[no-untyped-def]
    conf = memory_app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.task_acks_on_failure and conf.task_acks_on_timeout
    assert conf.worker_prefetch_multiplier == 1
    assert conf.worker_send_task_events and conf.task_send_sent_event
    assert conf.broker_connection_retry_on_startup
    assert conf.worker_cancel_long_running_tasks_on_connection_loss
    assert conf.worker_max_tasks_per_child == 200
    assert conf.worker_max_memory_per_child == 1_000_000
    assert conf.result_expires == 86_400


def test_visibility_timeout_in_all_three_places() -> None:
    settings = WorkerSettings(visibility_timeout=90, branch_soft_limit=40, branch_hard_limit=50)
    config = celery_config(settings)
    assert config["broker_transport_options"]["visibility_timeout"] == 90
    assert config["result_backend_transport_options"]["visibility_timeout"] == 90
    assert config["visibility_timeout"] == 90
    assert config["broker_transport_options"]["unacked_restore_interval"] == 5
    assert config["broker_transport_options"]["unacked_restore_throttle"] == 1


@pytest.mark.parametrize(("task", "queue"), [
    ("srh.tool.calls", "tools"), ("srh.tool.ping", "tools"), ("srh.branch.step", "branches"),
    ("srh.branch.ping", "branches"), ("srh.run.finish", "branches"),
], ids=["tool", "tool-ping", "branch", "branch-ping", "other-default"])
def test_routes_by_name_prefix(memory_app, task: str, queue: str) -> None:  # type: ignore[no-untyped-def]
    assert memory_app.amqp.router.route({}, task)["queue"].name == queue


def test_only_the_two_queues_exist(memory_app) -> None:  # type: ignore[no-untyped-def]
    assert sorted(memory_app.amqp.queues) == ["branches", "tools"]
    assert memory_app.conf.task_create_missing_queues is False
    assert memory_app.conf.task_default_queue == "branches"


def test_time_limits_follow_the_task_kind(memory_app) -> None:  # type: ignore[no-untyped-def]
    @memory_app.task(name="srh.tool.custom", time_limit=30, soft_time_limit=20)
    def custom() -> None:
        """A tool task with its own limits."""

    tasks = memory_app.tasks
    assert (tasks["srh.tool.ping"].soft_time_limit, tasks["srh.tool.ping"].time_limit) == (40, 50)
    assert (tasks["srh.branch.ping"].soft_time_limit,
            tasks["srh.branch.ping"].time_limit) == (70, 85)
    assert (tasks["srh.tool.custom"].soft_time_limit, tasks["srh.tool.custom"].time_limit) == (
        20, 30)
    check_app(memory_app)


def test_check_app_refuses_a_task_whose_limit_races_the_visibility_timeout(memory_app) -> None:  # type: ignore[no-untyped-def]
    @memory_app.task(name="srh.tool.slow", time_limit=600)
    def slow() -> None:
        """A tool task that may hold its message too long."""

    with pytest.raises(ConfigurationError, match=r"task 'srh.tool.slow' \(600 s\)"):
        check_app(memory_app)


def test_check_app_refuses_a_changed_visibility_timeout(memory_app) -> None:  # type: ignore[no-untyped-def]
    memory_app.conf.result_backend_transport_options = {"visibility_timeout": 3600}
    with pytest.raises(ConfigurationError, match="result_backend_transport_options"):
        check_app(memory_app)


def test_ping_answers_in_process(memory_app) -> None:  # type: ignore[no-untyped-def]
    for name in PING_TASKS:
        answer = memory_app.tasks[name].apply(args=("x",)).get()
        assert answer["pong"] is True and answer["payload"] == "x" and answer["task"] == name


def test_a_broken_task_module_stops_the_worker_with_a_clear_error() -> None:
    app = make_app(WorkerSettings(broker_url="memory://", result_backend="cache+memory://",
                                  redis_url="redis://127.0.0.1:6379/0",
                                  task_modules=("srh_workers.no_such_tasks",)))
    with pytest.raises(ConfigurationError, match="SRH_TASK_MODULES") as caught:
        app.loader.import_default_modules()
    assert "srh_workers.no_such_tasks" in str(caught.value)


IMPORT_PROBE = """
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError("network I/O at import time")
socket.socket.connect = refuse
socket.create_connection = refuse
import srh_workers.app as module
assert module._app is None, "the app was made at import"
assert "prometheus_client" not in sys.modules
app = module.app
assert module.get_app() is app and app.main == "srh"
sorted(app.tasks)
print("ok")
"""


def test_the_app_imports_without_network_io() -> None:
    env = worker_env("redis://127.0.0.1:1/0")
    result = subprocess.run([sys.executable, "-c", IMPORT_PROBE], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ------------------------------------------------------------- real workers
@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.mark.integration
def test_srh_worker_runs_both_queues_and_stops_on_sigterm(redis_server_factory, tmp_path: Path,
                                                          workers: list[WorkerProcess],
                                                          producer_settings) -> None:
    server = redis_server_factory()
    producer = make_app(producer_settings(server.url))
    began = time.monotonic()
    supervisor = WorkerProcess.start(
        [sys.executable, "-m", "srh_workers.cli", "worker", "--queues", "tools,branches",
         "--concurrency", "1"], worker_env(server.url), tmp_path / "srh-worker.log")
    workers.append(supervisor)
    answers = {name: producer.send_task(name, args=[name]) for name in PING_TASKS}
    replies = {name: result.get(timeout=WORKER_START_DEADLINE)
               for name, result in answers.items()}
    print(f"srh worker (two kinds) answered both pings {time.monotonic() - began:.2f} s "
          f"after start")
    pid = supervisor.process.pid  # default node names carry it: unique per host
    assert replies["srh.tool.ping"]["hostname"].startswith(f"tools-{pid}@")
    assert replies["srh.tool.ping"]["queue"] == "tools"
    assert replies["srh.branch.ping"]["hostname"].startswith(f"branches-{pid}@")
    assert replies["srh.branch.ping"]["queue"] == "branches"
    assert replies["srh.tool.ping"]["pid"] != replies["srh.branch.ping"]["pid"]
    supervisor.process.send_signal(signal.SIGTERM)
    assert supervisor.process.wait(timeout=STOP_DEADLINE) == 0, supervisor.log_text()[-3000:]
    log = supervisor.log_text()
    assert '"task_name": "srh.tool.ping"' in log  # JSON log lines with the task context


@pytest.mark.integration
def test_celery_worker_refuses_to_start_on_bad_settings(redis_server, tmp_path: Path) -> None:
    env = worker_env(redis_server, SRH_VISIBILITY_TIMEOUT="30")
    worker = WorkerProcess.celery(env, tmp_path / "bad.log")
    try:
        code = worker.process.wait(timeout=WORKER_START_DEADLINE)
    finally:
        worker.stop()
    assert code != 0
    assert "SRH_VISIBILITY_TIMEOUT" in worker.log_text()


@pytest.mark.integration
def test_worker_refuses_a_task_whose_limit_races_the_visibility_timeout(
        redis_server, tmp_path: Path) -> None:
    env = worker_env(redis_server, SRH_TASK_MODULES="tests.workers.test_app",
                     SRH_TEST_TASKS="slow-limit")
    worker = WorkerProcess.celery(env, tmp_path / "slow.log")
    try:
        code = worker.process.wait(timeout=WORKER_START_DEADLINE)
    finally:
        worker.stop()
    assert code == 78, worker.log_text()[-2000:]  # EX_CONFIG
    assert "task 'srh.tool.slow' (600 s)" in worker.log_text()


# --------------------------------------------------------------- srh worker
def test_worker_commands_choose_the_pool_per_queue() -> None:
    from srh_workers.cli.worker import worker_commands

    tools, branches = worker_commands(["tools", "branches"], WorkerSettings(), python="py",
                                      metrics_port=9100,
                                      environ={"PROMETHEUS_MULTIPROC_DIR": "/m"})
    assert tools.argv[:6] == ("py", "-m", "celery", "-A", "srh_workers.app", "worker")
    assert " -Q tools -P prefork " in " ".join(tools.argv)
    assert " -Q branches -P threads -c 8 " in " ".join(branches.argv)
    for command in (tools, branches):
        joined = " ".join(command.argv)
        assert "--prefetch-multiplier 1 -E" in joined and "--without-mingle" in joined
    assert "--max-tasks-per-child 200 --max-memory-per-child 1000000" in " ".join(tools.argv)
    assert "--max-tasks-per-child" not in branches.argv
    assert tools.env["OMP_NUM_THREADS"] == "1" and "OMP_NUM_THREADS" not in branches.env
    assert (tools.env["SRH_METRICS_PORT"], branches.env["SRH_METRICS_PORT"]) == ("9100", "9101")
    assert (tools.env["PROMETHEUS_MULTIPROC_DIR"],
            branches.env["PROMETHEUS_MULTIPROC_DIR"]) == ("/m/tools", "/m/branches")
    assert tools.render().startswith("MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 ")


@pytest.mark.parametrize(("queues", "hostname", "expected"), [
    (["tools"], None, [f"tools-{os.getpid()}@%h"]),
    (["tools"], "w1@node", ["w1@node"]),
    (["tools", "branches"], "w1@node", ["tools-w1@node", "branches-w1@node"]),
    (["branches", "tools"], None, [f"branches-{os.getpid()}@%h", f"tools-{os.getpid()}@%h"]),
], ids=["default", "given", "two-kinds-unique", "order-kept"])
def test_node_names_are_unique_per_kind(queues: list[str], hostname: str | None,
                                        expected: list[str]) -> None:
    from srh_workers.cli.worker import worker_commands

    commands = worker_commands(queues, WorkerSettings(), hostname=hostname, concurrency=3)
    assert [command.argv[command.argv.index("-n") + 1] for command in commands] == expected
    assert all(command.argv[command.argv.index("-c") + 1] == "3" for command in commands)


def test_srh_worker_dry_run_prints_the_commands(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_workers.cli.worker import main

    for name in SETTINGS_ENV.values():
        monkeypatch.delenv(name, raising=False)
    assert main(["worker", "--queues", "branches", "--concurrency", "4", "--dry-run"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert "-m celery -A srh_workers.app worker -Q branches -P threads -c 4" in line
    monkeypatch.setenv("SRH_VISIBILITY_TIMEOUT", "10")
    assert main(["worker", "--dry-run"]) == 2
    assert "SRH_VISIBILITY_TIMEOUT" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["worker", "--queues", "tool"], "Did you mean 'tools'?"),
    (["worker", "--queues", ","], "give at least one queue"),
    (["worker", "--concurrency", "0"], "expected an int >= 1"),
    (["metrics", "--queues", "celery"], "unknown queue 'celery'"),
], ids=["typo", "empty", "zero-concurrency", "metrics-unknown-queue"])
def test_srh_worker_rejects_bad_arguments(argv: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from srh_workers.cli.worker import build_parser

    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_supervisor_stops_the_other_worker_and_returns_the_first_exit_code() -> None:
    from srh_workers.cli.worker import WorkerCommand, exit_code, supervise

    began = time.monotonic()
    code = supervise([
        WorkerCommand("quits", (sys.executable, "-c", "import sys; sys.exit(3)"), {}),
        WorkerCommand("waits", (sys.executable, "-c", "import time; time.sleep(60)"), {}),
    ], grace_seconds=10)
    assert code == 3 and time.monotonic() - began < 10
    assert exit_code(-signal.SIGKILL) == 137 and exit_code(0) == 0


# ------------------------------------------------------------------ RabbitMQ
RABBITMQ = ("127.0.0.1", 5672)


def rabbitmqctl(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["rabbitmqctl", "-q", *arguments], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def rabbitmq_vhost() -> Iterator[str]:
    """A private vhost on the local RabbitMQ (skip when there is none or no rabbitmqctl)."""
    try:
        socket.create_connection(RABBITMQ, timeout=1).close()
    except OSError:
        pytest.skip("no RabbitMQ on 127.0.0.1:5672")
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not on PATH (needed for a private vhost)")
    vhost = f"srh-test-{uuid.uuid4().hex[:12]}"
    created = rabbitmqctl("add_vhost", vhost)
    if created.returncode != 0:
        pytest.skip(f"cannot create a RabbitMQ vhost: {created.stderr.strip()[:200]}")
    try:
        assert rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"
                           ).returncode == 0
        yield vhost
    finally:
        rabbitmqctl("delete_vhost", vhost)


@pytest.mark.integration
def test_rabbitmq_broker_runs_tasks_and_reports_queue_depth(rabbitmq_vhost: str,
                                                            redis_server_factory,
                                                            tmp_path: Path) -> None:
    from srh_workers.observability import queue_depths

    server = redis_server_factory()
    broker = f"amqp://guest:guest@{RABBITMQ[0]}:{RABBITMQ[1]}/{rabbitmq_vhost}"
    env = worker_env(server.url, SRH_BROKER_URL=broker, SRH_REDIS_URL=server.url)
    producer = make_app(WorkerSettings.from_env(env))
    assert producer.conf.broker_transport_options == {"confirm_publish": True}
    worker = WorkerProcess.celery(env, tmp_path / "amqp.log")
    try:
        reply = producer.send_task("srh.tool.ping", args=["amqp"]).get(
            timeout=WORKER_START_DEADLINE)
        assert reply["queue"] == "tools" and reply["payload"] == "amqp"
        producer.send_task("srh.branch.ping")  # nobody consumes branches here
        depths = wait_until(lambda: (found := queue_depths(broker, ["tools", "branches"]))[0][
            "branches"] == 1 and found, 10, "RabbitMQ to count the waiting task")
        assert depths == ({"tools": 0, "branches": 1}, None)  # type: ignore[comparison-overlap]
    finally:
        worker.stop()
