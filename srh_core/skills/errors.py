"""Errors of the skill registry (part of the :class:`~srh_core.errors.SRHarnessError` tree)."""

from __future__ import annotations

from srh_core.errors import SRHarnessError


class SkillError(SRHarnessError, ValueError):
    """A skill or skill file cannot be found or read, or a path leaves its folder.

    Attributes:
        name: The skill concerned, when known.
        path: The file path concerned, when known.
    """

    def __init__(self, message: str, *, name: str | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.path = path


class SkillNotFoundError(SkillError):
    """No skill has the requested name (the message suggests close names)."""


class CustomToolError(SkillError):
    """A skill's custom tool (its ``tool.py``) cannot be read, loaded or registered, or a
    call of it failed in the sandbox.

    Attributes:
        tool: The tool's name, when known.
        reason: For a failed call: "timeout", "memory", "output_limit", "killed",
            "exception" (the code raised) or "result" (no JSON result); else None.
    """

    def __init__(self, message: str, *, name: str | None = None, path: str | None = None,
                 tool: str | None = None, reason: str | None = None) -> None:
        super().__init__(message, name=name, path=path)
        self.tool = tool
        self.reason = reason
