"""The reference's tool names are canonical; the short names stay as aliases."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from tests.support.waits import START_SECONDS

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


FRESH_INTERPRETER = """
import sys
import srh_core
from srh_core import BaseTool
from srh_core.tools import ToolMetadata, BaseTool as PackageBaseTool
assert PackageBaseTool is BaseTool and ToolMetadata is srh_core.ToolMetadata
assert not [m for m in sys.modules if m.startswith("srh_core.tools.") and m != "srh_core.tools.base"
            and m != "srh_core.tools.schema"], sorted(sys.modules)
classes = BaseTool.load_tool_classes(["power_law_fit", "sindy"])
print(",".join(c.metadata.name for c in classes), "srh_core.tools.catalogue" in sys.modules)
"""


def test_a_fresh_interpreter_finds_built_in_tools_without_importing_them_first():
    completed = subprocess.run([sys.executable, "-c", FRESH_INTERPRETER], capture_output=True,
                               text=True, timeout=START_SECONDS, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["power_law_fit,call_sindy", "True"]


def test_the_package_exports_every_built_in_tool_class():
    import srh_core.tools as tools

    registered = {BaseTool.get_class(name) for name in BaseTool.registered_names()
                  if BaseTool.get_class(name).__module__.startswith("srh_core.tools.")}
    exported = {getattr(tools, name) for name in tools.__all__}
    assert registered <= exported
    assert tools.ReadSkill is tools.ReadSkillTool and tools.EvaluateTool.metadata.name == (
        "evaluate_formula")
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = tools.Nope


def test_process_pool_workers_build_tools_by_name_in_a_fresh_interpreter():
    from srh_core.embedded.executor import ProcessToolExecutor
    from srh_core.types import ToolCall

    x = np.linspace(1, 2, 60)
    context = AgentContext(data={"x": x, "y": 3 * x}, target="y")
    tools = {"evaluate_formula": BaseTool.create("evaluate", context)}
    executor = ProcessToolExecutor(tools, 1, AgentContext.from_payload, context.to_payload())
    try:
        # the worker process starts inside the call's timeout
        [result] = executor.run([ToolCall("evaluate_formula", {"f": "3*x"})],
                                timeout=START_SECONDS)
    finally:
        executor.close()
    assert result.ok, result.result_str
    assert result.meta_data["tool"] == "evaluate_formula"


def test_banned_tools_are_never_enabled_and_unknown_bans_are_errors():
    from srh_core.errors import ConfigurationError

    agent = SRAgent(tools=["evaluate_formula", "call_sindy", "polynomial_fit"],
                    ban_tools=["sindy"])
    assert agent.enabled_tool_names() == ["evaluate_formula", "polynomial_fit"]
    assert "evaluate_eic" not in SRAgent(ban_tools=["evaluate_eic"]).enabled_tool_names()
    with pytest.raises(ConfigurationError, match="Did you mean 'call_sindy'") as caught:
        SRAgent(ban_tools=["call_sindi"]).enabled_tool_names()
    assert caught.value.setting == "ban_tools"


def test_the_workspace_setting_reaches_the_context(tmp_path):
    from srh_core.agent.settings import SearchSettings

    settings = SearchSettings.build(workspace=str(tmp_path))
    assert AgentContext(args=settings).workspace_path == tmp_path
    assert AgentContext(args={"workspace": str(tmp_path)}).workspace_path == tmp_path
    assert AgentContext(args=SearchSettings.build()).workspace is None
