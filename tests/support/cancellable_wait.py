"""The ``cancellable_wait`` tool: a long tool call that a force-pause can cut.

Registered on import; the embedded tests import it, and the cluster tests' workers
load it through tests/workers/cluster_plugins.py.
"""

from __future__ import annotations

import time
from typing import Any

from srh_core.tools.base import BaseTool

WAIT_SECONDS = 5.0


@BaseTool.register("cancellable_wait")
class CancellableWait(BaseTool):
    def execute(self, seconds: float = WAIT_SECONDS) -> dict[str, Any]:
        """Wait, checking for cancellation between short sleeps (a long fit does the same).

        Args:
            seconds: How long to wait.
        """
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.check_cancelled()
            time.sleep(0.02)
        return {"waited": seconds}
