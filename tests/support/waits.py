"""How long a test waits for something it started to be ready, on a loaded machine.

The suite runs in two processes (``-n 2``) on a 2-core machine, often beside other
work, so a Python process the test starts (a worker, ``srh``, a sandboxed program, a
tool pool) may take many times its unloaded start-up to import what it needs. A wait
that polls and returns as soon as its condition holds costs a passing test nothing
when its limit is long: its limit is only against a hang, and it is this one number.

Bounds that *are* the behaviour under test (a worker ends within ten seconds of
SIGTERM, a grep is cut at its bound) are not waits of this kind and keep their own
numbers.
"""

from __future__ import annotations

#: Seconds a wait may last when it includes starting a Python process (a Celery worker
#: to log "ready.", a run's first step, a sandboxed program reaching its first line).
#: Unloaded, such a start takes 1-5 s; at a load of 15-20 it took over 30 s.
START_SECONDS = 120.0
