"""Factory strings, presets, settings resolution, tool descriptions, option validation."""

from __future__ import annotations

import pytest

from srh_core.api import (
    BaseAPI,
    DeepSeekAPI,
    GeminiAPI,
    LMStudioAPI,
    ManualAPI,
    ModelPrice,
    OpenAIAPI,
    OpenRouterAPI,
    SiliconFlowAPI,
    normalize_lmstudio_base_url,
)
from srh_core.errors import ConfigurationError
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply
from tests.support.sample_tools import SAMPLE_TOOLS

ENV_NAMES = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DEEPSEEK_API_KEY",
             "DEEPSEEK_MODEL", "LMSTUDIO_BASE_URL", "LMSTUDIO_ENDPOINT", "GEMINI_API_KEY"]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("spec", "cls", "model"),
    [("openai", OpenAIAPI, "gpt-5-mini"), ("deepseek:deepseek-chat", DeepSeekAPI, "deepseek-chat"),
     ("openrouter:meta-llama/llama-3.1-8b-instruct:free", OpenRouterAPI,
      "meta-llama/llama-3.1-8b-instruct:free"),
     ("siliconflow", SiliconFlowAPI, "Qwen/Qwen3-8B"), ("gemini:", GeminiAPI, "gemini-2.5-pro"),
     ("lmstudio:local-model", LMStudioAPI, "local-model"), ("manual", ManualAPI, "manual")],
)
def test_factory_strings(spec, cls, model):
    api = BaseAPI.create(spec, environment={"DEEPSEEK_API_KEY": "k", "OPENAI_API_KEY": "k",
                                            "OPENROUTER_API_KEY": "k", "GEMINI_API_KEY": "k",
                                            "SILICONFLOW_API_KEY": "k"})
    assert type(api) is cls and api.provider == spec.split(":")[0]
    resolved = api.resolve().model if isinstance(api, OpenAIAPI) else api.model
    assert resolved == model


def test_factory_passes_settings_and_rejects_two_models():
    api = BaseAPI.create("openai", model="gpt-4o-mini", api_key="k", tool_parser_name="json")
    assert api.model == "gpt-4o-mini" and api.parser.name == "json"
    with pytest.raises(ConfigurationError, match="given twice"):
        BaseAPI.create("openai:a", model="b")


def test_unknown_provider_suggests_and_lists():
    with pytest.raises(ConfigurationError) as caught:
        BaseAPI.create("deepsek:deepseek-chat")
    message = str(caught.value)
    assert "Did you mean 'deepseek'?" in message
    listed = message.split("Available providers: ")[1]
    for provider in ("deepseek", "gemini", "lmstudio", "manual", "offline", "openai"):
        assert provider in listed


def test_unknown_parser_is_rejected_at_construction():
    with pytest.raises(ConfigurationError, match="Did you mean 'xml'"):
        OpenAIAPI(tool_parser_name="xmll")


@pytest.mark.parametrize(
    ("cls", "key_env", "url"),
    [(OpenAIAPI, "OPENAI_API_KEY", "https://api.openai.com/v1"),
     (DeepSeekAPI, "DEEPSEEK_API_KEY", "https://api.deepseek.com/v1"),
     (OpenRouterAPI, "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"),
     (SiliconFlowAPI, "SILICONFLOW_API_KEY", "https://api.siliconflow.cn/v1"),
     (GeminiAPI, "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta/openai/")],
)
def test_presets_base_url_and_key_from_session_environment(cls, key_env, url):
    config = cls(environment={key_env: "secret"}).resolve()
    assert (config.base_url, config.api_key) == (url, "secret")
    assert "secret" not in repr(config)


@pytest.mark.parametrize("cls", [OpenAIAPI, DeepSeekAPI, GeminiAPI])
def test_missing_key_names_the_variable_and_provider(cls):
    api = cls()
    env = cls.preset.api_key_envs[0]
    with pytest.raises(ConfigurationError, match=f"{cls.provider} model provider needs the "
                                                 f"setting {env}") as caught:
        api("hello")
    assert caught.value.setting == env


def test_session_environment_wins_over_process_environment(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "from-os")
    monkeypatch.setenv("DEEPSEEK_MODEL", "deepseek-reasoner")
    api = DeepSeekAPI(environment={"DEEPSEEK_API_KEY": "from-session"})
    config = api.resolve()
    assert (config.api_key, config.model) == ("from-session", "deepseek-reasoner")
    assert api.getenv("DEEPSEEK_API_KEY") == "from-session"
    assert api.getenv("NOT_SET_ANYWHERE", "fallback") == "fallback"
    assert DeepSeekAPI(model="explicit", api_key="k").resolve().model == "explicit"


def test_openai_base_url_and_model_settings(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
    config = OpenAIAPI(api_key="k").resolve()
    assert (config.base_url, config.model) == ("http://127.0.0.1:9/v1", "gpt-4o-mini")
    assert config.price == ModelPrice(0.15, 0.60, 0.075, source=config.price.source)


@pytest.mark.parametrize(
    ("url", "normalized"),
    [("http://localhost:1234/api/v1/chat", "http://localhost:1234/v1"),
     ("http://10.0.0.5:1234/api/v0/chat/completions", "http://10.0.0.5:1234/v1"),
     ("http://localhost:1234/v1/chat/completions", "http://localhost:1234/v1"),
     ("http://localhost:1234/v1/", "http://localhost:1234/v1"),
     ("http://localhost:1234", "http://localhost:1234/v1"),
     ("https://gpu.lab/lmstudio/api/v1/chat", "https://gpu.lab/lmstudio/v1")],
)
def test_lmstudio_url_normalisation(url, normalized):
    assert normalize_lmstudio_base_url(url) == normalized


def test_lmstudio_bad_url_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="http://host:1234/v1"):
        normalize_lmstudio_base_url("localhost:1234")


def test_lmstudio_needs_no_key_is_free_and_hits_v1_chat_completions(openai_server):
    native_url = openai_server.base_url.replace("/v1", "/api/v1/chat")
    openai_server.script(Reply.json(chat_completion(content="hi"), path="/v1/chat/completions"))
    api = LMStudioAPI(environment={"LMSTUDIO_BASE_URL": native_url})
    config = api.resolve()
    assert config.base_url == openai_server.base_url and config.api_key == "not-needed"
    result = api("hello")
    assert result.contents == ["hi"] and result.usage["price"] == 0.0
    assert openai_server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_lmstudio_default_url_and_legacy_endpoint_setting():
    assert LMStudioAPI().resolve().base_url == "http://localhost:1234/v1"
    legacy = LMStudioAPI(environment={"LMSTUDIO_ENDPOINT": "http://box:1234/api/v1/chat"})
    assert legacy.resolve().base_url == "http://box:1234/v1"


def test_presets_use_max_tokens_and_openai_max_completion_tokens(openai_server):
    openai_server.script(Reply.json(chat_completion(content="a")),
                         Reply.json(chat_completion(content="b")))
    DeepSeekAPI(base_url=openai_server.base_url, api_key="k")("x", max_tokens=9).result()
    OpenAIAPI(base_url=openai_server.base_url, api_key="k")("x", max_tokens=9).result()
    first, second = openai_server.bodies()
    assert first["max_tokens"] == 9 and first["model"] == "deepseek-chat"
    assert second["max_completion_tokens"] == 9 and "max_tokens" not in second


def test_price_is_known_for_listed_models_and_overridable(openai_server):
    openai_server.script(Reply.json(chat_completion(content="a")),
                         Reply.json(chat_completion(content="b")))
    priced = OpenAIAPI(model="gpt-5-mini", base_url=openai_server.base_url, api_key="k")
    assert priced("x").usage["price"] == pytest.approx((10 * 0.25 + 5 * 2.0) / 1e6)
    unknown = DeepSeekAPI(base_url=openai_server.base_url, api_key="k")
    assert unknown("x").usage["price"] is None


def test_add_tool_description_creates_or_extends_system_without_mutation():
    api = OpenAIAPI(api_key="k", tool_list=SAMPLE_TOOLS, tool_parser_name="xml")
    user_only = [{"role": "user", "content": "go"}]
    added = api.add_tool_description(user_only)
    assert added[0]["role"] == "system" and added[0]["content"].startswith("## Tools")
    assert user_only == [{"role": "user", "content": "go"}]
    with_system = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "go"}]
    extended = api.add_tool_description(with_system)
    assert extended[0]["content"].startswith("Rules.\n\n## Tools")
    assert with_system[0]["content"] == "Rules."
    assert api.add_tool_description(extended) == extended


def test_native_mode_adds_no_tool_text_and_no_tools_means_no_docs():
    native = OpenAIAPI(api_key="k", tool_list=SAMPLE_TOOLS, tool_parser_name="openai")
    assert native.add_tool_description([{"role": "user", "content": "x"}]) == [
        {"role": "user", "content": "x"}]
    assert [t["function"]["name"] for t in native.tool_description_json()] == [
        "evaluate", "statistics", "submit"]
    assert OpenAIAPI(api_key="k").tool_description_text() == ""


def test_normalize_openai_tool_calls():
    api = OpenAIAPI(api_key="k", tool_list=SAMPLE_TOOLS)
    calls = api.normalize_openai_tool_calls([tool_call("submit", {"formula": "x0"}, "c1"),
                                             tool_call("submit", "{oops", "c2")])
    assert [(c.id, c.params) for c in calls] == [("c1", {"formula": "x0"})]


@pytest.mark.parametrize(
    ("options", "match"),
    [({"temprature": 0.5}, "Did you mean 'temperature'"), ({"temperature": -1}, "in \\[0, 2\\]"),
     ({"top_p": 0}, "in \\(0, 1\\]"), ({"max_tokens": 0}, "an int in >= 1"),
     ({"max_tokens": 1.5}, "must be an int"), ({"stream": "yes"}, "a bool"),
     ({"stop": [1]}, "list of strings")],
)
def test_request_options_are_validated(options, match):
    with pytest.raises(ConfigurationError, match=match):
        OpenAIAPI(api_key="k")("go", **options)


def test_messages_must_have_roles():
    with pytest.raises(ConfigurationError, match="'role'"):
        OpenAIAPI(api_key="k")([{"content": "no role"}])


def test_openai_organization_is_not_sent_to_other_providers(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret")
    openai_server.script(Reply.json(chat_completion(content="a")),
                         Reply.json(chat_completion(content="b")))
    DeepSeekAPI(base_url=openai_server.base_url, api_key="k")("x").result()
    OpenAIAPI(base_url=openai_server.base_url, api_key="k")("x").result()
    first, second = openai_server.requests
    assert "openai-organization" not in first.headers
    assert second.headers["openai-organization"] == "org-secret"


def test_an_isolated_adapter_sends_only_its_own_key(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    openai_server.script(Reply.json(chat_completion(content="a")))
    OpenAIAPI(base_url=openai_server.base_url, api_key="sk-run", isolated=True)("x").result()
    [request] = openai_server.requests
    assert request.headers["authorization"] == "Bearer sk-run"
    assert "openai-organization" not in request.headers
    with pytest.raises(ConfigurationError, match="isolated from this process's keys"):
        OpenAIAPI(base_url=openai_server.base_url, isolated=True).resolve()


def test_an_embedded_run_reaches_a_named_endpoint_with_its_key(tmp_path, monkeypatch):
    from srh_core.agent import SearchSettings
    from srh_core.api.endpoints import build_api

    path = tmp_path / "endpoints.toml"
    path.write_text('[endpoints.lab]\nprovider = "deepseek"\nbase_url = "http://lab.test/v1"\n'
                    'api_key_env = "LAB_KEY"\nmodel = "lab-model"\n', encoding="utf-8")
    monkeypatch.setenv("SRH_ENDPOINTS", str(path))
    monkeypatch.setenv("LAB_KEY", "sk-lab")
    api = build_api(SearchSettings.build(endpoint="lab"), "offline", None)
    config = api.resolve()
    assert isinstance(api, DeepSeekAPI)
    assert (config.base_url, config.api_key, config.model) == ("http://lab.test/v1", "sk-lab",
                                                               "lab-model")
    local = build_api(SearchSettings.build(llm_provider="openai", base_url="http://mine/v1"),
                      "openai", "m", api_key="k")  # one process: any URL, the local key
    assert local.resolve().base_url == "http://mine/v1"
