"""The reference's tool names are canonical; the short names stay as aliases."""

from __future__ import annotations

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool

RENAMED = {"evaluate": "evaluate_formula", "sindy": "call_sindy", "eic": "evaluate_eic"}


@pytest.mark.parametrize(("alias", "canonical"), RENAMED.items(), ids=list(RENAMED))
def test_alias_finds_the_tool_whose_name_is_canonical(alias, canonical):
    tool_class = BaseTool.get_class(alias)
    assert tool_class is BaseTool.get_class(canonical)
    assert tool_class.metadata.name == canonical == BaseTool.canonical_name(alias)
    assert canonical in BaseTool.registered_names() and alias not in BaseTool.registered_names()
    assert [c.metadata.name for c in BaseTool.load_tool_classes([alias])] == [canonical]


def test_a_tool_built_by_its_alias_reports_the_canonical_name():
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 2, 50)
    context = AgentContext(data={"x": x, "y": 2 * x}, target="y")
    result = BaseTool.create("evaluate", context)(f="2*x")
    assert result.ok and result.meta_data["tool"] == "evaluate_formula"


def test_alias_in_settings_enables_the_canonical_tool_once():
    agent = SRAgent(tools=["evaluate", "evaluate_formula", "sindy", "eic"])
    assert agent.enabled_tool_names() == ["evaluate_formula", "call_sindy", "evaluate_eic"]


def test_default_tools_use_the_reference_names():
    names = SRAgent().enabled_tool_names()
    assert {"evaluate_formula", "call_sindy", "evaluate_eic"} <= set(names)
    assert not {"evaluate", "sindy", "eic"} & set(names)
