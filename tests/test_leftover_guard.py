"""The suite's guard (tests/conftest.py) fails a test that leaves a process behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

INNER = textwrap.dedent('''
    import subprocess, sys

    def test_leaves_a_process_in_its_own_session():
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         start_new_session=True)

    def test_leaves_a_grandchild():
        subprocess.run([sys.executable, "-c",
                        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
                        "'import time; time.sleep(60)'])"], check=True)

    def test_waits_for_its_child():
        subprocess.run([sys.executable, "-c", "pass"], check=True)
''')


def test_the_guard_names_each_leftover_and_passes_a_clean_test(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    conftest = (REPO / "tests" / "conftest.py").read_text()
    assert "LEFTOVER_GRACE_SECONDS = 5.0" in conftest
    (tests / "conftest.py").write_text(conftest.replace("LEFTOVER_GRACE_SECONDS = 5.0",
                                                        "LEFTOVER_GRACE_SECONDS = 0.5"))
    (tests / "support").symlink_to(REPO / "tests" / "support")
    (tests / "test_inner.py").write_text(INNER)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), "-o", "addopts=", "-o", "pythonpath=.", "tests/test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "3 passed, 2 errors" in out, out
    assert "test_leaves_a_process_in_its_own_session left 1 process(es) behind" in out, out
    assert "test_leaves_a_grandchild left 1 process(es) behind" in out, out
    assert "time.sleep(60)" in out, out


SURROGATES = textwrap.dedent('''
    import logging

    import pytest

    def test_fails_quoting_a_lone_surrogate():
        pytest.fail("model sent \\ud800", pytrace=False)

    def test_logs_a_lone_surrogate_and_fails():
        logging.getLogger("srh").warning("reply \\ud800")
        assert False

    def test_passes():
        pass
''')


def test_failures_quoting_lone_surrogates_are_reported_from_xdist_workers(tmp_path):
    """A report pytest-xdist cannot send (text UTF-8 cannot carry) ends its worker and hides
    the failure; the suite's conftest escapes such text so the failure is reported."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    (tests / "support").symlink_to(REPO / "tests" / "support")
    (tests / "test_inner.py").write_text(SURROGATES)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--rootdir",
         str(tmp_path), "-o", "addopts=", "-o", "pythonpath=.", "tests/test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    assert "INTERNALERROR" not in out, out
    assert "2 failed, 1 passed" in out, out
    assert "model sent \\ud800" in out and "reply \\ud800" in out, out
