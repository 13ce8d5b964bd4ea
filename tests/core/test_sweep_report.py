"""The sweep report on constructed rows: rates, bootstrap CIs, McNemar + Holm, formats, plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from srh_core.errors import ConfigurationError
from srh_core.sweep.report import (
    bootstrap_ci,
    build_report,
    format_csv,
    format_markdown,
    holm,
    plot_report,
)

ROOT = Path(__file__).resolve().parents[2]


def row(problem: str, seed: int, variant: str, status: str = "done", solved: bool | None = None,
        **extra):
    return {"problem": problem, "seed": seed, "variant": variant, "status": status,
            "solved": solved, "r2_fresh": 1.0 if solved else 0.9, "seconds": 10.0 + seed,
            "tokens": 100, "cost": 0.01, "error": None, **extra}


def test_four_of_twelve_solved_is_one_third_inside_its_interval():
    rows = [row(f"feynman-{n}", 0, "base", solved=n < 4) for n in range(12)]
    variant = build_report("s", "completed", rows)["variants"][0]
    assert variant["solve_rate"] == pytest.approx(1 / 3) and variant["judged"] == 12
    low, high = variant["solve_rate_ci"]
    assert low < 1 / 3 < high and 0 <= low and high <= 1
    assert variant["accuracy_rate"] == pytest.approx(1 / 3)
    again = build_report("s", "completed", rows)["variants"][0]["solve_rate_ci"]
    assert again == variant["solve_rate_ci"]  # seeded: the same rows, the same interval
    wider = [row(f"feynman-{n}", seed, "base", solved=n < 4) for n in range(12)
             for seed in range(4)]
    narrow = build_report("s", "completed", wider)["variants"][0]["solve_rate_ci"]
    assert narrow[1] - narrow[0] < high - low


def test_failures_are_misses_and_unfinished_cells_are_not_judged():
    rows = [row("p-1", 0, "v", solved=True),
            row("p-2", 0, "v", status="failed", error="run failed: the model is down"),
            row("p-3", 0, "v", status="failed", error="run lost: Redis forgot it"),
            row("p-4", 0, "v", status="cancelled"), row("p-5", 0, "v", status="pending"),
            row("p-6", 0, "v", status="skipped"),
            row("p-7", 0, "v", solved=False, r2_fresh=float("nan"))]
    variant = build_report("s", "running", rows)["variants"][0]
    assert variant["judged"] == 4 and variant["solved"] == 1
    assert variant["solve_rate"] == pytest.approx(0.25)
    assert variant["failures"] == {"run failed": 1, "run lost": 1}
    assert variant["cells_by_state"]["cancelled"] == 1
    assert variant["cells_by_state"]["pending"] == 1


def test_a_clear_winner_and_a_tie():
    rows = []
    for n in range(20):
        rows.append(row(f"feynman-{n}", 0, "strong", solved=n < 18))
        rows.append(row(f"feynman-{n}", 0, "weak", solved=n < 3))
        rows.append(row(f"feynman-{n}", 0, "twin", solved=n < 3))
    report = build_report("s", "completed", rows)
    by_pair = {(c["a"], c["b"]): c for c in report["comparisons"]}
    clear = by_pair[("strong", "weak")]
    assert clear["pairs"] == 20 and clear["a_only"] == 15 and clear["b_only"] == 0
    assert clear["p"] < 1e-3 and clear["p_holm"] >= clear["p"] and clear["winner"] == "strong"
    tie = by_pair[("weak", "twin")]
    assert tie["p"] == 1.0 and tie["winner"] is None and tie["seconds_p"] is None


def test_holm_is_monotone_and_capped():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.9, 0.8]) == [1.0, 1.0]


def test_an_interval_needs_enough_resamples():
    with pytest.raises(ConfigurationError, match="at least 1000"):
        bootstrap_ci([True, False], resamples=10)
    assert bootstrap_ci([]) is None


def test_markdown_csv_and_plot(tmp_path):
    rows = [row(f"feynman-{n}", 0, v, solved=n < k) for v, k in (("a", 4), ("b", 2))
            for n in range(6)] + [row("strogatz-1", 0, "a", solved=True)]
    report = build_report("demo", "completed", rows)
    assert [f["family"] for f in report["families"]] == ["feynman", "strogatz"]
    text = format_markdown(report)
    assert "| a | 7 | 7 | 5 | 71.4% [" in text and "| a | b | 6 |" in text
    table = format_csv(report).splitlines()
    assert table[0].startswith("variant,cells,judged,solved,solve_rate,solve_rate_low")
    assert table[1].startswith("a,7,7,5,0.714")
    png = plot_report(report, tmp_path / "rates.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000


def test_srh_sweep_report_reads_a_sweep_directory(tmp_path):
    from srh_core.sweep.runner import FileSweepState

    entries = {f"p-{n}|seed=0|v|h": row(f"p-{n}", 0, "v", solved=n < 2) for n in range(5)}
    FileSweepState(tmp_path / "demo", "demo").save(entries)
    done = subprocess.run([sys.executable, "-m", "srh_core", "sweep", "report",
                           str(tmp_path / "demo"), "--json", "--plot", str(tmp_path / "r.png")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sweep"] == "demo" and report["status"] == "completed"
    assert report["variants"][0]["solve_rate"] == pytest.approx(0.4)
    assert (tmp_path / "r.png").stat().st_size > 0
    missing = subprocess.run([sys.executable, "-m", "srh_core", "sweep", "report", "nosuch"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2 and "No sweep 'nosuch'" in missing.stderr
