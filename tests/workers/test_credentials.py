"""Workers never send their own keys to an address a submitter chose.

Two local OpenAI-compatible listeners record every Authorization header: the
"submitter's host" (any URL a run may name) and the "operator's endpoint"
(listed in the workers' SRH_ENDPOINTS file). Real workers on a private
redis-server run every case; the unit tests below cover the rules alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_core.api.endpoints import EndpointAccessError, EndpointRegistry, ModelAccess
from srh_core.errors import ConfigurationError
from srh_workers.endpoints import published_endpoints
from tests.support.openai_payloads import evaluating_reply
from tests.support.openai_server import FakeOpenAIServer
from tests.workers.cluster import Cluster

WORKER_KEY = "sk-worker-own-secret"
OPERATOR_KEY = "sk-operator-endpoint"
RUN_KEY = "sk-brought-by-the-run"
FORMULAS = ("x1*x2", "x1 + x2")


@pytest.fixture
def listeners() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as host, FakeOpenAIServer() as operator:
        for server in (host, operator):
            server.respond_with(evaluating_reply(FORMULAS))
        yield host, operator


def _endpoints_file(directory: Path, base_url: str) -> Path:
    path = directory / "endpoints.toml"
    path.write_text(f'[endpoints.lab]\nprovider = "openai"\nbase_url = "{base_url}"\n'
                    f'api_key_env = "LAB_KEY"\nmodel = "lab-model"\n', encoding="utf-8")
    return path


def _settings(run_id: str, **values: object) -> SearchSettings:
    return SearchSettings.build(run_id=run_id, llm_provider="openai", llm_model="m",
                                tool_parser="openai", tools=["evaluate_formula"],
                                max_refinement_depth=1, early_stop=False, **values)


def _data() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    x1, x2 = np.random.default_rng(0).uniform(1, 5, (2, 60))
    return {"x1": x1, "x2": x2}, {"y": x1 * x2}


def _keys(server: FakeOpenAIServer) -> set[str]:
    return {request.headers.get("authorization", "") for request in server.requests}


@pytest.mark.integration
def test_workers_send_only_the_operators_or_the_runs_key(
        cluster: Cluster, listeners: tuple[FakeOpenAIServer, FakeOpenAIServer],
        monkeypatch: pytest.MonkeyPatch) -> None:
    host, operator = listeners
    env = {"OPENAI_API_KEY": WORKER_KEY, "LAB_KEY": OPERATOR_KEY,
           "SRH_ENDPOINTS": str(_endpoints_file(cluster.directory, operator.base_url))}
    workers = [cluster.start("branches", concurrency=2, wait=False, **env),
               cluster.start("tools", wait=False, **env)]
    for worker in workers:
        Cluster.ready(worker)
    assert published_endpoints(cluster.client).names() == ["lab"]
    X, y = _data()

    # an unlisted URL without a key of its own is refused at submit, before anything is sent
    with pytest.raises(EndpointAccessError, match="not one of the operator's endpoints"):
        cluster.submit(_settings("steal", base_url=host.base_url), X, y)
    assert not cluster.client.exists("srh:{steal}:spec")

    # ... and by the workers, when a run gets past the submitter's check
    import srh_workers.submit as submit

    monkeypatch.setattr(submit, "submit_access", lambda client, key: ModelAccess(operator=True))
    forged = cluster.submit(_settings("forged", base_url=host.base_url), X, y)
    monkeypatch.undo()
    result = cluster.result(forged, timeout=60)
    assert result.status == "failed" and "not one of the operator's endpoints" in (
        result.stop_reason or "")

    # the run's own key is the only key sent to the run's URL
    from srh_workers.flow.tasks import sender
    from srh_workers.submit import submit_run

    own = submit_run(cluster.client, sender(cluster.app), _settings("own", base_url=host.base_url),
                     X, y, "find y", api_key=RUN_KEY).run_id
    assert cluster.result(own).status == "completed"

    # an endpoint by name, and its URL given as a base URL, use the operator's key
    by_name = cluster.submit(_settings("by-name", endpoint="lab"), X, y)
    by_url = cluster.submit(_settings("by-url", base_url=operator.base_url + "/"), X, y)
    assert cluster.result(by_name).status == cluster.result(by_url).status == "completed"

    assert _keys(host) == {f"Bearer {RUN_KEY}"}
    assert len(host.requests) >= 1
    assert _keys(operator) == {f"Bearer {OPERATOR_KEY}"}
    assert {r.body["model"] for r in operator.requests} == {"m"}
    for request in [*host.requests, *operator.requests]:
        assert WORKER_KEY not in str(request.headers)


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
