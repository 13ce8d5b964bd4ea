"""A closed output pipe (``srh problems | head -1``) ends a command quietly.

No ``srh: error: cannot access: Broken pipe`` line, no traceback and no
"Exception ignored ... BrokenPipeError" from the interpreter's exit; the exit
code is 0 (everything was written before the reader left) or 141 (128 +
SIGPIPE, as a shell reports a command the signal ended).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRH = str(Path(sys.executable).with_name("srh"))
SUITE = Path(__file__).parents[3] / "srh_core" / "problems" / "feynman_public.json"
COMMANDS = {
    "problems": ["problems"],
    "problems_json": ["problems", "--json"],
    "tool_list": ["tool", "list"],
    "tool_schema": ["tool", "schema", "power_law_fit"],
    "help": ["--help"],
    "run_json": ["run", "--problem", "feynman-I.6.2a", "-L", "1", "--json", "--out", "run"],
}


def _quiet(stderr: str) -> bool:
    return not any(text in stderr for text in ("srh: error", "Traceback", "Exception ignored",
                                               "BrokenPipeError"))


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_pipe_closed_before_the_output_ends_the_command_quietly(command: list[str],
                                                                 tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # every write fails: the reader is gone before the first line
    try:
        completed = subprocess.run([SRH, *command], stdout=writer, stderr=subprocess.PIPE,
                                   cwd=tmp_path, text=True, timeout=120)
    finally:
        os.close(writer)
    assert completed.returncode in (0, 141), completed.stderr
    assert _quiet(completed.stderr), completed.stderr


def _big_suite(tmp_path: Path) -> Path:
    """A suite whose listing (~150 kB) is larger than a pipe's buffer (64 kB)."""
    suite = json.loads(SUITE.read_text(encoding="utf-8"))
    suite["problems"] = [{**problem, "name": f"{problem['name']}-{copy}"}
                         for copy in range(40) for problem in suite["problems"]]
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


@pytest.mark.parametrize("redirect", ["", "2>&1"], ids=["stdout", "stdout-and-stderr"])
def test_head_reading_one_line_of_a_long_listing(redirect: str, tmp_path: Path) -> None:
    script = (f'"$0" problems --suite "$1" {redirect} | head -1 >/dev/null; '
              'exit "${PIPESTATUS[0]}"')
    completed = subprocess.run(["bash", "-c", script, SRH, str(_big_suite(tmp_path))],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 141, completed.stderr
    assert completed.stderr == ""


def test_a_broken_pipe_that_is_not_the_output_is_still_reported(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.cli import commands, main

    def broken(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(commands, "handle_problems", broken)
    assert main(["problems"]) == 2
    assert capsys.readouterr().err.strip() == "srh: error: cannot access: Broken pipe"
