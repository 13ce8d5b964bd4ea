"""The rules of model access alone: which endpoint and key a run may use, endpoint files.

The same rules with real workers and recording listeners: tests/workers/test_closed_cluster.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from srh_core.api.endpoints import EndpointAccessError, EndpointRegistry, ModelAccess
from srh_core.errors import ConfigurationError

WORKER_KEY = "sk-worker-own-secret"
RUN_KEY = "sk-brought-by-the-run"


def _endpoints_file(directory: Path, base_url: str) -> Path:
    path = directory / "endpoints.toml"
    path.write_text(f'[endpoints.lab]\nprovider = "openai"\nbase_url = "{base_url}"\n'
                    f'api_key_env = "LAB_KEY"\nmodel = "lab-model"\n', encoding="utf-8")
    return path


# ------------------------------------------------------------------- the rules alone
def _run(**values: object) -> SimpleNamespace:
    fields = {"llm_provider": "openai", "strong_llm_model": None, "strong_llm_provider": None,
              "base_url": None, "endpoint": None}
    return SimpleNamespace(**{**fields, **values})


REGISTRY = EndpointRegistry.from_public([
    {"name": "lab", "provider": "openai", "base_url": "https://lab.example/v1"}])


@pytest.mark.parametrize(("run", "access", "expected"), [
    (_run(base_url="http://evil.example/v1"), ModelAccess(REGISTRY), "not one of the operator"),
    (_run(base_url="http://evil.example/v1", strong_llm_model="big"), ModelAccess(REGISTRY),
     "not one of the operator"),
    (_run(endpoint="labb"), ModelAccess(REGISTRY), "Did you mean 'lab'?"),
    (_run(endpoint="lab", base_url="http://evil.example/v1"), ModelAccess(REGISTRY),
     "give one of them"),
    (_run(base_url="https://lab.example/v1", llm_provider="deepseek"), ModelAccess(REGISTRY),
     "not one of the operator"),
], ids=["unlisted-url", "unlisted-url-strong", "unknown-name", "name-and-url", "other-provider"])
def test_refused_choices(run: SimpleNamespace, access: ModelAccess, expected: str) -> None:
    with pytest.raises(EndpointAccessError, match=expected):
        access.check_run(run)


def test_allowed_choices_resolve_to_the_right_key() -> None:
    environ = {"OPENAI_API_KEY": WORKER_KEY}
    registry = EndpointRegistry({"lab": REGISTRY.endpoints["lab"]})
    keyed = EndpointRegistry.from_public(registry.public())
    assert ModelAccess(keyed).api_options(_run(base_url="HTTPS://LAB.example/v1/"), "openai",
                                          environ) == {"base_url": "https://lab.example/v1"}
    assert ModelAccess(keyed, run_key=RUN_KEY).api_options(
        _run(base_url="http://mine.example/v1"), "openai", environ) == {
        "base_url": "http://mine.example/v1", "api_key": RUN_KEY, "isolated": True}
    assert ModelAccess(operator=True).api_options(
        _run(base_url="http://mine.example/v1"), "openai", environ) == {
        "base_url": "http://mine.example/v1"}
    assert ModelAccess().api_options(_run(), "openai", environ) == {}


def test_an_endpoint_whose_key_is_missing_on_the_worker_is_an_error(tmp_path: Path) -> None:
    registry = EndpointRegistry.from_file(_endpoints_file(tmp_path, "https://lab.example/v1"))
    with pytest.raises(ConfigurationError, match="LAB_KEY, which is not set"):
        ModelAccess(registry).api_options(_run(endpoint="lab"), "openai", {})


@pytest.mark.parametrize(("text", "expected"), [
    ('[endpoints.lab]\nprovider = "openai"\n', "string fields provider and base_url"),
    ('[endpoints.lab]\nprovider = "openai"\nbase_url = "ftp://x"\n', "base_url must be an http"),
    ('[endpoints."../x"]\nprovider = "openai"\nbase_url = "http://x"\n', "must match"),
    ('[endpoints.lab]\nprovider = "openai"\nbase_url = "http://x"\napi_key = "k"\n',
     "string fields provider"),
    ("endpoints = 3\n", "must hold only"),
    ("[endpoints\n", "Cannot read the endpoints file"),
], ids=["no-url", "not-http", "bad-name", "inline-key", "not-a-table", "bad-toml"])
def test_bad_endpoint_files_are_refused(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "endpoints.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=expected):
        EndpointRegistry.from_file(path)
