"""Bounded pipe readers and the stdin writer of a sandboxed child.

Each pipe is read in its own thread in fixed-size chunks: the first
``limit`` bytes are kept, the rest is drained and only counted, so a child
that floods its output can fill neither the pipe (and block) nor the parent's
memory. Past ``MAX_DISCARDED_OUTPUT_BYTES`` of discarded output the reader
raises its ``flooded`` flag and the supervisor kills the child.
"""

from __future__ import annotations

import os
import threading
from typing import IO

from srh_core.sandbox.limits import MAX_DISCARDED_OUTPUT_BYTES

READ_CHUNK_BYTES = 64 * 1024
JOIN_TIMEOUT_SECONDS = 2.0


def truncation_note(omitted: int) -> str:
    """The note appended to a stream cut at its limit."""
    return f"\n... [output truncated: {omitted} bytes omitted]"


class BoundedReader:
    """Drain one pipe in a daemon thread, keeping at most ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self._fd = pipe.fileno()
        self._pipe = pipe
        self._limit = limit
        self._kept = bytearray()
        self.total_bytes = 0
        self.flooded = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="sandbox-reader", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, READ_CHUNK_BYTES):
                room = self._limit - len(self._kept)
                if room > 0:
                    self._kept += chunk[:room]
                self.total_bytes += len(chunk)
                if self.total_bytes - self._limit > MAX_DISCARDED_OUTPUT_BYTES:
                    self.flooded.set()
        except OSError:
            pass  # the pipe was closed under us by finish()

    def finish(self) -> tuple[str, bool]:
        """Wait for EOF (bounded) and return (decoded text, truncated?)."""
        self._thread.join(JOIN_TIMEOUT_SECONDS)
        self._pipe.close()
        self._thread.join(JOIN_TIMEOUT_SECONDS)
        text = bytes(self._kept).decode("utf-8", errors="replace")
        omitted = self.total_bytes - len(self._kept)
        if omitted > 0:
            return text + truncation_note(omitted), True
        return text, False


class StdinWriter:
    """Feed ``data`` to the child's stdin in a thread, then close it."""

    def __init__(self, pipe: IO[bytes], data: bytes) -> None:
        self._pipe = pipe
        self._data = data
        self._thread = threading.Thread(target=self._write, name="sandbox-stdin", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        try:
            if self._data:
                self._pipe.write(self._data)
        except (BrokenPipeError, OSError, ValueError):
            pass  # the child exited or closed stdin without reading it all
        finally:
            try:
                self._pipe.close()
            except OSError:
                pass

    def finish(self) -> None:
        """Wait (bounded) for the writer; the child is gone by now."""
        self._thread.join(JOIN_TIMEOUT_SECONDS)
