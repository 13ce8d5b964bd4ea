"""Errors of the web workbench."""

from __future__ import annotations

from srh_core.errors import SRHarnessError


class WebError(SRHarnessError):
    """Base class of srh_web's errors."""


class WebConfigurationError(WebError, ValueError):
    """``srh web`` was asked for an unsafe or impossible setup (e.g. a public host, no token)."""


class RunNotFoundError(WebError, LookupError):
    """No run (or sweep) has the requested id."""

    def __init__(self, key: str, *, kind: str = "run") -> None:
        where = "the run directories or Redis" if kind == "run" else "the run directories"
        super().__init__(f"No {kind} {key!r} in {where}.")
        self.key = key
        self.kind = kind


class ClusterUnavailableError(WebError):
    """Redis (the cluster's store and broker) did not answer."""
