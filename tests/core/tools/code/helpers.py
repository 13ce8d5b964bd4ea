"""Data, escape programs and call helpers shared by the code-tool tests."""

from __future__ import annotations

from typing import Any

import numpy as np

import srh_core.tools.code  # noqa: F401  (registers the tools)
import srh_core.tools.code_model  # noqa: F401
import srh_core.tools.workspace_shell  # noqa: F401
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCallResult
from tests.support.waits import START_SECONDS

#: The time limit of a run that must reach it (an endless loop): short, so the test is.
SHORT_TIMEOUT = 1.0

# Escape attempts, each as the body of a function (fit) or of a program.
ESCAPES = {
    "fork": "import os\nos.fork()",
    "subprocess": "import subprocess\nsubprocess.run(['id'])",
    "socket": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)",
    "read_passwd": "open('/etc/passwd').read()",
    "write_outside": "open('/tmp/srh-code-tool-escape.txt', 'w').write('x')",
    "infinite_loop": "while True:\n    pass",
    "memory_bomb": "blob = bytearray(8 * 1024 ** 3)",
    "output_flood": "while True:\n    print('x' * 4096)",
}


def escape_timeout(name: str) -> float:
    """The time limit of the run of escape ``name``.

    Only the endless loop is stopped by the time limit, so only it gets a short one.
    Every other escape is stopped by what it does (a refused call, the memory or the
    output limit) and must get there first: the sandbox's wall clock counts the
    interpreter's start (and numpy's import, for ``evaluate_code``), which alone took
    over 1 s on a loaded machine, so a 1 s limit turned a refusal into a "timeout".
    Such a run ends as soon as it is stopped, so the long limit costs nothing.
    """
    return SHORT_TIMEOUT if name == "infinite_loop" else START_SECONDS


def make_context(n: int = 40, **args: Any) -> AgentContext:
    rng = np.random.default_rng(5)
    x1 = rng.uniform(1.0, 3.0, n)
    x2 = rng.normal(size=n)
    return AgentContext(data={"x1": x1, "x2": x2, "y": 2.5 * x1 - x2 + 1.0}, target="y",
                        args={"validation_fraction": 0.25, **args})


def call(name: str, context: Any, **params: Any) -> ToolCallResult:
    return BaseTool.create(name, context)(**params)


def indent(body: str) -> str:
    return "\n".join("    " + line for line in body.splitlines())
