"""A large emitted result costs the caller a few copies of it, not gigabytes (issue 22)."""

from __future__ import annotations

import subprocess
import sys

MIB = 1024 * 1024
PROGRAM = """
import resource
from srh_core.sandbox import run_python_with_json
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result, value = run_python_with_json("emit_result('A' * (40 * 1024 * 1024))", {},
                                     memory_limit_mb=1024, timeout_seconds=60)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert result.ok and result.result_error is None, (result.stderr, result.result_error)
print(len(value), (after - before) * 1024)
"""


def test_a_40_mb_result_is_read_within_a_few_copies() -> None:
    # Measured in a child so that the peak RSS is this run's alone; the depth
    # scan used to take about 120 bytes per byte of result (4.9 GB here).
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=120, check=True)
    size, growth = map(int, done.stdout.split())
    assert size == 40 * MIB
    assert growth < 4 * size  # file bytes, the text and the parsed value
