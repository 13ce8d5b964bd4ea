"""Private, real redis-servers for the workers tests (never the shared one on 6379).

Fixtures:

- ``redis_server`` (session): the URL of one private redis-server without
  persistence, on a free port, in a temporary directory. Tests share it, so
  each test flushes the database it uses or uses its own run ids.
- ``redis_server_factory`` (function): ``redis_server_factory(appendonly=True)``
  starts another private server and returns its :class:`RedisServer`;
  ``server.restart(hard=True)`` kills it with SIGKILL and starts it again on
  the same port and directory, so it reloads its AOF (``appendfsync always``
  by default, so an acknowledged write survives the kill). Every server the
  factory started is stopped when the test ends.

Both skip the test when no ``redis-server`` binary is on PATH.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.workers.cluster import Cluster

START_DEADLINE_SECONDS = 10.0
STOP_DEADLINE_SECONDS = 5.0
PORT_ATTEMPTS = 5
POLL_SECONDS = 0.01
LOG_TAIL_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """Persistence settings of a private server.

    Attributes:
        appendonly: Turn the append-only file on.
        appendfsync: When the AOF is fsynced ("always" loses nothing on a kill).
        save: RDB save points ("" for none, e.g. "60 1" for one).
        extra_args: Further ``redis-server`` arguments.
    """

    appendonly: bool = False
    appendfsync: Literal["always", "everysec", "no"] = "always"
    save: str = ""
    extra_args: tuple[str, ...] = ()

    def arguments(self) -> list[str]:
        return ["--appendonly", "yes" if self.appendonly else "no",
                "--appendfsync", self.appendfsync, "--save", self.save, *self.extra_args]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    # Linux: the server gets SIGKILL if pytest dies without running teardown.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class RedisServer:
    """One private redis-server process bound to 127.0.0.1.

    Args:
        binary: Path of ``redis-server``.
        directory: Working directory (AOF, RDB and log live here).
        options: Persistence settings.
    """

    def __init__(self, binary: str, directory: Path, options: RedisOptions) -> None:
        self.binary = binary
        self.directory = directory
        self.options = options
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self, **kwargs: object) -> redis.Redis:
        """A new client of this server (kwargs go to ``redis.Redis.from_url``)."""
        return redis.Redis.from_url(self.url, **kwargs)  # type: ignore[arg-type]

    def log_tail(self) -> str:
        log = self.directory / "redis.log"
        return log.read_text(errors="replace")[-LOG_TAIL_CHARS:] if log.exists() else ""

    def start(self) -> None:
        """Start on a free port (retrying on a port race), or on the old port after a stop."""
        fixed = self.port is not None
        for _ in range(1 if fixed else PORT_ATTEMPTS):
            self.port = self.port if fixed else _free_port()
            if self._spawn_and_wait():
                return
        raise RuntimeError(f"redis-server did not start on port {self.port}:\n{self.log_tail()}")

    def _spawn_and_wait(self) -> bool:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--dir", str(self.directory), "--logfile", "redis.log",
                   "--daemonize", "no", "--protected-mode", "no",
                   "--maxmemory-policy", "noeviction", *self.options.arguments()]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        return self._wait_for_ping()

    def _wait_for_ping(self) -> bool:
        # No retries, so a foreign listener on the port cannot stall the loop.
        probe = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5,
                            retry=Retry(NoBackoff(), 0))
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        try:
            while time.monotonic() < deadline:
                if not self.running:
                    return False
                with contextlib.suppress(redis.ConnectionError, redis.TimeoutError,
                                         redis.exceptions.BusyLoadingError):
                    if self._answers_as_ours(probe):
                        return True
                time.sleep(POLL_SECONDS)
        finally:
            probe.close()
        self.stop(hard=True)
        return False

    def _answers_as_ours(self, probe: redis.Redis) -> bool:
        # Whoever answers on the port must be our process, never a server that won a port race.
        assert self.process is not None
        return probe.ping() and probe.info("server")["process_id"] == self.process.pid

    def stop(self, *, hard: bool = False) -> None:
        """Stop the server: SIGTERM (a clean shutdown) or, with ``hard``, SIGKILL."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        if hard:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(timeout=STOP_DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_DEADLINE_SECONDS)

    def restart(self, *, hard: bool = False) -> None:
        """Stop and start again on the same port and directory (reloading AOF/RDB)."""
        self.stop(hard=hard)
        self.start()


def _redis_binary() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH")
    return binary


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a private redis-server shared by the session (no persistence)."""
    server = RedisServer(_redis_binary(), tmp_path_factory.mktemp("redis"), RedisOptions())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def module_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private redis-server with AOF on (as ``cluster``'s) shared by one module: for a
    cluster started once for several cases that each submit runs of their own ids and stop
    or change no worker."""
    server = RedisServer(_redis_binary(), tmp_path_factory.mktemp("redis-module"),
                         RedisOptions(appendonly=True))
    server.start()
    try:
        yield server
    finally:
        server.stop()


RedisServerFactory = Callable[..., RedisServer]


@pytest.fixture
def redis_server_factory(tmp_path: Path) -> Iterator[RedisServerFactory]:
    """Start private servers with chosen persistence; all are stopped after the test.

    Call it with :class:`RedisOptions` fields, e.g. ``redis_server_factory(appendonly=True)``.
    """
    binary = _redis_binary()
    servers: list[RedisServer] = []

    def start(**options: object) -> RedisServer:
        server = RedisServer(binary, tmp_path / f"redis-{len(servers)}",
                             RedisOptions(**options))  # type: ignore[arg-type]
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def cluster(redis_server_factory: RedisServerFactory, tmp_path: Path) -> Iterator[Cluster]:
    """A private redis-server (AOF on) and a producer app; start workers with ``cluster.start``."""
    server = redis_server_factory(appendonly=True)
    made = Cluster(server.url, tmp_path)
    made.server = server  # type: ignore[attr-defined]
    yield made
    made.close()
