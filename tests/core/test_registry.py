"""The Registry behind tools, parsers and adapters: aliases and the one-time loader."""

from __future__ import annotations

import threading
import time

import pytest

from srh_core.errors import ConfigurationError
from srh_core.registry import Registry


class Alpha:
    pass


class Beta:
    pass


def test_an_alias_resolves_to_the_canonical_class_and_is_not_listed():
    registry: Registry[type] = Registry("widget", "Known widgets", attribute="widget_name")
    registry.add("alpha_long", Alpha, aliases=("alpha",))
    assert registry.get("alpha") is Alpha and registry.get("alpha_long") is Alpha
    assert registry.canonical("alpha") == "alpha_long" and registry.canonical("zeta") == "zeta"
    assert registry.names() == ["alpha_long"] and registry.aliases() == {"alpha": "alpha_long"}
    assert "alpha" in registry and "zeta" not in registry and 3 not in registry
    assert Alpha.widget_name == "alpha_long"


def test_an_alias_cannot_take_another_name():
    registry: Registry[type] = Registry("widget", "Known widgets")
    registry.add("alpha", Alpha)
    registry.add("beta_long", Beta, aliases=("beta",))
    with pytest.raises(ConfigurationError, match="already names the widget 'alpha'"):
        registry.add("beta_long", Beta, aliases=("alpha",))
    with pytest.raises(ConfigurationError, match="already names the widget 'beta_long'"):
        registry.add("gamma", Alpha, aliases=("beta",))


def test_unknown_names_near_an_alias_suggest_the_canonical_name():
    registry: Registry[type] = Registry("widget", "Known widgets")
    registry.add("alpha_long", Alpha, aliases=("alpha",))
    with pytest.raises(ConfigurationError, match="Did you mean 'alpha_long'.*widgets: alpha_long"):
        registry.get("alpah")


def test_the_loader_runs_once_on_first_lookup_and_lookups_inside_it_do_not_recurse():
    calls = []
    registry: Registry[type] = Registry("widget", "Known widgets",
                                        loader=lambda: load(registry, calls))
    assert calls == []  # building the registry loads nothing
    assert registry.get("alpha") is Alpha
    assert registry.names() == ["alpha"] and calls == ["load"]


def load(registry: Registry[type], calls: list[str]) -> None:
    calls.append("load")
    assert registry.find("alpha") is None  # a lookup while loading does not re-enter
    registry.add("alpha", Alpha)


def test_a_failed_load_is_retried_by_the_next_lookup():
    attempts = []

    def flaky() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("first import fails")
        registry.add("alpha", Alpha)

    registry: Registry[type] = Registry("widget", "Known widgets", loader=flaky)
    with pytest.raises(ImportError):
        registry.names()
    assert registry.names() == ["alpha"] and len(attempts) == 2


def test_other_threads_wait_for_the_loader_to_finish():
    started = threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        registry.add("alpha", Alpha)

    registry: Registry[type] = Registry("widget", "Known widgets", loader=slow)
    loader_thread = threading.Thread(target=registry.names)
    loader_thread.start()
    assert started.wait(5)
    assert registry.get("alpha") is Alpha  # blocks until the loader is done, then finds it
    loader_thread.join(5)
