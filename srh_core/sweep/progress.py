"""A sweep's progress, fit for a terminal and for a log.

On a terminal (the stream is a tty) one live line is rewritten in place:
cells done of all, solved, running, failed, elapsed and ETA. In a log (cron,
a batch job, a pipe) a line is written only when the cells' states change,
never once per poll. Both end with one summary: cells by state, the solve
rate over the judged cells, wall time, tokens and cost.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from srh_core.sweep.summary import counts_by_state, eta_seconds, summary_of


def duration(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``42s``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_text(name: str, entries: Mapping[str, Mapping[str, Any]], status: str,
                  elapsed: float, eta: float | None) -> str:
    """One line: ``[sweep] NAME running: 12/200 done, 3 solved, 16 running, ...``."""
    counts = counts_by_state(entries)
    total = len(entries)
    finished = counts["done"] + counts["failed"] + counts["skipped"] + counts["cancelled"]
    solved = sum(entry.get("solved") is True for entry in entries.values())
    parts = [f"{finished}/{total} cells finished", f"{solved} solved"]
    parts += [f"{counts[state]} {state}" for state in ("running", "failed", "skipped",
                                                       "cancelled") if counts[state]]
    parts.append(f"elapsed {duration(elapsed)}")
    if status == "running" and finished < total:
        parts.append(f"ETA {duration(eta)}")
    return f"[sweep] {name} {status}: " + ", ".join(parts)


def summary_text(name: str, entries: Mapping[str, Mapping[str, Any]], status: str,
                 wall: float) -> str:
    """The final summary: cells by state, solve rate, wall time, tokens, cost."""
    summary = summary_of(entries)
    states = ", ".join(f"{n} {state}" for state, n in summary["by_state"].items() if n)
    rate = ("n/a" if summary["solve_rate"] is None else
            f"{summary['solved']}/{summary['judged']} = {summary['solve_rate']:.1%}")
    return (f"Sweep {name} {status}: {summary['cells']} cells ({states}); solve rate {rate}; "
            f"wall {duration(wall)}; {summary['tokens']:,} tokens, ${summary['cost']:.4f}")


class SweepProgress:
    """Shows a sweep's progress on ``stream`` (stderr by default).

    Args:
        name: The sweep.
        total: Its number of cells.
        line: Instead of a stream: called with each line (a log; no live line).
        stream: Where lines go; a tty gets the live line.
        clock: Seconds since an epoch (tests pass their own).
    """

    def __init__(self, name: str, total: int, *, line: Callable[[str], None] | None = None,
                 stream: TextIO | None = None, clock: Callable[[], float] = time.time,
                 started: float | None = None) -> None:
        self.name = name
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self._line = line
        self.clock = clock
        self.started = clock() if started is None else started
        self.live = line is None and bool(getattr(self.stream, "isatty", lambda: False)())
        self._last: tuple[Any, ...] | None = None
        self._shown = False

    def _write(self, text: str) -> None:
        if self._line is not None:
            self._line(text)
            return
        if self._shown:  # end the live line first
            self.stream.write("\n")
            self._shown = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A message about the sweep (an outage, an interrupt), on a line of its own."""
        self._write(f"[sweep] {self.name}: {text}")

    def update(self, entries: Mapping[str, Mapping[str, Any]], status: str,
               parallel: int) -> None:
        """After a look at the cells: the live line, or a log line if a state changed."""
        now = self.clock()
        text = progress_text(self.name, entries, status, now - self.started,
                             eta_seconds(entries, parallel, now))
        if self.live:
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()
            self._shown = True
            return
        key = (status, tuple(sorted(counts_by_state(entries).items())),
               sum(entry.get("solved") is True for entry in entries.values()))
        if key != self._last:
            self._last = key
            self._write(text)

    def finish(self, entries: Mapping[str, Mapping[str, Any]], status: str) -> None:
        """The summary line (the live line ends first)."""
        self._write(summary_text(self.name, entries, status, self.clock() - self.started))
