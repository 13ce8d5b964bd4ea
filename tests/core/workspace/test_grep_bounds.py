"""grep's regex matching is cut at a time bound, whatever the pattern (issue 22, finding 1)."""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

import pytest

import srh_core.tools.workspace_shell  # noqa: F401  (registers the tool)
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.workspace import Workspace, grep_match, run_workspace_shell
from srh_core.workspace.grep_match import (
    IN_PROCESS_STEP_BUDGET,
    LineRegex,
    match_in_child,
    worst_case_steps,
)

#: Each backtracks for minutes in Python's re over the second line below.
BACKTRACKING = ["(a|aa)*$", "(a|a)*!b", "(a|a?)+$", "((a+)b?)+$", "^(a?){40}a{40}$"]
#: 60 characters each: 'a's, and 'a's with a last character that makes the match fail.
LINES = "a" * 60 + "\n" + "a" * 59 + "!\n"


#: The bound these tests run under (the shipped one is MAX_GREP_SECONDS): the cut is the
#: same mechanism at any bound, and six cuts at 2 s were 12 s of the suite.
TEST_BOUND = 0.5


@pytest.fixture
def short_bound(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(grep_match, "MAX_GREP_SECONDS", TEST_BOUND)
    return TEST_BOUND


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("a.txt", LINES)
    workspace.write_text("data.csv", "name,score\nbob,3\nalice,10\ncarol,2\n")
    return workspace


def _grep_children() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                parent = int(handle.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"grep_child.py" in command:
            found.append(entry)
    return found


@pytest.mark.parametrize("pattern", BACKTRACKING, ids=BACKTRACKING)
def test_backtracking_patterns_are_cut_at_the_bound(ws: Workspace, pattern: str,
                                                   short_bound: float) -> None:
    started = time.monotonic()
    result = run_workspace_shell(ws, f"grep -E '{pattern}' a.txt")
    elapsed = time.monotonic() - started
    assert short_bound <= elapsed < short_bound + 2.0
    assert result.exit_code == 2 and result.stdout == ""
    assert f"took longer than {short_bound:g} s to match" in result.stderr
    assert "simpler pattern, or -F" in result.stderr
    assert _grep_children() == []  # killed and reaped, not left running


def test_the_tool_reports_the_cut_in_the_callers_thread(tmp_path: Path,
                                                       short_bound: float) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text(LINES)
    context = AgentContext(data={"x": [1.0, 2.0], "y": [1.0, 2.0]}, target="y",
                           workspace=str(folder))
    started = time.monotonic()
    result = BaseTool.create("workspace_shell", context)(command="grep -E '(a|aa)*$' a.txt")
    assert time.monotonic() - started < short_bound + 2.0
    assert result.result["exit_code"] == 2 and not result.result["success"]
    assert "took longer than" in result.result_str and "-F" in result.result_str


def test_ordinary_greps_run_in_this_process(ws: Workspace, monkeypatch) -> None:
    def no_child(*_args: object) -> list[bool]:
        raise AssertionError("a cheap grep started a child")

    monkeypatch.setattr(grep_match, "match_in_child", no_child)
    assert run_workspace_shell(ws, "grep alice data.csv").stdout == "alice,10\n"
    assert run_workspace_shell(ws, "grep -cE '^(bob|carol),[0-9]+$' data.csv").stdout == "2\n"
    assert run_workspace_shell(ws, "grep -in 'A.*,1' data.csv").stdout == "3:alice,10\n"
    assert run_workspace_shell(ws, "grep -vc 'a\\+' a.txt").stdout == "0\n"


BOUNDED = ["alice", "^a*b", r"\d+x", "a.*b.*c", "(bob|carol),", "x{3,5}y", "(?:ab)+c",
           "a++b", "(?>a+|b)c", "(?=a+)b"]
UNBOUNDED = [*BACKTRACKING, r"(a)\1", "(?:a?)+", "(a)(?(1)b|c)", "(?:x*)*"]


@pytest.mark.parametrize("pattern", BOUNDED, ids=BOUNDED)
def test_single_way_repetitions_have_a_finite_bound(pattern: str) -> None:
    assert worst_case_steps(re._parser.parse(pattern), ["a" * 100] * 10) < math.inf


@pytest.mark.parametrize("pattern", UNBOUNDED, ids=UNBOUNDED)
def test_ambiguous_repetitions_have_no_bound(pattern: str) -> None:
    assert worst_case_steps(re._parser.parse(pattern), ["a" * 100]) == math.inf


def test_the_bound_grows_with_the_longest_line() -> None:
    tree = re._parser.parse(r"\d+x")
    assert worst_case_steps(tree, ["1" * 100]) < IN_PROCESS_STEP_BUDGET
    assert worst_case_steps(tree, ["1" * 100_000]) > IN_PROCESS_STEP_BUDGET
    # Anchored at the start: one start position per line.
    assert worst_case_steps(re._parser.parse(r"^\d+x"), ["1" * 100_000]) < 10**6


@pytest.mark.parametrize("pattern", [r"\d+x", "a*b", ".*.*=x"], ids=["digits", "a_star", "dots"])
def test_the_in_process_worst_case_is_short(pattern: str) -> None:
    # The longest line whose bound is still within the budget: the worst the
    # in-process path can be asked to do.
    length = 10
    while worst_case_steps(re._parser.parse(pattern), ["1" * (2 * length)]) <= \
            IN_PROCESS_STEP_BUDGET:
        length *= 2
    line = ("1" if "d" in pattern else "a") * length
    assert worst_case_steps(re._parser.parse(pattern), [line]) <= IN_PROCESS_STEP_BUDGET
    started = time.perf_counter()
    assert LineRegex(pattern).matches([line]) == [False]
    assert time.perf_counter() - started < 1.0


PATTERNS = [("b.*a", 0), ("(A|B)+C", re.IGNORECASE), ("^\\w+$", 0), ("é+", 0),
            ("\ud800", 0), ("(x|y)*z$", 0)]
SAMPLE = ["abc", "bca", "ABC", "aabbc", "ééé", "x\ud800y", "", "xyxyz", "ab" * 50 + "bc"]


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS, ids=[p for p, _ in PATTERNS])
def test_both_paths_agree_with_python_re(pattern: str, flags: int) -> None:
    compiled = re.compile(pattern, flags)
    expected = [compiled.search(line) is not None for line in SAMPLE]
    assert LineRegex(pattern, flags).matches(SAMPLE) == expected
    assert match_in_child(pattern, flags, SAMPLE) == expected
    assert match_in_child(pattern, flags, []) == []


@pytest.mark.parametrize("pattern", ["z", "(z)(?(1)|y)"], ids=["in_process", "child"])
def test_long_lines_are_matched_on_their_start(pattern: str) -> None:
    line = "x" * grep_match.MAX_MATCH_LINE_CHARS
    assert LineRegex(pattern).matches([line + "z", "xz"]) == [False, True]
