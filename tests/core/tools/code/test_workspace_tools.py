"""workspace_code_executor and workspace_shell: confined to the context's workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from srh_core.context import AgentContext
from srh_core.tools.code import WorkspaceCodeExecutorTool
from srh_core.tools.workspace_shell import WorkspaceShellTool
from srh_core.workspace import Workspace
from tests.core.tools.code.helpers import call, make_context


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "train.csv").write_text("x,y\n1,2\n")
    (tmp_path / "secret.txt").write_text("top secret")
    return folder


@pytest.fixture
def workspace(tmp_path: Path, outside: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws", read_only_mounts={"inputs": outside})
    ws.write_text("notes.txt", "alpha\nbeta\ngamma\n")
    ws.write_text("context.data/manifest.json", "{}", make_parents=True)
    ws.lock("context.data")
    return ws


@pytest.fixture
def context(workspace: Workspace) -> AgentContext:
    base = make_context()
    return AgentContext(data=dict(base.data), target="y", args=base.args, workspace=workspace)


def execute(context: AgentContext, program: str, **params: Any) -> Any:
    return call("workspace_code_executor", context, program=program, timeout_seconds=10,
                **params)


def test_program_reads_and_writes_inside_the_workspace(context: AgentContext,
                                                       workspace: Workspace) -> None:
    program = ("import os, sys, json\n"
               "rows = len(json.load(sys.stdin)['y'])\n"
               "open('out/summary.txt', 'w').write(open('notes.txt').read().upper())\n"
               "print(rows, open('inputs/train.csv').read().splitlines()[1], os.getcwd())")
    workspace.mkdir("out")
    result = execute(context, program)
    assert result.ok and result.result["success"], result.result_str
    rows, mounted, cwd = result.result["stdout"].split()
    assert (rows, mounted, Path(cwd)) == ("30", "1,2", workspace.root)
    assert workspace.read_text("out/summary.txt") == "ALPHA\nBETA\nGAMMA\n"


ESCAPES = {
    "parent_dir": "open('../secret.txt').read()",
    "absolute_read": "open('{root}/../secret.txt').read()",
    "write_outside": "open('../escaped.txt', 'w').write('x')",
    "write_mount": "open('inputs/train.csv', 'a').write('x')",
    "write_locked": "open('context.data/manifest.json', 'w').write('x')",
    "remove_locked": "import os\nos.remove('context.data/manifest.json')",
    "symlink_out": "import os\nos.symlink('/etc', 'etc-link')",
}


@pytest.mark.parametrize("name", ESCAPES, ids=ESCAPES.keys())
def test_program_is_confined(context: AgentContext, workspace: Workspace, tmp_path: Path,
                             name: str) -> None:
    result = execute(context, ESCAPES[name].format(root=workspace.root))
    assert result.ok and not result.result["success"]
    assert "not allowed in the sandbox" in result.result["stderr"]
    assert "top secret" not in result.result["stdout"] + result.result["stderr"]
    assert not (tmp_path / "escaped.txt").exists()
    assert (tmp_path / "outside" / "train.csv").read_text() == "x,y\n1,2\n"
    assert workspace.read_text("context.data/manifest.json") == "{}"


def test_plain_directory_workspace_is_accepted(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    base = make_context()
    context = AgentContext(data=dict(base.data), target="y", workspace=str(folder))
    result = execute(context, "open('made.txt', 'w').write('ok')")
    assert result.result["success"] and (folder / "made.txt").read_text() == "ok"


def test_without_a_workspace_the_tools_are_unavailable() -> None:
    context = make_context()
    for tool_class in (WorkspaceCodeExecutorTool, WorkspaceShellTool):
        assert tool_class.availability(context) == "the context has no workspace"
        assert tool_class.availability() is None
    result = execute(context, "print(1)")
    assert not result.ok and "needs a workspace" in result.result_str
    shell = call("workspace_shell", context, command="ls")
    assert not shell.ok and "needs a workspace" in shell.result_str


def shell(context: AgentContext, command: str) -> Any:
    return call("workspace_shell", context, command=command)


def test_shell_lists_reads_and_pipes(context: AgentContext) -> None:
    listing = shell(context, "ls")
    assert listing.ok and listing.result["exit_code"] == 0
    assert listing.result["stdout"].split() == ["context.data/", "inputs/", "notes.txt"]
    piped = shell(context, "cat notes.txt | grep -v beta | wc -l")
    assert piped.result["stdout"].strip() == "2"
    assert piped.result_str.startswith("$ cat notes.txt | grep -v beta | wc -l  (exit code 0)")
    assert shell(context, "head -1 inputs/train.csv").result["stdout"] == "x,y\n"


HOSTILE_COMMANDS = {
    "parent_dir": ("cat ../secret.txt", 1),
    "absolute": ("cat /etc/passwd", 1),
    "chained": ("ls; cat ../secret.txt", 2),
    "substitution": ("cat $(echo ../secret.txt)", 2),
    "redirect": ("cat notes.txt > ../copy.txt", 2),
    "real_shell": ("sh -c 'cat /etc/passwd'", 127),
    "remove_mount_file": ("rm inputs/train.csv", 1),
    "remove_locked": ("rm -r context.data", 1),
}


@pytest.mark.parametrize(("command", "exit_code"), HOSTILE_COMMANDS.values(),
                         ids=HOSTILE_COMMANDS.keys())
def test_shell_refusals_are_reported_as_failed_commands(context: AgentContext, tmp_path: Path,
                                                       command: str, exit_code: int) -> None:
    result = shell(context, command)
    assert result.ok
    assert result.result["exit_code"] == exit_code and not result.result["success"]
    assert "top secret" not in result.result["stdout"] and "root:" not in result.result_str
    assert (tmp_path / "outside" / "train.csv").exists()
    assert (tmp_path / "ws" / "context.data" / "manifest.json").exists()
    assert not (tmp_path / "copy.txt").exists()


@pytest.mark.parametrize(("command", "needle"), [
    ("", "non-empty"), ("   ", "non-empty"), ("ls " + "a" * 5000, "at most 4000")],
    ids=["empty", "blank", "too_long"])
def test_shell_rejects_bad_command_arguments(context: AgentContext, command: str,
                                             needle: str) -> None:
    result = shell(context, command)
    assert not result.ok and needle in result.result_str


def test_shell_suggests_a_close_command(context: AgentContext) -> None:
    result = shell(context, "grpe alpha notes.txt")
    assert result.result["exit_code"] == 127 and "Did you mean 'grep'?" in result.result_str
