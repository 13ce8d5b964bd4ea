"""How long ``srh`` commands take to start and return, side by side for two installs.

Each command runs N times in a fresh subprocess (alternating between the
installs, so the shared machine's load affects both alike); the table gives
the minimum and the median wall seconds, and the ratio of the medians.
``python -X importtime -m srh_core.cli --help`` gives the detail of one run.

Usage::

    python scripts/bench_startup.py [--before /work/main/.venv/bin/srh]
        [--after .venv/bin/srh] [--runs 7] [--json out.json]

Bytecode is cached in a temporary ``PYTHONPYCACHEPREFIX`` (warmed by one
unmeasured run per command), as an installed package has its ``.pyc`` files;
neither tree gets a ``__pycache__``.

``srh status`` talks to the broker of ``SRH_BROKER_URL`` (the default
redis://127.0.0.1:6379/0); ``status (no redis)`` points it at a closed port,
where the command must fail at once with its one-line error.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PYCACHE = tempfile.TemporaryDirectory(prefix="srh-bench-pycache-")


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def commands() -> dict[str, tuple[list[str], dict[str, str]]]:
    """Arguments and extra environment of each measured command (``python`` is the floor:
    the install's interpreter starting with ``-c pass``)."""
    port = closed_port()
    return {
        "python": (["-c", "pass"], {}),
        "--help": (["--help"], {}),
        "status": (["status"], {}),
        "status (no redis)": (["status"], {"SRH_BROKER_URL": f"redis://127.0.0.1:{port}/0"}),
        "run --help": (["run", "--help"], {}),
    }


def once(srh: str, argv: list[str], extra: dict[str, str]) -> tuple[float, int]:
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
           "PYTHONPYCACHEPREFIX": PYCACHE.name, **extra}
    program = [str(Path(srh).with_name("python"))] if argv[:1] == ["-c"] else [srh]
    start = time.perf_counter()
    done = subprocess.run([*program, *argv], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=120, check=False)
    return time.perf_counter() - start, done.returncode


def measure(installs: dict[str, str], runs: int) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, (argv, extra) in commands().items():
        seconds: dict[str, list[float]] = {label: [] for label in installs}
        codes: dict[str, int] = {}
        for srh in installs.values():
            once(srh, argv, extra)  # bytecode written
        for _ in range(runs):
            for label, srh in installs.items():
                elapsed, code = once(srh, argv, extra)
                seconds[label].append(elapsed)
                codes[label] = code
        report[name] = {label: {"min": min(values), "median": statistics.median(values),
                                "exit_code": codes[label]}
                        for label, values in seconds.items()}
    return report


def table(report: dict[str, Any], labels: list[str]) -> str:
    head = ["command"] + [f"{label} min/median s (exit)" for label in labels]
    if len(labels) == 2:
        head.append(f"median {labels[1]}/{labels[0]}")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for name, by_label in report.items():
        row = [name] + [f"{by_label[label]['min']:.3f} / {by_label[label]['median']:.3f} "
                        f"({by_label[label]['exit_code']})" for label in labels]
        if len(labels) == 2:
            row.append(f"{by_label[labels[1]]['median'] / by_label[labels[0]]['median']:.2f}")
        lines.append(" | ".join(row))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="the srh console script to compare against")
    parser.add_argument("--after", default=str(Path(sys.executable).with_name("srh")),
                        help="the srh console script measured (default: this venv's)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    installs = {"after": args.after} if not args.before else {
        "before": args.before, "after": args.after}
    report = measure(installs, args.runs)
    print(table(report, list(installs)))
    output = {"runs": args.runs, "installs": installs, "commands": report}
    print(json.dumps(output), flush=True)
    if args.json:
        args.json.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
