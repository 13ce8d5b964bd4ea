"""Data refused at load: reserved names, too few rows for a search, manifests past their limits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext, load_context_data
from srh_core.context.validation import check_name, check_sample_count
from srh_core.errors import ContextManifestError, DataError


@pytest.mark.parametrize(("name", "phrase"), [
    ("__class__", "formulas cannot use names starting with '__'"),
    ("__import__", "formulas cannot use names starting with '__'"),
    ("lambda", "not usable in a formula"),
    ("x-1", "not usable in a formula"),
    ("exp", "in a formula it is a function of the formula language"),
    ("ln", "an alias of the function 'log'"),
    ("np", "a module prefix"),
    ("param", "a parameter builder"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 12 else None)
def test_reserved_and_invalid_names_are_refused_with_the_reason(name: str, phrase: str) -> None:
    issue = check_name(name)
    assert issue is not None and phrase in issue.message and issue.hint


@pytest.mark.parametrize("name", ["x", "theta_1", "e", "pi", "class_", "_x"])
def test_ordinary_names_pass(name: str) -> None:
    assert check_name(name) is None


@pytest.mark.parametrize(("rows", "fraction", "needed"), [
    (2, 0.2, 4), (3, 0.2, 4), (3, 0.1, 5), (1, 0.0, 3), (2, 0.0, 3),
], ids=["2-rows", "3-rows", "small-fraction", "1-row-no-split", "2-rows-no-split"])
def test_too_few_rows_for_a_search_are_refused(rows: int, fraction: float, needed: int) -> None:
    issue = check_sample_count(rows, fraction)
    assert issue is not None and f"has {rows} row(s)" in issue.message
    assert check_sample_count(needed, fraction) is None
    assert check_sample_count(needed - 1, fraction) is not None


def test_a_search_context_refuses_short_data_other_contexts_do_not() -> None:
    data = {"x": np.array([1.0, 2.0]), "y": np.array([2.0, 4.0])}
    with pytest.raises(DataError, match="too few for a validation split of 0.2"):
        AgentContext(args=SearchSettings.build(), data=data, target="y")
    assert AgentContext(data=data, target="y").n_samples == 2  # a plain context: any length


def _store(tmp_path: Path, manifest: str) -> Path:
    np.save(tmp_path / "y.npy", np.arange(4.0))
    (tmp_path / "manifest.json").write_text(manifest, encoding="utf-8")
    return tmp_path


def test_a_manifest_nested_deep_is_refused_before_parsing(tmp_path: Path) -> None:
    with pytest.raises(ContextManifestError, match="nested 100000 levels deep; at most 16"):
        load_context_data(_store(tmp_path, "[" * 100_000 + "]" * 100_000))


def test_a_huge_axis_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    manifest = json.dumps({"target": "y", "variables": {"y": {"file": "y.npy", "axes": ["s"]}},
                           "axes": {"s": {"size": 10**15}}})
    with pytest.raises(ContextManifestError, match="less than or equal to 100000000"):
        load_context_data(_store(tmp_path, manifest))


def test_an_array_past_the_data_limit_is_refused_with_the_variable_to_raise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRH_MAX_DATA_BYTES", "100")
    manifest = json.dumps({"target": "y", "variables": {"y": {"file": "y.npy"}}})
    with pytest.raises(ContextManifestError, match=r"variables\.y\.file: The array file .*y\.npy "
                                                   r"is larger than 100 bytes.*SRH_MAX_DATA_BYTES"):
        load_context_data(_store(tmp_path, manifest))


def test_an_array_header_declaring_a_huge_shape_is_refused_before_np_load(tmp_path: Path) -> None:
    import io

    from numpy.lib import format as npy

    buffer = io.BytesIO()
    npy.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False,
                                        "shape": (10**12,)})
    manifest = json.dumps({"target": "y", "variables": {"y": {"file": "y.npy"}}})
    store = _store(tmp_path, manifest)
    (store / "y.npy").write_bytes(buffer.getvalue() + np.arange(4.0).tobytes())
    with pytest.raises(ContextManifestError, match="The array file .* holds 7.28 TiB"):
        load_context_data(store)


def test_a_manifest_past_its_limit_is_refused(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.context import manifest_store

    monkeypatch.setattr(manifest_store, "MAX_MANIFEST_BYTES", 10)
    with pytest.raises(ContextManifestError, match="The manifest .*manifest.json is larger than "
                                                   "10 bytes"):
        load_context_data(_store(tmp_path, json.dumps({"target": "y", "variables": {}})))
