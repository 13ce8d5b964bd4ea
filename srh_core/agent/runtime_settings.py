"""Settings that may change while an agent runs: the one check of which and how.

Both the authoring agents'
:meth:`~srh_core.agent.conversation.ConversationAgent.queue_runtime_settings` and
:class:`~srh_core.interactive.SRAgentInteractive`'s queued settings (a control
command of either runtime) are applied at a safe boundary through
:func:`changed_settings`: the names are checked against what that agent may
change, the values by :class:`~srh_core.agent.settings.SearchSettings` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError


def changed_settings(settings: SearchSettings, changes: Mapping[str, Any],
                     allowed: frozenset[str], *, during: str,
                     own: frozenset[str] = frozenset()) -> SearchSettings:
    """``settings`` with ``changes`` applied, each name and value checked.

    Args:
        settings: The settings in force.
        changes: Setting names to new values.
        allowed: The names that may change (``own`` ones included).
        during: What is running, for the message ("a conversation", "a search").
        own: Allowed names that are the caller's, not search settings (left out of
            the returned settings; the caller checks and applies them).

    Raises:
        ConfigurationError: No change, a name that may not change now, or a value
            the settings refuse (the message names the setting).
    """
    if not isinstance(changes, Mapping) or not changes:
        raise ConfigurationError(f"Runtime settings must be a non-empty mapping of names to "
                                 f"values. Got {changes!r:.120} instead.", setting="settings")
    unknown = sorted(str(name) for name in set(changes) - allowed)
    if unknown:
        raise ConfigurationError(f"{unknown[0]!r} cannot change during {during}; these can: "
                                 f"{', '.join(sorted(allowed))}.", setting=unknown[0])
    return settings.replace(**{k: v for k, v in changes.items() if k not in own})


def previous_values(settings: SearchSettings, changes: Mapping[str, Any],
                    own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values in force before ``changes`` (for a ``settings_applied`` event)."""
    own = own or {}
    return {name: own[name] if name in own else getattr(settings, name, None)
            for name in changes}
