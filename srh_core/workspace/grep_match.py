"""grep's regex matching, cut at a time bound whatever the pattern.

Python's ``re`` backtracks, and one search runs inside a single C call that
holds the GIL and does not look at signals: ``(a|aa)*$`` or ``^(a?){40}a{40}$``
over 60 characters, or even ``\\d+x`` over one 100,000-character line, runs
for minutes, and neither a thread, a signal nor the tool timeout stops it.

So each grep first bounds its cost: :func:`worst_case_steps` walks the parsed
pattern and bounds the matcher's steps over the given lines (a sequence costs
the work of each item times the ways the items before it can match; a
repetition is accepted only around an item that matches in at most one way,
at least one character wide; backreferences and conditionals are not
bounded). Within :data:`IN_PROCESS_STEP_BUDGET` (a fraction of a second) the
lines are matched here, as before. Otherwise they are matched by a child
interpreter (``grep_child.py``), which is killed after
:data:`MAX_GREP_SECONDS` and limited by ``RLIMIT_CPU`` in case this process
dies first; a cut match is a :class:`CommandError` saying so.
"""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from re import _constants as sre  # the parse tree's opcodes
from re import _parser as sre_parse

from srh_core.workspace.shell_common import CommandError

#: Wall-clock bound of one grep's matching (in the child, start-up included).
MAX_GREP_SECONDS = 2.0
#: Most estimated matcher steps run in this process (about 0.05-0.25 s at worst).
IN_PROCESS_STEP_BUDGET = 50_000_000
#: Lines longer than this are matched on their first characters only.
MAX_MATCH_LINE_CHARS = 100_000
CHILD_PATH = str(Path(__file__).with_name("grep_child.py"))
_SINGLE_CHARACTER = frozenset({sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN})
_REPEATS = frozenset({sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT})
_CAP = 10**18  # keeps the products small; anything near it is far over budget
TOO_SLOW = ("the pattern took longer than {seconds:g} s to match and was stopped: it makes the "
            "regex engine backtrack (alternatives or optional parts inside a repetition, like "
            "'(a|aa)*' or '(a?){{40}}', or several unbounded repetitions over long lines). Use a "
            "simpler pattern, or -F to search for a fixed string.")

Cost = tuple[int, int]  # (ways an item can match at one position, steps to find them all)


class LineRegex:
    """A grep regex that matches many lines within :data:`MAX_GREP_SECONDS`.

    Args:
        pattern: Python regex syntax.
        flags: ``re`` flags (``re.IGNORECASE`` or 0).

    Raises:
        CommandError: The pattern does not compile (exit code 2).
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        try:
            self.compiled = re.compile(pattern, flags)
            self._tree: sre_parse.SubPattern | None = sre_parse.parse(pattern, flags)
        except re.error as error:
            raise CommandError(f"invalid regular expression {pattern!r}: {error}", 2) from error
        except (RecursionError, OverflowError, TypeError, ValueError):
            self._tree = None  # compiled but not analysed: matched in the child
        self.pattern = pattern
        self.flags = flags

    def matches(self, lines: Sequence[str]) -> list[bool]:
        """Whether each line (its first :data:`MAX_MATCH_LINE_CHARS`) contains a match.

        Raises:
            CommandError: Matching took longer than :data:`MAX_GREP_SECONDS`, or the
                child could not run (exit code 2).
        """
        clipped = lines
        if max(map(len, lines), default=0) > MAX_MATCH_LINE_CHARS:
            clipped = [line[:MAX_MATCH_LINE_CHARS] for line in lines]
        if worst_case_steps(self._tree, clipped) <= IN_PROCESS_STEP_BUDGET:
            search = self.compiled.search
            return [search(line) is not None for line in clipped]
        return match_in_child(self.pattern, self.flags, clipped)


def worst_case_steps(tree: sre_parse.SubPattern | None, lines: Sequence[str]) -> float:
    """An upper bound of the regex engine's steps to search every line (inf: unbounded).

    Args:
        tree: The pattern parsed by ``re._parser.parse``; None when it could not be.
        lines: The lines to be searched (without line breaks).
    """
    if tree is None:
        return math.inf
    cost = _sequence_cost(tree, max(map(len, lines), default=0))
    if cost is None:
        return math.inf
    starts = sum(map(len, lines)) + len(lines)
    if _anchored_at_start(tree):
        # Only position 0 is matched (each other start fails in one step, if any is tried).
        return len(lines) * cost[1] + starts
    return starts * cost[1]  # every start position, each at most cost[1] steps


def _anchored_at_start(tree: sre_parse.SubPattern) -> bool:
    if not len(tree) or tree[0][0] is not sre.AT:
        return False
    at = tree[0][1]
    return at is sre.AT_BEGINNING_STRING or (
        at is sre.AT_BEGINNING and not tree.state.flags & re.MULTILINE)


def _sequence_cost(items: Sequence, length: int) -> Cost | None:
    ways, steps = 1, 0
    for op, argument in items:
        cost = _item_cost(op, argument, length)
        if cost is None:
            return None
        steps = min(steps + ways * cost[1], _CAP)
        ways = min(ways * cost[0], _CAP)
    return ways, steps


def _item_cost(op: object, argument: object, length: int) -> Cost | None:
    if op in _SINGLE_CHARACTER or op is sre.AT:
        return 1, 1
    if op is sre.SUBPATTERN:
        return _sequence_cost(argument[-1], length)
    if op in (sre.ATOMIC_GROUP, sre.ASSERT, sre.ASSERT_NOT):
        inner = _sequence_cost(argument if op is sre.ATOMIC_GROUP else argument[1], length)
        return None if inner is None else (1, inner[1])  # no backtracking into them
    if op is sre.BRANCH:
        costs = [_sequence_cost(branch, length) for branch in argument[1]]
        if any(cost is None for cost in costs):
            return None
        return min(sum(c[0] for c in costs), _CAP), min(sum(c[1] for c in costs), _CAP)
    if op in _REPEATS:
        return _repeat_cost(op, *argument, length)
    return None  # backreferences, conditionals: no bound


def _repeat_cost(op: object, low: int, high: int, item: Sequence, length: int) -> Cost | None:
    """A repetition of an item that matches in one way only and is never empty."""
    inner = _sequence_cost(item, length)
    if inner is None or inner[0] != 1 or _min_width(item) < 1:
        return None
    count = length if high == sre.MAXREPEAT else min(high, length)
    if low > count:
        return 1, min(count * inner[1] + 1, _CAP)
    ways = 1 if op is sre.POSSESSIVE_REPEAT else count - low + 1
    return ways, min(count * inner[1] + ways, _CAP)


def _min_width(item: Sequence) -> int:
    if isinstance(item, sre_parse.SubPattern):
        return item.getwidth()[0]
    return 0


def match_in_child(pattern: str, flags: int, lines: Sequence[str]) -> list[bool]:
    """Match ``lines`` in a child interpreter killed after :data:`MAX_GREP_SECONDS`.

    Raises:
        CommandError: The bound was reached, or the child could not run (exit code 2).
    """
    if not sys.executable:
        raise CommandError("this pattern may be slow to match and no interpreter is available "
                           "to match it under a time limit; use a simpler pattern or -F", 2)
    header = json.dumps({"pattern": pattern, "flags": flags, "lines": len(lines)})
    request = header.encode("ascii") + b"\n" + "\n".join(lines).encode("utf-8", "surrogatepass")
    command = [sys.executable, "-I", "-S", "-B", CHILD_PATH, str(math.ceil(MAX_GREP_SECONDS))]
    try:
        done = subprocess.run(command, input=request, capture_output=True, check=False,
                              timeout=MAX_GREP_SECONDS)
    except subprocess.TimeoutExpired:  # run() has killed and reaped the child
        raise CommandError(TOO_SLOW.format(seconds=MAX_GREP_SECONDS), 2) from None
    except OSError as error:
        raise CommandError(f"could not start the time-limited matcher: {error}", 2) from error
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise CommandError(TOO_SLOW.format(seconds=MAX_GREP_SECONDS), 2)
    if done.returncode != 0 or len(done.stdout) != len(lines):
        detail = done.stderr.decode("utf-8", "replace").strip()[-300:] or "no output"
        raise CommandError(f"the time-limited matcher failed (exit code {done.returncode}): "
                           f"{detail}", 2)
    return [byte == 1 for byte in done.stdout]
