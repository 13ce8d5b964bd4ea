"""Child side of a bounded grep: match lines against one regex and exit.

Started by :mod:`srh_core.workspace.grep_match` as ``python -I -S -B
grep_child.py CPU_SECONDS`` for a pattern that may backtrack for long; the
parent kills it at its time bound, and ``RLIMIT_CPU`` ends it even if the
parent is gone. Standard library only (it runs without ``site``).

Protocol: stdin holds one JSON header line ``{"pattern", "flags", "lines"}``
followed by the lines joined with ``"\\n"`` (UTF-8 with surrogates passed
through); stdout receives one byte per line, 1 when the line matches.
"""

from __future__ import annotations

import json
import re
import resource
import sys


def _limit_cpu(seconds: int) -> None:
    # SIGXCPU at the soft limit, SIGKILL one second later (never above the inherited hard limit).
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > seconds + 1:
        hard = seconds + 1
    resource.setrlimit(resource.RLIMIT_CPU, (min(seconds, hard), hard))


def main() -> int:
    """Read the request from stdin, write the match bytes to stdout."""
    _limit_cpu(int(sys.argv[1]))
    header, _, body = sys.stdin.buffer.read().partition(b"\n")
    request = json.loads(header)
    compiled = re.compile(request["pattern"], request["flags"])
    lines = body.decode("utf-8", "surrogatepass").split("\n") if request["lines"] else []
    sys.stdout.buffer.write(bytes(compiled.search(line) is not None for line in lines))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
