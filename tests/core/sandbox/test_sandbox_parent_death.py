"""A sandboxed program dies with the process that runs it, even when that one is SIGKILLed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from tests.support.commands import wait_session_empty

OWNER = textwrap.dedent("""
    import sys
    from srh_core.sandbox.runner import SandboxRunner

    print("started", flush=True)
    SandboxRunner().run("import time\\nprint('sleeping', flush=True)\\ntime.sleep(120)",
                        timeout_seconds=120, cpu_limit_seconds=120)
""")


def test_the_sandboxed_program_ends_when_its_owner_is_killed(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER], cwd=tmp_path,
                             stdout=subprocess.PIPE, start_new_session=True)
    assert owner.stdout.readline().strip() == b"started"
    deadline = time.monotonic() + 30
    children: list[int] = []
    while time.monotonic() < deadline and not children:
        children = [int(pid) for pid in os.listdir("/proc") if pid.isdigit()
                    and _parent(int(pid)) == owner.pid]
        time.sleep(0.05)
    assert children, "the sandboxed program never started"
    time.sleep(0.5)  # past its confinement, inside the user code
    owner.kill()
    owner.wait(5)
    alive = [pid for pid in children if _running(pid)]
    deadline = time.monotonic() + 5
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _running(pid)]
    assert not alive, "the sandboxed program outlived the process that ran it"
    assert not wait_session_empty(owner.pid, 5)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False
