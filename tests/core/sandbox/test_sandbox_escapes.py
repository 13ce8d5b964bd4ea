"""Every escape attempt is stopped and reported as a failed run, never raised."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from srh_core.sandbox import SandboxRunner
from srh_core.sandbox.launcher import detect_launcher
from tests.support.waits import START_SECONDS

#: A run ends when its program is refused or done; the limit is only against a hang
#: (the sandbox's wall clock counts the interpreter's start, slow on a loaded machine).
TIMEOUT = START_SECONDS


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def assert_refused(result, needle: str = "not allowed in the sandbox") -> None:
    assert result.exit_code != 0, result.stdout
    assert result.killed_reason is None
    assert needle in result.stderr, result.stderr


PROCESS_ESCAPES = {
    "os_fork": "import os\nos.fork()",
    "os_system": "import os\nos.system('id > /tmp/srh-pwned')",
    "subprocess_run": "import subprocess\nsubprocess.run(['id'])",
    "subprocess_shell": "import subprocess\nsubprocess.check_output('id', shell=True)",
    "os_execv": "import os\nos.execv('/bin/sh', ['sh', '-c', 'id'])",
    "os_posix_spawn": "import os\nos.posix_spawn('/bin/true', ['true'], {})",
    "os_spawnv": "import os\nos.spawnv(os.P_WAIT, '/bin/true', ['true'])",
    "os_forkpty": "import os\nos.forkpty()",
    "multiprocessing": "import multiprocessing as mp\np = mp.Process(target=print)\np.start()",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)",
    "kill_init": "import os\nos.kill(1, 0)",
}


@pytest.mark.parametrize("code", PROCESS_ESCAPES.values(), ids=PROCESS_ESCAPES.keys())
def test_process_creation_and_signals_are_refused(runner: SandboxRunner, code: str) -> None:
    result = runner.run(code, timeout_seconds=TIMEOUT)
    assert_refused(result)
    assert not Path("/tmp/srh-pwned").exists()


def test_unaudited_fork_is_stopped_by_seccomp(runner: SandboxRunner) -> None:
    # _posixsubprocess.fork_exec raises no audit event in 3.11: only seccomp stops it.
    code = (
        "import _posixsubprocess, os\nr, w = os.pipe()\n"
        "_posixsubprocess.fork_exec([b'/bin/true'], [b'/bin/true'], True, (w,), None, None,"
        " -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, -1, -1, None, False)"
    )
    result = runner.run(code, timeout_seconds=TIMEOUT)
    if "seccomp" not in result.isolation:
        pytest.skip("seccomp is not available here")
    assert result.exit_code == 1
    assert "Operation not permitted" in last_line(result.stderr)


NETWORK_ESCAPES = {
    "redis_localhost": "import socket\nsocket.create_connection(('127.0.0.1', 6379), timeout=2)",
    "raw_socket_localhost": "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 6379))",
    "external_ip": "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)",
    "dns": "import socket\nsocket.getaddrinfo('example.com', 80)",
    "udp": "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.sendto(b'x', ('8.8.8.8', 53))",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:6379', timeout=2)",
    "unix_socket": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/run/x.sock')",
}


@pytest.mark.parametrize("code", NETWORK_ESCAPES.values(), ids=NETWORK_ESCAPES.keys())
def test_network_is_refused(runner: SandboxRunner, code: str) -> None:
    assert_refused(runner.run(code, timeout_seconds=TIMEOUT))


def test_launcher_network_namespace_has_no_route_to_the_host() -> None:
    launcher = detect_launcher()
    if "netns" not in launcher.isolation:
        pytest.skip("no network namespace available here")
    probe = "import socket; s = socket.socket(); print(s.connect_ex(('127.0.0.1', 6379)))"
    inside = subprocess.run([*launcher.prefix, sys.executable, "-c", probe],
                            capture_output=True, text=True, timeout=20, check=True)
    assert int(inside.stdout) != 0  # ENETUNREACH: the namespace's loopback is down
    with socket.socket() as outside:
        if outside.connect_ex(("127.0.0.1", 6379)) != 0:
            pytest.skip("no redis on the host to compare with")


FILE_ESCAPES = {
    "read_passwd": "print(open('/etc/passwd').read())",
    "read_passwd_pathlib": "import pathlib\nprint(pathlib.Path('/etc/passwd').read_text())",
    "read_passwd_numpy": "import numpy as np\nnp.fromfile('/etc/passwd', dtype='u1')",
    "read_parent_environ": "import os\nprint(open(f'/proc/{os.getppid()}/environ').read())",
    "list_root": "import os\nprint(os.listdir('/'))",
    "write_tmp": "open('/tmp/srh-sandbox-escape', 'w').write('x')",
    "write_parent_dir": "open('../escape', 'w').write('x')",
    "write_dotdot_deep": "import os\nos.makedirs('a', exist_ok=True)\nopen('a/../../x', 'w')",
    "mkdir_outside": "import os\nos.mkdir('/tmp/srh-sandbox-dir')",
    "remove_outside": "import os\nos.remove('/etc/hostname')",
    "rename_outside": "import os\nopen('f', 'w').close()\nos.rename('f', '/tmp/srh-moved')",
    "symlink": "import os\nos.symlink('/etc/passwd', 'p')",
    "hardlink": "import os\nopen('f', 'w').close()\nos.link('f', 'g')",
    "chmod_stdlib": "import os\nos.chmod(os.__file__, 0o777)",
    "fchmod_read_only_fd": "import os\nos.fchmod(os.open(os.__file__, os.O_RDONLY), 0o777)",
    "utime_read_only_fd": "import os\nos.utime(os.open(os.__file__, os.O_RDONLY))",
    "write_stdlib": "import os\nopen(os.__file__, 'a').write('#')",
    "sqlite_outside": "import sqlite3\nsqlite3.connect('/tmp/srh-sandbox.db')",
    "chdir_root": "import os\nos.chdir('/')",
}


@pytest.mark.parametrize("code", FILE_ESCAPES.values(), ids=FILE_ESCAPES.keys())
def test_files_outside_are_refused(runner: SandboxRunner, code: str) -> None:
    result = runner.run(code, timeout_seconds=TIMEOUT)
    assert_refused(result)
    assert "root:" not in result.stdout
    for leftover in ("/tmp/srh-sandbox-escape", "/tmp/srh-sandbox-dir", "/tmp/srh-moved"):
        assert not os.path.exists(leftover)


def test_c_level_reads_are_stopped_by_landlock(runner: SandboxRunner) -> None:
    # dlopen opens the file from C, where the audit hook sees nothing.
    code = (
        "import importlib.machinery as m, importlib.util as u\n"
        "loader = m.ExtensionFileLoader('x', '/etc/passwd')\n"
        "loader.create_module(u.spec_from_file_location('x', '/etc/passwd', loader=loader))"
    )
    result = runner.run(code, timeout_seconds=TIMEOUT)
    if "landlock" not in result.isolation:
        pytest.skip("Landlock is not available here")
    assert "Permission denied" in last_line(result.stderr)


TAMPERING = {
    "ctypes_dlopen": "import ctypes\nctypes.CDLL('libc.so.6')",
    "ctypes_memory": "import ctypes\nctypes.string_at(id(1), 8)",
    "code_replace": "def f(): pass\nf.__code__ = f.__code__.replace(co_code=b'')",
    "gc_objects": "import gc\ngc.get_objects()",
    "raise_rlimit": "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
    "patched_builtins_and_os": (
        "import builtins, os, os.path\n"
        "builtins.isinstance = lambda *a: False\nos.path.realpath = lambda p: '/tmp'\n"
        "os.lstat = os.stat = lambda *a, **k: None\nprint(open('/etc/passwd').read())"
    ),
    "patched_hook_globals": (
        "import os\ntry:\n    os.system('true')\nexcept PermissionError as error:\n"
        "    tb = error.__traceback__\n    while tb.tb_next:\n        tb = tb.tb_next\n"
        "    hook_globals = tb.tb_frame.f_globals\n"
        "    for name in list(hook_globals):\n"
        "        if callable(hook_globals[name]) or name.isupper():\n"
        "            hook_globals[name] = lambda *a, **k: None\n"
        "os.system('true')"
    ),
}


@pytest.mark.parametrize("code", TAMPERING.values(), ids=TAMPERING.keys())
def test_tampering_with_the_hook_is_refused(runner: SandboxRunner, code: str) -> None:
    result = runner.run(code, timeout_seconds=TIMEOUT)
    assert_refused(result)
    assert "root:" not in result.stdout


def test_environment_secrets_are_not_inherited(
    runner: SandboxRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.setenv("PYTHONSTARTUP", "/tmp/evil.py")
    code = "import os, sys\nprint(sorted(os.environ))\nprint(sys.flags.isolated, sys.path)"
    result = runner.run(code, timeout_seconds=TIMEOUT)
    assert result.ok, result.stderr
    assert "sk-test-secret-value" not in result.stdout
    assert "OPENAI_API_KEY" not in result.stdout
    assert "PYTHONSTARTUP" not in result.stdout
    assert "'HOME'" in result.stdout and "'OMP_NUM_THREADS'" in result.stdout
    assert str(Path.cwd()) + "'" not in result.stdout.split("\n")[1]


def test_isolation_mechanisms_are_reported(runner: SandboxRunner) -> None:
    result = runner.run("pass", timeout_seconds=TIMEOUT)
    assert {"rlimits", "audit_hook"} <= set(result.isolation)
    assert set(detect_launcher().isolation) <= set(result.isolation)
    assert set(result.isolation) <= {"pids_cgroup", "dedicated_uid", "rlimits", "mntns",
                                     "netns", "ipcns", "tmpfs", "landlock", "seccomp",
                                     "audit_hook", "disk_budget"}
