"""A name -> class registry, the one mechanism behind tools, parsers and model adapters.

Each extensible family (``BaseTool``, ``BaseParser``, ``BaseAPI``) owns one
:class:`Registry`: classes register under a stable name with a decorator,
and a lookup of an unknown name raises the family's error with a
"did you mean" and the list of known names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from srh_core.errors import ConfigurationError, did_you_mean

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes of one family by name.

    Args:
        kind: What a name names, for messages ("tool", "tool parser", ...).
        listing: How the message introduces the known names ("Available parsers").
        attribute: Class attribute set to the registered name, if any.
        error: Builds the error for an unknown name (a message in, an exception out).
    """

    def __init__(self, kind: str, listing: str, *, attribute: str | None = None,
                 error: Callable[[str], Exception] | None = None) -> None:
        self.kind = kind
        self.listing = listing
        self.attribute = attribute
        self.error = error or ConfigurationError
        self._classes: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator: register the class under ``name``."""

        def decorate(registered: T) -> T:
            self.add(name, registered)
            return registered

        return decorate

    def add(self, name: str, registered: T) -> None:
        if self.attribute is not None:
            setattr(registered, self.attribute, name)
        self._classes[name] = registered

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._classes)

    def find(self, name: str) -> T | None:
        return self._classes.get(name)

    def get(self, name: str) -> T:
        """The class registered as ``name``; the family's error with suggestions otherwise."""
        registered = self._classes.get(name)
        if registered is None:
            raise self.error(f"Unknown {self.kind} {name!r}.{did_you_mean(name, self._classes)} "
                             f"{self.listing}: {', '.join(self.names())}.")
        return registered

    def __contains__(self, name: object) -> bool:
        return name in self._classes
