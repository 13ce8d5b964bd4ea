"""Settings files: every key in its place, or an error naming the key, its table and its place.

A file holds one ``[search]`` table (its sub-tables such as ``[search.prices]``
included) or settings at the top level; anything else used to be ignored.
The TOML files the documentation shows still load.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.api.endpoints import EndpointRegistry
from srh_core.errors import ConfigurationError
from srh_core.sweep import load_sweep

ROOT = Path(__file__).parents[3]
DOCUMENTS = ("README.md", "deploy/README.md", "docs/architecture.md")


def _documented_toml() -> list[pytest.param]:
    blocks = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text(encoding="utf-8")
        for number, block in enumerate(re.findall(r"```toml\n(.*?)```", text, re.S)):
            blocks.append(pytest.param(textwrap.dedent(block), id=f"{document}-{number}"))
    return blocks


@pytest.mark.parametrize("text", _documented_toml())
def test_documented_toml_files_load(text: str, tmp_path: Path) -> None:
    path = tmp_path / "file.toml"
    path.write_text(text, encoding="utf-8")
    if "[sweep]" in text:
        assert load_sweep(path).name
    elif "[endpoints." in text:
        assert EndpointRegistry.from_file(path).names()
    else:
        assert SearchSettings.from_toml(path) is not None


VALID = {
    "search_table": ("[search]\nseed = 3\n[search.prices]\nm = { input = 1.0, output = 2.0 }\n",
                     {"seed": 3}),
    "flat": ('seed = 3\ntool_parser = "json"\n[prices]\nm = { input = 1.0, output = 2.0 }\n',
             {"seed": 3, "tool_parser": "json"}),
    "empty": ("", {"seed": 0}),
}


@pytest.mark.parametrize(("text", "expected"), VALID.values(), ids=VALID.keys())
def test_valid_layouts_load(text: str, expected: dict, tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text, encoding="utf-8")
    settings = SearchSettings.from_toml(path)
    assert {name: getattr(settings, name) for name in expected} == expected


INVALID = {
    "top_level_setting": ("max_refinement_depth = 2\n[search]\nseed = 1\n",
                          "the setting 'max_refinement_depth' is at the top level, outside the "
                          "[search] table, where settings belong; move it below the [search] "
                          "line.", "max_refinement_depth"),
    "top_level_unknown_key": ("colour = 2\n[search]\nseed = 1\n",
                              "unknown key 'colour' at the top level, outside the [search] "
                              "table; a file with a [search] table holds nothing else.",
                              "colour"),
    "key_in_unknown_table": ("[search]\nseed = 1\n[runtime]\nbranch_threads = 2\n",
                             "unknown table [runtime] (holding 'branch_threads'); settings "
                             "belong in the [search] table.", "runtime"),
    "misspelt_table": ("[serch]\nmax_refinement_depth = 2\n",
                       "unknown table [serch] (holding 'max_refinement_depth'); settings "
                       "belong in the [search] table. Did you mean 'search'?", "serch"),
    "setting_table_outside_search": ("[search]\nseed = 1\n[prices]\nm = { input = 1.0 }\n",
                                     "the [prices] table is outside the [search] table; "
                                     "settings belong in [search]: write it as "
                                     "[search.prices].", "prices"),
    "sweep_file_as_settings": ('[sweep]\nname = "s"\n[settings]\nseed = 1\n',
                               "unknown table [sweep] (holding 'name'); settings belong in the "
                               "[search] table. [sweep] is a table of sweep files: run one "
                               "with `srh sweep FILE`.", "sweep"),
    "unknown_setting_in_search": ("[search]\nsed = 1\n",
                                  "[search]: Unknown setting 'sed'. Did you mean 'seed'?",
                                  "sed"),
}


@pytest.mark.parametrize(("text", "message", "setting"), INVALID.values(), ids=INVALID.keys())
def test_misplaced_and_unknown_keys_are_errors(text: str, message: str, setting: str,
                                               tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as info:
        SearchSettings.from_toml(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value)
    assert info.value.setting == setting


def test_an_endpoints_file_names_the_key_it_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.toml"
    path.write_text('[endpoint.lab]\nprovider = "openai"\nbase_url = "http://x"\n',
                    encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"must hold only \[endpoints.<name>\] tables. "
                                                 r"Got the top-level key 'endpoint'. Did you "
                                                 r"mean 'endpoints'\?"):
        EndpointRegistry.from_file(path)
