"""Sweep files and the sweep runner (embedded backend: fast, no services)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from srh_core.errors import ConfigurationError
from srh_core.sweep import EmbeddedSweepBackend, RunLost, SweepRunner, cells, load_sweep

SWEEP = """
[sweep]
name = "small"
problems = ["feynman-I.14.4", "feynman-I.25.13"]
seeds = [0, 1]
samples = 200
retries = 1

[settings]
max_refinement_depth = 1

[[variants]]
name = "k1"

[[variants]]
name = "k2"
local_sample_size = 2
"""


class CountingBackend(EmbeddedSweepBackend):
    def __init__(self, lose: set[str] | None = None) -> None:
        super().__init__()
        self.submitted: list[str] = []
        self.lose = set(lose or ())

    def submit(self, run_id, cell, data):
        self.submitted.append(run_id)
        super().submit(run_id, cell, data)

    def poll(self, run_id):
        if any(run_id.endswith(suffix) for suffix in self.lose):
            raise RunLost("the broker forgot it")
        return super().poll(run_id)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_cells_are_problems_x_seeds_x_variants(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    ids = [cell.cell_id for cell in cells(spec)]
    assert len(ids) == 8 and len(set(ids)) == 8
    assert cells(spec)[0].label == "feynman-I.14.4|seed=0|k1"
    assert ids[0].startswith("feynman-I.14.4|seed=0|k1|")
    assert cells(spec)[0].run_id("small", 1) != cells(spec)[1].run_id("small", 1)


def test_a_cell_is_named_by_its_settings_so_a_changed_setting_is_a_new_cell(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    same = load_sweep(write(tmp_path, SWEEP))
    changed = load_sweep(write(tmp_path, SWEEP.replace("local_sample_size = 2",
                                                       "local_sample_size = 3")))
    noisier = load_sweep(write(tmp_path, SWEEP.replace("retries = 1", "retries = 1\nnoise = 0.01")))
    ids = [cell.cell_id for cell in cells(spec)]
    assert ids == [cell.cell_id for cell in cells(same)]
    moved = [a != b for a, b in zip(ids, [cell.cell_id for cell in cells(changed)], strict=True)]
    assert moved == [cell.variant == "k2" for cell in cells(spec)]  # only k2's cells changed
    assert not set(ids) & {cell.cell_id for cell in cells(noisier)}


def test_a_setting_at_its_default_is_the_same_cell_as_one_left_out(tmp_path):
    from srh_core.agent import SearchSettings

    default = SearchSettings().global_width
    spec = load_sweep(write(tmp_path, SWEEP))
    explicit = load_sweep(write(tmp_path, SWEEP.replace(
        "max_refinement_depth = 1", f"max_refinement_depth = 1\nglobal_width = {default}")))
    wider = load_sweep(write(tmp_path, SWEEP.replace(
        "max_refinement_depth = 1", f"max_refinement_depth = 1\nglobal_width = {default + 1}")))
    ids = [cell.cell_id for cell in cells(spec)]
    assert ids == [cell.cell_id for cell in cells(explicit)]  # (and a new setting's default)
    assert not set(ids) & {cell.cell_id for cell in cells(wider)}


@pytest.mark.parametrize(
    ("text", "message"),
    [(SWEEP.replace('"feynman-I.25.13"', '"feynman-I.25.31"'), "Unknown problem"),
     (SWEEP.replace("local_sample_size = 2", "local_sample_size = 0"), "local_sample_size"),
     (SWEEP.replace("retries = 1", "retries = -1"), "retries"),
     (SWEEP.replace("seeds = [0, 1]", "seeds = [0, 1]\ncolour = 3"), "colour"),
     ("[sweep\nname=", "Cannot read sweep file"),
     (SWEEP.replace("[settings]", "[setings]"),
      "unknown top-level table 'setings'.*Did you mean 'settings'"),
     ("retries = 1\n" + SWEEP, "unknown top-level key 'retries'")],
    ids=["unknown-problem", "bad-setting", "bad-retries", "unknown-key", "bad-toml",
         "misspelt-table", "key-above-the-tables"])
def test_malformed_sweep_files_are_reported(tmp_path, text, message):
    with pytest.raises(ConfigurationError, match=message):
        load_sweep(write(tmp_path, text))


def test_a_resumed_sweep_never_reruns_finished_cells(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    first = CountingBackend()
    rows = SweepRunner(spec, tmp_path / "out", first, progress=lambda line: None).run()
    assert len(first.submitted) == 8 and all(row["status"] == "done" for row in rows)
    assert all(row["solved"] is not None and row["best_formula"] for row in rows)
    again = CountingBackend()
    rows_again = SweepRunner(spec, tmp_path / "out", again, progress=lambda line: None).run()
    assert again.submitted == [] and rows_again == rows
    with (tmp_path / "out" / "results.csv").open() as stream:
        assert len(list(csv.DictReader(stream))) == 8


def test_lost_cells_are_retried_then_reported(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    lost = {cells(spec)[0].run_id("small", 1)[-14:], cells(spec)[0].run_id("small", 2)[-14:]}
    backend = CountingBackend(lose=lost)
    rows = SweepRunner(spec, tmp_path / "out", backend, progress=lambda line: None).run()
    failed = [row for row in rows if row["status"] == "failed"]
    assert [row["cell"] for row in failed] == [cells(spec)[0].cell_id]
    assert failed[0]["attempts"] == 2 and "run lost" in failed[0]["error"]
    state = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert state["cells"][cells(spec)[0].cell_id]["status"] == "failed"


METERED_SWEEP = """
[sweep]
name = "budget"
problems = ["feynman-I.14.4"]
seeds = [0, 1, 2, 3]
samples = 50
max_parallel = 1
max_tokens = 500

[settings]
llm_provider = "test-metered"
tool_parser = "text"
max_refinement_depth = 2
early_stop = false
"""


def test_a_sweep_budget_caps_the_runs_skips_the_rest_and_a_higher_one_runs_them(tmp_path):
    import tests.workers.cluster_plugins  # noqa: F401 - the test-metered provider (120 tokens/step)

    spec = load_sweep(write(tmp_path, METERED_SWEEP))
    backend = CountingBackend()
    rows = SweepRunner(spec, tmp_path / "out", backend, progress=lambda line: None).run()
    # cells of 2 steps x 120 tokens: 240, 240, then a run capped at the 20 left: one step
    assert [(row["status"], row["run_status"], row["tokens"]) for row in rows] == [
        ("done", "completed", 240), ("done", "completed", 240), ("done", "interrupted", 120),
        ("skipped", None, None)]
    assert rows[3]["error"] == "not run: the sweep's budget is spent"
    assert len(backend.submitted) == 3
    assert rows[0]["cost"] is not None and rows[0]["model_seconds"] >= 0
    with (tmp_path / "out" / "results.csv").open() as stream:
        assert [line["tokens"] for line in csv.DictReader(stream)] == ["240", "240", "120", ""]
    again = CountingBackend()
    richer = spec.model_copy(update={"max_tokens": 2000})
    rows = SweepRunner(richer, tmp_path / "out", again, progress=lambda line: None).run()
    assert len(again.submitted) == 1 and rows[3]["status"] == "done" and rows[3]["tokens"] == 240


class ScriptedBackend:
    """A backend whose runs finish after ``polls`` looks, ``capacity`` at a time."""

    poll_seconds = 0.0

    def __init__(self, capacity: int, polls: int = 3, status: str = "completed",
                 reason: str | None = None, interrupt_on: int | None = None) -> None:
        self.capacity, self.polls, self.status, self.reason = capacity, polls, status, reason
        self.interrupt_on = interrupt_on
        self.looks: dict[str, int] = {}
        self.most_in_flight = 0
        self.interrupted = self.closed = False

    def submit(self, run_id, cell, data):
        if self.interrupt_on is not None and len(self.looks) == self.interrupt_on:
            raise KeyboardInterrupt
        self.looks[run_id] = 0
        running = sum(looks < self.polls for looks in self.looks.values())
        self.most_in_flight = max(self.most_in_flight, running)

    def poll(self, run_id):
        from srh_core.types import SearchResult

        self.looks[run_id] += 1
        if self.looks[run_id] < self.polls:
            return None
        return SearchResult(status=self.status, progress="", candidates=[], pareto_front=[],
                            best_candidate=None, run_id=run_id, stop_reason=self.reason)

    def progress(self, run_id):
        return None  # nothing to watch: never stalled, however long it runs

    def kick(self, run_id):
        raise AssertionError("a run with nothing to watch was kicked")

    def interrupt(self):
        self.interrupted = True

    def close(self):
        self.closed = True


def test_cells_never_wait_in_a_queue_and_unwatched_runs_never_stall(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP.replace("retries = 1",
                                                    "retries = 0\nstall_seconds = 0.001")))
    backend = ScriptedBackend(capacity=2, polls=20)
    rows = SweepRunner(spec, tmp_path / "out", backend, progress=lambda line: None).run()
    assert [row["status"] for row in rows] == ["done"] * 8
    assert backend.most_in_flight == 2 and backend.closed


def test_ctrl_c_stops_launching_interrupts_the_backend_and_keeps_finished_cells(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    backend = ScriptedBackend(capacity=1, polls=1, interrupt_on=2)
    with pytest.raises(KeyboardInterrupt):
        SweepRunner(spec, tmp_path / "out", backend, progress=lambda line: None).run()
    assert backend.interrupted and backend.closed and len(backend.looks) == 2
    state = json.loads((tmp_path / "out" / "sweep.json").read_text())["cells"]
    assert sorted(entry["status"] for entry in state.values()) == ["done"] * 2 + ["pending"] * 6
    assert (tmp_path / "out" / "results.csv").exists()


def test_each_cell_is_reported_once_as_it_becomes_final_even_when_interrupted(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    reported: list[dict] = []
    with pytest.raises(KeyboardInterrupt):
        SweepRunner(spec, tmp_path / "out", ScriptedBackend(capacity=1, polls=1, interrupt_on=3),
                    progress=lambda line: None, on_final=reported.append).run()
    assert [row["status"] for row in reported] == ["done"] * 3  # before the Ctrl-C
    state = json.loads((tmp_path / "out" / "sweep.json").read_text())["cells"]
    assert sorted(row["cell"] for row in reported) == sorted(
        cell for cell, entry in state.items() if entry["status"] == "done")
    later: list[dict] = []  # the rest fail on both tries (retries = 1): reported once each
    rows = SweepRunner(spec, tmp_path / "out", ScriptedBackend(8, 1, "failed", "boom"),
                       progress=lambda line: None, on_final=later.append).run()
    assert [row["status"] for row in later] == ["failed"] * 5
    assert {row["cell"] for row in later} == {
        row["cell"] for row in rows if row["status"] == "failed"}
    assert not {row["cell"] for row in later} & {row["cell"] for row in reported}


def test_a_cell_interrupted_by_the_user_is_pending_again_under_the_same_run_id(tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP))
    backend = ScriptedBackend(capacity=8, polls=1, status="interrupted",
                              reason="interrupted by the user", interrupt_on=8)
    with pytest.raises(KeyboardInterrupt):
        SweepRunner(spec, tmp_path / "out", backend, progress=lambda line: None).run()
    state = json.loads((tmp_path / "out" / "sweep.json").read_text())["cells"]
    assert {entry["status"] for entry in state.values()} == {"pending"}
    assert {entry["attempts"] for entry in state.values()} == {0}
    again = ScriptedBackend(capacity=8, polls=1)
    SweepRunner(spec, tmp_path / "out", again, progress=lambda line: None).run()
    assert sorted(again.looks) == sorted(backend.looks)  # the same run ids: resumed


def test_a_sweep_file_that_never_ends_is_refused(tmp_path):
    from srh_core.errors import InputTooLargeError

    with pytest.raises(InputTooLargeError, match="sweep file /dev/zero is larger than 4 MiB"):
        load_sweep("/dev/zero")


def test_progress_in_a_log_is_one_line_per_change_and_a_terminal_gets_a_live_line():
    import io

    from srh_core.sweep.progress import SweepProgress

    entries = {f"c{n}": {"status": "pending"} for n in range(4)}
    lines: list[str] = []
    now = [100.0]
    log = SweepProgress("demo", 4, line=lines.append, clock=lambda: now[0], started=100.0)
    for _ in range(50):  # polls with no change write nothing
        log.update(entries, "running", 2)
    entries["c0"] = {"status": "done", "solved": True, "seconds": 10.0}
    now[0] = 110.0
    for _ in range(50):
        log.update(entries, "running", 2)
    log.finish(entries, "running")
    assert len(lines) == 3, lines
    assert "1/4 cells finished, 1 solved" in lines[1] and "elapsed 10s" in lines[1]
    assert "ETA 20s" in lines[1]  # 3 pending, 2 at a time, 10 s each
    assert "solve rate 1/1 = 100.0%" in lines[2]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    live = SweepProgress("demo", 4, stream=screen, clock=lambda: now[0], started=100.0)
    live.update(entries, "running", 2)
    live.update(entries, "running", 2)
    live.finish(entries, "completed")
    text = screen.getvalue()
    assert text.count("\r\x1b[K") == 2 and text.endswith("\n")
    assert text.splitlines()[-1].startswith("Sweep demo completed: 4 cells")


class Killed(BaseException):
    """The coordinator's process dying (nothing after it runs)."""


def test_a_cell_saved_but_never_submitted_is_submitted_by_the_successor_as_the_same_attempt(
        tmp_path):
    spec = load_sweep(write(tmp_path, SWEEP.replace("retries = 1", "retries = 0")))

    class Dying(ScriptedBackend):
        def submit(self, run_id, cell, data):
            raise Killed

    with pytest.raises(Killed):
        SweepRunner(spec, tmp_path / "out", Dying(capacity=1),
                    progress=lambda line: None).run()

    class Successor(ScriptedBackend):
        def poll(self, run_id):
            if run_id not in self.looks:
                raise RunLost(f"no run {run_id}")
            return super().poll(run_id)

    successor = Successor(capacity=8, polls=1)
    rows = SweepRunner(spec, tmp_path / "out", successor, progress=lambda line: None).run()
    assert [row["status"] for row in rows] == ["done"] * 8
    assert [row["attempts"] for row in rows] == [1] * 8  # the cut submission was not a try
    assert cells(spec)[0].run_id("small", 1) in successor.looks


def test_the_eta_counts_the_cells_the_backend_runs_at_once_not_max_parallel(tmp_path):
    from srh_core.sweep.summary import eta_seconds

    spec = load_sweep(write(tmp_path, SWEEP))  # max_parallel 16 by default
    runner = SweepRunner(spec, tmp_path / "out", EmbeddedSweepBackend(jobs=2),
                         progress=lambda line: None)
    assert runner.slots() == 2
    entries = {str(n): {"status": "done", "seconds": 10.0} for n in range(2)} | {
        str(n): {"status": "pending"} for n in range(2, 8)}
    assert eta_seconds(entries, runner.slots()) == 30.0  # 6 left, 2 at a time, 10 s each
