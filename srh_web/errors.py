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


class PanelNotFoundError(WebError, LookupError):
    """No authoring panel of that kind and id (or a malformed id)."""


class PanelStateError(WebError):
    """The panel cannot do that now: a turn is in flight, or nothing valid to commit.

    Attributes:
        details: JSON the page shows besides the message (e.g. the validation report).
    """

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.details = details or {}
