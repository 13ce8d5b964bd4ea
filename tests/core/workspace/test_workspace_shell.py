"""workspace_shell: syntax refusals, each command's happy path and hostile variants."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srh_core.errors import ConfigurationError
from srh_core.workspace import ALLOWED_COMMANDS, Workspace, WorkspaceShell, run_workspace_shell

CSV = "name,score\nbob,3\nalice,10\ncarol,2\nalice,10\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    source = tmp_path / "outside"
    source.mkdir()
    (source / "train.csv").write_text("x,y\n1,2\n")
    return source


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws", read_only_mounts={"inputs": outside})
    workspace.write_text("data.csv", CSV)
    workspace.write_text("notes/readme.txt", "Hello World\nsecond line\n", make_parents=True)
    workspace.write_text(".hidden", "h")
    workspace.write_text("context.data/manifest.json", "{}", make_parents=True)
    workspace.lock("context.data")
    return workspace


def sh(ws: Workspace, command: str) -> tuple[str, str, int]:
    result = run_workspace_shell(ws, command)
    return result.stdout, result.stderr, result.exit_code


@pytest.mark.parametrize("command", [
    "ls; rm -rf data.csv", "ls && rm data.csv", "ls || rm data.csv", "ls > out.txt",
    "cat < data.csv", "rm data.csv &", "(rm data.csv)", "ls\nrm data.csv",
    "cat $(echo data.csv)", "cat `echo data.csv`", "cat ${HOME}", "cat $HOME",
    "cat \"$(rm data.csv)\"", "cat 'unterminated", "ls |", "| ls", "", "ls | | wc",
])
def test_shell_syntax_is_refused_before_anything_runs(ws: Workspace, command: str) -> None:
    stdout, stderr, code = sh(ws, command)
    assert code == 2 and stdout == ""
    assert stderr.startswith("workspace_shell: ")
    assert ws.exists("data.csv") and not ws.exists("out.txt")


@pytest.mark.parametrize("command", ["sh -c ls", "python -c 1", "bash", "echo hi", "/bin/ls"])
def test_unknown_commands_list_the_allowed_ones(ws: Workspace, command: str) -> None:
    _, stderr, code = sh(ws, command)
    assert code == 127
    assert "unknown command" in stderr and ", ".join(ALLOWED_COMMANDS) in stderr


def test_unknown_command_suggests_a_close_one(ws: Workspace) -> None:
    assert "Did you mean 'grep'?" in sh(ws, "grpe x data.csv")[1]


def test_quotes_keep_operators_literal(ws: Workspace) -> None:
    assert sh(ws, "grep '|' data.csv")[2] == 1  # a literal pattern, not a pipe
    assert sh(ws, "grep -c 'a$' data.csv")[0] == "0\n"
    assert sh(ws, 'grep "Hello World" notes/readme.txt')[0] == "Hello World\n"


def test_ls_variants(ws: Workspace) -> None:
    assert sh(ws, "ls")[0] == "context.data/\ndata.csv\ninputs/\nnotes/\n"
    assert ".hidden" in sh(ws, "ls -a")[0]
    long_listing = sh(ws, "ls -l")[0]
    assert "inputs -> [read-only mount]" in long_listing and long_listing.startswith("d")
    recursive = sh(ws, "ls -R notes")[0]
    assert "readme.txt" in recursive
    assert sh(ws, "ls inputs")[0] == "train.csv\n"
    assert sh(ws, "ls missing")[2] == 2


def test_cat_head_tail_wc(ws: Workspace) -> None:
    assert sh(ws, "cat data.csv")[0] == CSV
    assert sh(ws, "cat -n notes/readme.txt")[0].startswith("     1\tHello")
    assert sh(ws, "head -n 2 data.csv")[0] == "name,score\nbob,3\n"
    assert sh(ws, "head -2 data.csv")[0] == "name,score\nbob,3\n"
    assert sh(ws, "tail -n 1 data.csv")[0] == "alice,10\n"
    assert sh(ws, "tail -n +4 data.csv")[0] == "carol,2\nalice,10\n"
    assert sh(ws, "wc -l data.csv")[0].split() == ["5", "data.csv"]
    assert sh(ws, "cat data.csv | wc -w")[0].split() == ["5"]
    assert sh(ws, "wc data.csv notes/readme.txt")[0].splitlines()[-1].split()[-1] == "total"
    assert sh(ws, "cat inputs/train.csv")[0] == "x,y\n1,2\n"


def test_grep_variants(ws: Workspace) -> None:
    assert sh(ws, "grep alice data.csv") == ("alice,10\nalice,10\n", "", 0)
    assert sh(ws, "grep -i HELLO notes/readme.txt")[0] == "Hello World\n"
    assert sh(ws, "grep -v alice data.csv | grep -c ,")[0] == "3\n"
    assert sh(ws, "grep -n carol data.csv")[0] == "4:carol,2\n"
    assert sh(ws, "grep -E '^(bob|carol),' data.csv")[0] == "bob,3\ncarol,2\n"
    assert sh(ws, "grep -l alice data.csv notes/readme.txt")[0] == "data.csv\n"
    assert sh(ws, "grep zzz data.csv")[2] == 1
    assert sh(ws, "grep 'bob\\|carol' data.csv")[0] == "bob,3\ncarol,2\n"
    assert sh(ws, "grep -c '(' data.csv")[0] == "0\n"  # literal in a basic regex
    assert sh(ws, "grep -E '(' data.csv")[2] == 2
    stderr = sh(ws, "grep -E '(a+)+$' data.csv")[1]
    assert "nests unbounded repetitions" in stderr


def test_sort_and_cut(ws: Workspace) -> None:
    body = "tail -n +2 data.csv"
    assert sh(ws, f"{body} | sort -t , -k 2 -n")[0] == "carol,2\nbob,3\nalice,10\nalice,10\n"
    assert sh(ws, f"{body} | sort -t , -k 2 -n -r -u")[0] == "alice,10\nbob,3\ncarol,2\n"
    assert sh(ws, f"{body} | sort")[0] == "alice,10\nalice,10\nbob,3\ncarol,2\n"
    assert sh(ws, "cut -d , -f 1 data.csv | sort -u")[0] == "alice\nbob\ncarol\nname\n"
    assert sh(ws, "cut -d , -f 2- data.csv | head -1")[0] == "score\n"
    assert sh(ws, "cut -c 1-3 data.csv | head -1")[0] == "nam\n"
    assert sh(ws, "cut data.csv")[2] == 2


def test_globs_expand_inside_the_workspace_only(ws: Workspace) -> None:
    ws.write_text("b.csv", "b\n")
    assert sh(ws, "cat *.csv | wc -l")[0].split() == ["6"]
    assert sh(ws, "ls notes/*.txt")[0] == "notes/readme.txt\n"
    assert sh(ws, "cat /etc/*")[2] == 1
    assert "no such file" in sh(ws, "cat nothing*.csv")[1]


def test_cp_mv_rm_mkdir_happy_paths(ws: Workspace) -> None:
    assert sh(ws, "mkdir -p out/deep")[2] == 0
    assert sh(ws, "cp data.csv out/copy.csv")[2] == 0
    assert sh(ws, "cp inputs/train.csv out")[2] == 0
    assert sorted(ws.list("out")) == ["copy.csv", "deep/", "train.csv"]
    assert sh(ws, "cp -r notes out/notes2")[2] == 0
    assert ws.read_text("out/notes2/readme.txt").startswith("Hello")
    assert sh(ws, "mv out/copy.csv out/moved.csv")[2] == 0
    assert ws.exists("out/moved.csv") and not ws.exists("out/copy.csv")
    assert sh(ws, "rm out/moved.csv")[2] == 0
    assert sh(ws, "rm out")[2] == 1  # a directory needs -r
    assert sh(ws, "rm -r out")[2] == 0 and not ws.exists("out")
    assert sh(ws, "rm -f missing.txt")[2] == 0
    assert sh(ws, "mkdir notes")[2] == 1


@pytest.mark.parametrize("command", [
    "cat /etc/passwd", "cat ../../../../etc/passwd", "head -n 1 /etc/shadow",
    "grep root /etc/passwd", "ls /", "ls ..", "cp data.csv ../../y", "cp /etc/passwd x",
    "cp -r / everything", "mv data.csv /tmp/stolen.csv", "mv data.csv ../moved.csv",
    "rm -rf /", "rm -rf .", "rm -rf ..", "mkdir /tmp/srh-shell-dir", "gzip /etc/passwd",
    "tar -cf ../out.tar data.csv", "tar -cf out.tar /etc/passwd", "unzip x.zip -d /tmp",
    "cat data.csv\x00/etc/passwd",
])
def test_paths_outside_the_workspace_are_refused(ws: Workspace, command: str) -> None:
    stdout, stderr, code = sh(ws, command)
    assert code != 0
    assert "root:" not in stdout
    assert stderr
    assert ws.read_text("data.csv") == CSV
    assert not Path("/tmp/stolen.csv").exists() and not Path("/tmp/srh-shell-dir").exists()


def test_symlink_escape_is_refused(ws: Workspace) -> None:
    os.symlink("/etc", ws.root / "etc_link")
    stdout, stderr, code = sh(ws, "cat etc_link/passwd")
    assert code == 1 and "symlink" in stderr and stdout == ""
    assert sh(ws, "cp etc_link/passwd here")[2] == 1
    assert sh(ws, "rm etc_link")[2] == 0  # the link itself may go
    assert Path("/etc/passwd").exists()


def test_mounts_and_locks_survive_hostile_commands(ws: Workspace, outside: Path) -> None:
    for command in ("rm -rf inputs", "mv inputs x", "cp data.csv inputs/x",
                    "rm inputs/train.csv", "mv context.data x", "rm -r context.data",
                    "cp data.csv context.data/manifest.json", "gzip context.data/manifest.json",
                    "mv data.csv context.data/", "rm -rf *"):
        assert sh(ws, command)[2] != 0, command
    assert (outside / "train.csv").read_text() == "x,y\n1,2\n"
    assert ws.read_text("context.data/manifest.json") == "{}"
    assert ws.list() == [".hidden", "context.data/", "inputs/"]  # the rest went with rm -rf *
    assert "locked" in sh(ws, "rm -r context.data")[1]
    assert "read-only mount" in sh(ws, "mkdir inputs/x")[1]


def test_output_is_bounded(ws: Workspace) -> None:
    ws.write_text("big.txt", "line\n" * 10_000)
    result = WorkspaceShell(ws, output_limit_bytes=256).run("cat big.txt")
    assert result.stdout_truncated
    assert result.stdout.endswith("bytes omitted]")
    assert len(result.stdout) < 320


def test_output_limit_is_validated(ws: Workspace) -> None:
    with pytest.raises(ConfigurationError, match=r"\[256, 16777216\]"):
        WorkspaceShell(ws, output_limit_bytes=10)
