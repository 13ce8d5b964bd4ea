"""The ``offline`` provider: a deterministic, rule-based proposer.

It implements the same adapter interface as the model providers and emits
real tool calls in the configured parser's format, so the whole harness
runs with no network: the default for demos, tests and air-gapped
clusters. It is honest about what it is: every response says it comes from
the offline policy, it reads only the conversation (never the data or a
ground truth), and its K samples of a step differ by seeded choices.
"""

from __future__ import annotations

from srh_core.api.offline.api import OfflineAPI

__all__ = ["OfflineAPI"]
