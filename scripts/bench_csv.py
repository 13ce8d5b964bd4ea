#!/usr/bin/env python
"""CSV loading benchmark: ``load_tabular`` before and after, side by side.

Run alone::

    .venv/bin/python scripts/bench_csv.py [--rows 1000000] [--cols 50] [--csv FILE]
        [--before REV] [--engines before,arrow,numpy] [--repeats 1] [--json out.json]

Without ``--csv`` a file of ``--rows`` x ``--cols`` standard-normal values,
written with 17 significant digits (``%.17g``, the worst case for a float
parser) and a header row, is generated once into a temporary directory
(about 1 GB and a minute for the default size). Each reader loads it in its
own child process, which reports its wall time, its peak resident set size
(``VmHWM``: nothing the parent allocated is counted) and the size of the
interpreter before loading, so peak memory compares with the float64 array
of the data (rows x cols x 8 bytes). "before" is ``load_tabular`` of the git
revision ``--before`` (default ``main``), loaded from ``git show``; "arrow"
and "numpy" are today's reader with each engine. Every child also hashes the
table it loaded: the hashes must agree, so no reader is faster by being
wrong. The load average is printed with every figure, since the machine may
be shared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GENERATION_BLOCK_ROWS = 100_000
ENGINES = ("before", "arrow", "numpy")


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def _generate(path: Path, rows: int, cols: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    with path.open("w", encoding="ascii") as stream:
        stream.write(",".join([f"x{i}" for i in range(cols - 1)] + ["y"]) + "\n")
        for start in range(0, rows, GENERATION_BLOCK_ROWS):
            block = rng.normal(size=(min(GENERATION_BLOCK_ROWS, rows - start), cols))
            np.savetxt(stream, block, fmt="%.17g", delimiter=",")


def _before_loader(revision: str) -> Any:
    source = subprocess.run(["git", "show", f"{revision}:srh_core/context/tabular.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("tabular_before")
    exec(compile(source, f"{revision}:tabular.py", "exec"), module.__dict__)  # our own file
    return module.load_tabular


def child(engine: str, path: str, revision: str) -> None:
    """Load ``path`` with one reader and print one JSON line of measurements."""
    import numpy as np

    from srh_core.context import tabular

    if engine == "before":
        load = _before_loader(revision)
    else:
        def load(target: str) -> Any:
            return tabular.load_tabular(target, engine=engine)
    base_kib = _status_kib("VmRSS")
    started = time.perf_counter()
    data, names = load(path)
    seconds = time.perf_counter() - started
    peak_kib = _status_kib("VmHWM")
    digest = hashlib.sha256()
    for name in names:
        digest.update(np.ascontiguousarray(data[name]).tobytes())
    rows = len(data[names[0]])
    print(json.dumps({"engine": engine, "seconds": seconds, "peak_rss_bytes": peak_kib * 1024,
                      "base_rss_bytes": base_kib * 1024, "rows": rows, "cols": len(names),
                      "array_bytes": rows * len(names) * 8, "sha256": digest.hexdigest()}))


def measure(engine: str, path: Path, revision: str) -> dict[str, Any]:
    before = _loadavg()
    completed = subprocess.run(
        [sys.executable, __file__, "--child", engine, "--csv", str(path), "--before", revision],
        check=True, capture_output=True, text=True)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    return {**result, "loadavg_before": before, "loadavg_after": _loadavg()}


def _table(results: list[dict[str, Any]]) -> str:
    reference = next((r for r in results if r["engine"] == "before"), results[0])
    lines = ["| reader | seconds | speed-up | peak RSS MB | peak / float64 array | "
             "interpreter MB | loadavg (1, 5, 15 min) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r['engine']} | {r['seconds']:.2f} | {reference['seconds'] / r['seconds']:.1f}x"
            f" | {r['peak_rss_bytes'] / 2**20:.0f} | {r['peak_rss_bytes'] / r['array_bytes']:.2f}"
            f" | {r['base_rss_bytes'] / 2**20:.0f} | {r['loadavg_after']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=50)
    parser.add_argument("--csv", help="an existing CSV file instead of a generated one")
    parser.add_argument("--before", default="main", help="git revision of the 'before' reader")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.csv, args.before)
        return 0
    with tempfile.TemporaryDirectory(prefix="srh-bench-csv-") as scratch:
        path = Path(args.csv) if args.csv else Path(scratch) / "data.csv"
        if not args.csv:
            print(f"generating {args.rows} x {args.cols} into {path} ...", file=sys.stderr)
            _generate(path, args.rows, args.cols)
        results = [measure(engine, path, args.before)
                   for _ in range(args.repeats) for engine in args.engines.split(",")]
        size = os.path.getsize(path)
    digests = {r["sha256"] for r in results}
    report = {"file_bytes": size, "rows": results[0]["rows"], "cols": results[0]["cols"],
              "same_table": len(digests) == 1, "results": results}
    print(f"{report['rows']} x {report['cols']} CSV, {size / 2**20:.0f} MB; float64 array "
          f"{results[0]['array_bytes'] / 2**20:.0f} MB; identical tables: {report['same_table']}")
    print(_table(results))
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0 if report["same_table"] else 1


if __name__ == "__main__":
    sys.exit(main())
