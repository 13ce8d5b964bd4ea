"""No setuid or setgid bit survives in a workspace (issue 22, finding 4)."""

from __future__ import annotations

import errno
import json
import os
import platform
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from srh_core.sandbox import SandboxRunner
from srh_core.sandbox.file_modes import clear_privilege_bits
from tests.support.waits import START_SECONDS

#: A run ends when its program is refused or done; the limit is only against a hang
#: (the sandbox's wall clock counts the interpreter's start, slow on a loaded machine).
TIMEOUT = START_SECONDS
BITS = stat.S_ISUID | stat.S_ISGID
ATTEMPTS = r'''
import json, os, subprocess
report = {}
def attempt(name, action):
    try:
        action()
        report[name] = "done"
    except OSError as error:
        report[name] = str(error)
open("plain", "w").write("#!/bin/sh\nid\n")
attempt("chmod_4755", lambda: os.chmod("plain", 0o4755))
attempt("chmod_2755", lambda: os.chmod("plain", 0o2755))
attempt("chmod_6755_dir_fd", lambda: os.chmod("plain", 0o6755, dir_fd=os.open(".", os.O_RDONLY)))
fd = os.open("by_fd", os.O_CREAT | os.O_WRONLY, 0o755)
attempt("fchmod_4755", lambda: os.fchmod(fd, 0o4755))
attempt("fchmod_2755", lambda: os.fchmod(fd, 0o2755))
attempt("open_4755", lambda: os.close(os.open("made_4755", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("open_2755", lambda: os.close(os.open("made_2755", os.O_CREAT | os.O_WRONLY, 0o2755)))
attempt("subprocess_chmod", lambda: subprocess.run(["chmod", "4755", "plain"], check=True))
report["modes"] = {name: oct(os.lstat(name).st_mode) for name in sorted(os.listdir("."))}
print(json.dumps(report))
'''


SECCOMP_PROBE = r'''
import json, os, sys
from srh_core.sandbox import confine
os.chdir(sys.argv[1])
assert confine.apply_seccomp(os.getpid())
report = {}
def attempt(name, action):
    try:
        action()
        report[name] = "done"
    except OSError as error:
        report[name] = error.errno
open("plain", "w").close()
fd = os.open("plain", os.O_RDONLY)
attempt("chmod_4755", lambda: os.chmod("plain", 0o4755))
attempt("chmod_2755_dir_fd", lambda: os.chmod("plain", 0o2755, dir_fd=os.open(".", os.O_RDONLY)))
attempt("fchmod_6755", lambda: os.fchmod(fd, 0o6755))
attempt("open_creat_4755", lambda: os.open("a", os.O_CREAT | os.O_WRONLY, 0o4755))
attempt("open_tmpfile_2755", lambda: os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o2755))
attempt("chmod_755", lambda: os.chmod("plain", 0o755))
attempt("fchmod_700", lambda: os.fchmod(fd, 0o700))
attempt("open_creat_644", lambda: os.close(os.open("b", os.O_CREAT | os.O_WRONLY, 0o644)))
attempt("open_read", lambda: os.close(os.open("plain", os.O_RDONLY)))
report["modes"] = {name: os.lstat(name).st_mode & 0o7777 for name in sorted(os.listdir("."))}
print(json.dumps(report))
'''


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter is x86_64 only")
def test_the_seccomp_filter_refuses_privileged_modes_only(tmp_path: Path) -> None:
    # Below the audit hook: what C code calling the kernel directly gets.
    done = subprocess.run([sys.executable, "-c", SECCOMP_PROBE, str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=True)
    report = json.loads(done.stdout)
    for name in ("chmod_4755", "chmod_2755_dir_fd", "fchmod_6755", "open_creat_4755",
                 "open_tmpfile_2755"):
        assert report[name] == errno.EPERM, name
    for name in ("chmod_755", "fchmod_700", "open_creat_644", "open_read"):
        assert report[name] == "done", name
    assert report["modes"] == {"b": 0o644, "plain": 0o700}


def _privileged_files(root: Path) -> list[str]:
    found = []
    for directory, _names, files in os.walk(root):
        for name in files:
            if os.lstat(os.path.join(directory, name)).st_mode & BITS:
                found.append(name)
    return found


def _run(runner: SandboxRunner, workspace: Path) -> dict:
    result = runner.run(ATTEMPTS, workspace=workspace, timeout_seconds=TIMEOUT)
    assert result.ok, result.stderr
    return json.loads(result.stdout)


def test_setuid_and_setgid_modes_are_refused(runner: SandboxRunner, tmp_path: Path) -> None:
    report = _run(runner, tmp_path)
    for name in ("chmod_4755", "chmod_2755", "chmod_6755_dir_fd", "fchmod_4755", "fchmod_2755"):
        assert "[sandbox] setting the setuid or setgid bit" in report[name], name
    assert "not allowed in the sandbox" in report["subprocess_chmod"]
    probe = runner.run("print(1)", timeout_seconds=TIMEOUT)
    if "seccomp" in probe.isolation:  # the mode of os.open is not visible to the audit hook
        assert "Operation not permitted" in report["open_4755"]
        assert "Operation not permitted" in report["open_2755"]
    assert not any(int(mode, 8) & BITS for mode in report["modes"].values()), report["modes"]
    assert _privileged_files(tmp_path) == []


def test_without_seccomp_the_bits_are_cleared_after_the_run(tmp_path: Path) -> None:
    report = _run(SandboxRunner(use_seccomp=False), tmp_path)
    assert report["open_4755"] == report["open_2755"] == "done"
    # Inside the run the files had the bits; once it ended, none is left.
    assert int(report["modes"]["made_4755"], 8) & stat.S_ISUID
    assert int(report["modes"]["made_2755"], 8) & stat.S_ISGID
    assert _privileged_files(tmp_path) == []
    assert stat.S_IMODE(os.lstat(tmp_path / "made_4755").st_mode) == 0o755 & ~os.umask(0o22)


def test_clearing_follows_no_symlink_and_changes_no_other_link(tmp_path: Path) -> None:
    outside, workspace = tmp_path / "outside", tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    target = outside / "system_binary"
    target.write_text("x")
    target.chmod(0o4755)
    (workspace / "link").symlink_to(target)
    os.link(target, workspace / "hard")
    for name, mode in (("sub/setuid", 0o4711), ("setgid", 0o2750), ("plain", 0o644)):
        (workspace / name).write_text("x")
        (workspace / name).chmod(mode)
    (workspace / "sub").chmod(0o2755)

    changed = clear_privilege_bits(str(workspace))

    assert sorted(Path(path).name for path in changed) == ["hard", "setgid", "setuid"]
    assert stat.S_IMODE((workspace / "sub" / "setuid").stat().st_mode) == 0o711
    assert stat.S_IMODE((workspace / "setgid").stat().st_mode) == 0o750
    assert stat.S_IMODE((workspace / "plain").stat().st_mode) == 0o644
    assert not (workspace / "hard").exists()  # unlinked, not changed through its other name
    assert stat.S_IMODE(target.stat().st_mode) == 0o4755 and (workspace / "link").is_symlink()
    assert (workspace / "sub").stat().st_mode & stat.S_ISGID  # directories keep theirs
    assert _privileged_files(workspace) == []  # the symlink's target is not in the workspace


@pytest.mark.parametrize("mode", [0o4755, 0o2755], ids=["setuid", "setgid"])
def test_a_file_left_before_the_run_is_cleared_too(runner: SandboxRunner, tmp_path: Path,
                                                   mode: int) -> None:
    (tmp_path / "old").write_text("x")
    (tmp_path / "old").chmod(mode)
    assert runner.run("print(1)", workspace=tmp_path, timeout_seconds=TIMEOUT).ok
    assert _privileged_files(tmp_path) == []
