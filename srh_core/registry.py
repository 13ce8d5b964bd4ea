"""A name -> class registry, the one mechanism behind tools, parsers and model adapters.

Each extensible family (``BaseTool``, ``BaseParser``, ``BaseAPI``) owns one
:class:`Registry`: classes register under a stable name with a decorator,
and a lookup of an unknown name raises the family's error with a
"did you mean" and the list of known names.

A name may have aliases (older or shorter names); a lookup of an alias
returns the class registered under the canonical name, and only canonical
names are listed. A family whose built-in members live in modules nobody
has imported yet gives a ``loader``: it runs once, on the first lookup, so
callers never need to import a catalogue first and importing the family's
base module has no side effect.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from difflib import get_close_matches
from typing import Generic, TypeVar

from srh_core.errors import ConfigurationError

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes of one family by name.

    Args:
        kind: What a name names, for messages ("tool", "tool parser", ...).
        listing: How the message introduces the known names ("Available parsers").
        attribute: Class attribute set to the registered name, if any.
        error: Builds the error for an unknown name (a message in, an exception out).
        loader: Registers the family's built-in members; called once, before the
            first lookup is answered.
    """

    def __init__(self, kind: str, listing: str, *, attribute: str | None = None,
                 error: Callable[[str], Exception] | None = None,
                 loader: Callable[[], None] | None = None) -> None:
        self.kind = kind
        self.listing = listing
        self.attribute = attribute
        self.error = error or ConfigurationError
        self._classes: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._loader = loader
        self._loaded = loader is None
        self._loading = False
        self._lock = threading.RLock()

    def register(self, name: str, *, aliases: Iterable[str] = ()) -> Callable[[T], T]:
        """Class decorator: register the class under ``name`` (and ``aliases``)."""

        def decorate(registered: T) -> T:
            self.add(name, registered, aliases=aliases)
            return registered

        return decorate

    def add(self, name: str, registered: T, *, aliases: Iterable[str] = ()) -> None:
        """Register ``registered`` as ``name``; each alias resolves to ``name``.

        Raises:
            The family's error: an alias is already a canonical name, or the
            alias of another name.
        """
        if self.attribute is not None:
            setattr(registered, self.attribute, name)
        self._classes[name] = registered
        self._aliases.pop(name, None)
        for alias in aliases:
            taken = alias in self._classes or self._aliases.get(alias, name) != name
            if taken:
                owner = alias if alias in self._classes else self._aliases[alias]
                raise self.error(f"Cannot make {alias!r} an alias of {name!r}: it already "
                                 f"names the {self.kind} {owner!r}.")
            self._aliases[alias] = name

    def remove(self, name: str) -> None:
        """Forget the canonical name ``name`` and its aliases (a no-op when absent)."""
        with self._lock:
            self._classes.pop(name, None)
            for alias in [a for a, owner in self._aliases.items() if owner == name]:
                del self._aliases[alias]

    def ensure_loaded(self) -> None:
        """Run the loader once (a no-op after the first call and inside the loader)."""
        if self._loaded:
            return
        with self._lock:  # other threads wait here until the built-ins are in
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                if self._loader is not None:
                    self._loader()
                self._loaded = True
            finally:
                self._loading = False

    def names(self) -> list[str]:
        """Registered canonical names, sorted."""
        self.ensure_loaded()
        return sorted(self._classes)

    def aliases(self) -> dict[str, str]:
        """Every alias and the canonical name it resolves to."""
        self.ensure_loaded()
        return dict(self._aliases)

    def canonical(self, name: str) -> str:
        """``name`` itself, or the canonical name when ``name`` is an alias."""
        self.ensure_loaded()
        return self._aliases.get(name, name)

    def find(self, name: str, *, load: bool = True) -> T | None:
        """The class of ``name`` (or of the name it is an alias of), or None.

        Args:
            name: A canonical name or an alias.
            load: Run the loader first; False looks only at what is registered
                now (registration itself must not wait for the loader).
        """
        if load:
            self.ensure_loaded()
        return self._classes.get(self._aliases.get(name, name))

    def get(self, name: str) -> T:
        """The class registered as ``name``; the family's error with suggestions otherwise."""
        registered = self.find(name)
        if registered is None:
            raise self.error(f"Unknown {self.kind} {name!r}.{self._suggestion(name)} "
                             f"{self.listing}: {', '.join(self.names())}.")
        return registered

    def _suggestion(self, name: str) -> str:
        """A "did you mean" naming the canonical name, whether a name or an alias is close."""
        matches = get_close_matches(name, [*self._classes, *self._aliases], n=1, cutoff=0.6)
        return f" Did you mean {self.canonical(matches[0])!r}?" if matches else ""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None
