"""nesting_depth: a streaming scan, exact on tricky text, memory bounded (issue 22, finding 2)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tracemalloc

import pytest

from srh_core import json_limits
from srh_core.json_limits import depth_problem, nesting_depth

TRICKY = {
    "scalar": ("1", 0),
    "brackets_in_strings": ('["[[[[", "]]", "{"]', 1),
    "escaped_quote": ('["a\\"[[", [1]]', 2),
    "escaped_backslash_then_quote": ('["a\\\\", [1]]', 2),
    "three_backslashes": ('["a\\\\\\"[", [[1]]]', 3),
    "key_with_brackets": ('{"[{": {"]}": []}}', 3),
    "unicode": ('["é\\ud800€", {"😀": [[]]}]', 4),
    "closing_first": ("]]][[", 0),
    "unterminated_string": ('[["[[[[', 2),
    "very_deep": ("[" * 5000 + "]" * 5000, 5000),
}


def reference_depth(text: str) -> int:
    """A plain character loop: the definition the scan must agree with."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


@pytest.mark.parametrize(("text", "depth"), TRICKY.values(), ids=TRICKY.keys())
@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 18], ids=["c1", "c2", "c3", "default"])
def test_depth_on_tricky_text(monkeypatch, text: str, depth: int, chunk: int) -> None:
    # Small chunks put every escape run, quote and bracket across a chunk boundary.
    monkeypatch.setattr(json_limits, "SCAN_CHUNK_CHARS", chunk)
    assert nesting_depth(text) == depth == reference_depth(text)


def _random_value(rng: random.Random, depth: int) -> object:
    roll = rng.random()
    if depth > 6 or roll < 0.3:
        return "".join(rng.choice('ab"\\[]{}é\ud800') for _ in range(rng.randint(0, 6)))
    if roll < 0.65:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {str(index): _random_value(rng, depth + 1) for index in range(rng.randint(0, 3))}


@pytest.mark.parametrize("chunk", [1, 5, 64], ids=["c1", "c5", "c64"])
def test_depth_agrees_with_a_character_loop(monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(json_limits, "SCAN_CHUNK_CHARS", chunk)
    rng = random.Random(chunk)
    for _ in range(200):
        text = json.dumps(_random_value(rng, 0), ensure_ascii=rng.random() < 0.5)
        assert nesting_depth(text) == reference_depth(text), text


def test_stop_above_ends_the_scan_early() -> None:
    text = "[" * 1_000_000
    assert 64 < nesting_depth(text, stop_above=64) < 1_000_000
    assert nesting_depth(text) == 1_000_000
    assert nesting_depth("[[]]", stop_above=64) == 2


def test_depth_problem_reports_the_full_depth() -> None:
    assert depth_problem("[[[]]]", 3, "it") is None
    assert depth_problem("[" * 70 + "]" * 70, 64, "the result") == (
        "the result is nested 70 levels deep; at most 64 levels of arrays and objects are "
        "allowed.")


def test_scanning_a_40_mb_string_allocates_little() -> None:
    text = '"' + "A" * (40 * 1024 * 1024) + '"'
    tracemalloc.start()
    try:
        assert nesting_depth(text) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(text) // 4  # the old regex scan took about 120 bytes per byte


def test_worst_case_text_is_bounded_in_memory_too() -> None:
    # Every byte special (escapes and brackets) in a child: its peak RSS grows
    # by a few chunks' worth, not by a multiple of the 16 MB text.
    program = (
        "import resource\n"
        "from srh_core.json_limits import nesting_depth\n"
        "text = '[\"' + '\\\\\\\\' * (4 * 1024 * 1024) + '\"' + ',[1]' * (2 * 1024 * 1024) + ']'\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "assert nesting_depth(text) == 2\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(len(text), (after - before) * 1024)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, check=True)
    size, growth = map(int, done.stdout.split())
    assert size > 16 * 1024 * 1024 and growth < size // 2
