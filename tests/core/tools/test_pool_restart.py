"""A batch cut by its timeout restarts the shared tool processes; other batches lose nothing.

Branches run their steps' tool calls on one process pool. A call cut at its
timeout kills the pool (the only way to stop it); calls of another branch
that were running die with it and are run again, and so must calls still
waiting in the pool's queue, which the pool cancels instead: those escaped as
``CancelledError`` and failed the whole run (seen as a time-limited run ending
"failed" under load).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from srh_core.context import AgentContext
from srh_core.embedded.executor import ProcessToolExecutor
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCall
from tests.support import cancellable_wait  # noqa: F401 - registers the tool
from tests.support.waits import START_SECONDS


def test_calls_waiting_when_another_batch_is_cut_are_run_on_the_new_pool():
    x = np.linspace(1, 2, 60)
    context = AgentContext(data={"x": x, "y": 3 * x}, target="y")
    tools = {name: BaseTool.create(name, context)
             for name in ("cancellable_wait", "evaluate_formula")}
    # one worker: while the slow call runs, one more call waits in the pool's queue and
    # the rest are pending futures, which the pool's shutdown cancels
    executor = ProcessToolExecutor(tools, 1, AgentContext.from_payload, context.to_payload())
    executor.start(wait=True)
    cut: list = []
    slow = threading.Thread(target=lambda: cut.extend(executor.run(
        [ToolCall("cancellable_wait", {"seconds": 60})], timeout=2.0)))
    try:
        slow.start()
        time.sleep(0.5)  # the slow call has started on the only worker
        # run on the pool started after the cut: its start is inside their timeout
        results = executor.run([ToolCall("evaluate_formula", {"f": f"{k}*x"})
                                for k in (1, 2, 3, 4)], timeout=START_SECONDS)
        slow.join(30)
    finally:
        executor.close()
    assert cut and cut[0].meta_data.get("error_type") == "TimeoutError", cut
    assert [r.ok for r in results] == [True] * 4, [r.result_str for r in results]
