"""Model endpoints named by the operator, and who may send which key where.

A worker holds API keys that belong to the operator. A run submitted to the
cluster comes from someone else, so a worker never sends its own key to an
address the run chose. The operator names endpoints in a TOML file (its
path in ``SRH_ENDPOINTS``)::

    [endpoints.gpt]
    provider = "openai"                       # a registered provider
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"            # default: the provider's key variable
    model = "gpt-5-mini"                      # optional default model
    rpm = 500                                 # optional: requests per minute, cluster-wide
    tpm = 200000                              # optional: tokens per minute, cluster-wide
    max_in_flight = 32                        # optional: requests in flight, cluster-wide

and a run picks one by name (``endpoint = "gpt"``). The rules, applied to
every model adapter a run builds (:meth:`ModelAccess.api_options`):

- a named endpoint: its provider, base URL and the operator's key;
- a base URL chosen by the run: accepted when it is the base URL of one of
  the operator's endpoints (that endpoint's key is sent), or when the run
  brings its own key (then only that key is sent, never one of the worker's);
  refused otherwise with :class:`EndpointAccessError`;
- neither: the provider's default address (the worker's own settings), as
  configured by the operator.

In one process (the embedded runtime) the user is the operator, so
:meth:`ModelAccess.operator` allows any base URL with the local key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srh_core.api.base import PROVIDERS, BaseAPI
from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.input_limits import MAX_CONFIG_BYTES, read_limited_text

ENDPOINTS_ENV = "SRH_ENDPOINTS"
ENDPOINT_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,39}$"
_NAME = re.compile(ENDPOINT_NAME_PATTERN)
_TEXT_FIELDS = frozenset({"provider", "base_url", "api_key_env", "model"})
#: Per-endpoint limits, shared by every worker of a cluster (srh_workers.quota).
LIMIT_FIELDS = ("rpm", "tpm", "max_in_flight")
_FIELDS = _TEXT_FIELDS | frozenset(LIMIT_FIELDS)


class EndpointAccessError(ConfigurationError):
    """A run asks for a model endpoint the operator did not allow (or names none that exists)."""


def normalize_url(url: str) -> str:
    """A base URL in the form endpoints are compared in (case of the host, trailing slash)."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}".rstrip("/")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One endpoint the operator configured.

    Attributes:
        name: The name runs use to choose it.
        provider: Registered provider (``openai``, ``deepseek``, ...).
        base_url: OpenAI-compatible base URL.
        api_key_env: Worker environment variable holding its key (None: the provider's).
        model: Default model, when the run names none.
        rpm: Requests per minute for the whole cluster (None: unlimited).
        tpm: Tokens (in + out) per minute for the whole cluster (None: unlimited).
        max_in_flight: Requests in flight at once for the whole cluster (None: unlimited).
    """

    name: str
    provider: str
    base_url: str
    api_key_env: str | None = None
    model: str | None = None
    rpm: float | None = None
    tpm: float | None = None
    max_in_flight: int | None = None

    def public(self) -> dict[str, str | None]:
        """What a submitter may see: everything but the key's variable."""
        return {"name": self.name, "provider": self.provider, "base_url": self.base_url,
                "model": self.model}


@dataclass(frozen=True, slots=True)
class EndpointRegistry:
    """The operator's endpoints by name."""

    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EndpointRegistry:
        """The endpoints of the file named by ``SRH_ENDPOINTS`` (none when it is unset)."""
        path = (os.environ if environ is None else environ).get(ENDPOINTS_ENV, "").strip()
        return cls.from_file(path) if path else cls()

    @classmethod
    def from_file(cls, path: str | Path) -> EndpointRegistry:
        """Read and validate an endpoints TOML file.

        Raises:
            ConfigurationError: Unreadable file, unknown fields, bad names or URLs.
        """
        try:
            text = read_limited_text(path, "endpoints file", MAX_CONFIG_BYTES)
            document = tomllib.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigurationError(f"Cannot read the endpoints file {path} "
                                     f"({ENDPOINTS_ENV}): {error}", setting=ENDPOINTS_ENV) from None
        table = document.get("endpoints", {})
        other = sorted(set(document) - {"endpoints"})
        if not isinstance(table, dict) or other:
            found = (f" Got the top-level key {other[0]!r}.{did_you_mean(other[0], ['endpoints'])}"
                     if other else "")
            raise ConfigurationError(f"The endpoints file {path} must hold only "
                                     f"[endpoints.<name>] tables.{found}", setting=ENDPOINTS_ENV)
        return cls({name: _endpoint(name, body, path) for name, body in table.items()})

    @classmethod
    def from_public(cls, rows: list[dict[str, Any]]) -> EndpointRegistry:
        """The registry as published by workers (no key variables): for checks at submit."""
        return cls({row["name"]: Endpoint(row["name"], row["provider"], row["base_url"],
                                          model=row.get("model")) for row in rows})

    def names(self) -> list[str]:
        return sorted(self.endpoints)

    def get(self, name: str) -> Endpoint:
        """The endpoint called ``name``.

        Raises:
            EndpointAccessError: No endpoint has that name.
        """
        if name not in self.endpoints:
            known = ", ".join(self.names()) or "none are configured"
            raise EndpointAccessError(
                f"The 'endpoint' setting must name one of the operator's endpoints "
                f"({known}). Got {name!r} instead.{did_you_mean(name, self.endpoints)}",
                setting="endpoint")
        return self.endpoints[name]

    def by_url(self, base_url: str) -> Endpoint | None:
        """The endpoint whose base URL is ``base_url``, if any."""
        wanted = normalize_url(base_url)
        return next((e for e in self.endpoints.values() if normalize_url(e.base_url) == wanted),
                    None)

    def public(self) -> list[dict[str, str | None]]:
        return [self.endpoints[name].public() for name in self.names()]


def _endpoint(name: str, body: Any, path: str | Path) -> Endpoint:
    where = f"endpoints.{name} in {path}"
    if not _NAME.fullmatch(name):
        raise ConfigurationError(f"Endpoint name {name!r} ({path}) must match "
                                 f"{ENDPOINT_NAME_PATTERN}.", setting=ENDPOINTS_ENV)
    if not isinstance(body, dict) or set(body) - _FIELDS or not {"provider", "base_url"} <= set(
            body) or not all(isinstance(body[key], str) for key in _TEXT_FIELDS & set(body)):
        raise ConfigurationError(
            f"{where} must have the string fields provider and base_url (and optionally "
            f"api_key_env, model, and the limits {', '.join(LIMIT_FIELDS)}). Got {body!r} "
            "instead.", setting=ENDPOINTS_ENV)
    if not body["base_url"].startswith(("http://", "https://")):
        raise ConfigurationError(f"{where}: base_url must be an http(s) URL. Got "
                                 f"{body['base_url']!r} instead.", setting=ENDPOINTS_ENV)
    limits = {key: _limit(where, key, body[key]) for key in LIMIT_FIELDS if key in body}
    return Endpoint(name, body["provider"], body["base_url"], body.get("api_key_env"),
                    body.get("model"), **limits)


def _limit(where: str, key: str, value: Any) -> float | int:
    integer = key == "max_in_flight"
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0 or (
            value == float("inf")):
        kind = "a positive integer" if integer else "a positive number"
        raise ConfigurationError(f"{where}: {key} must be {kind}. Got {value!r} instead.",
                                 setting=key)
    return int(value) if integer else float(value)


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """The endpoints a run may reach and the keys it may use there.

    Attributes:
        registry: The operator's endpoints.
        operator: True when the run's author is the operator (one process): a
            base URL of the run is then used with the local key.
        run_key: The key the run brought (travels with the run), or None.
        gate_for: Builds the :class:`~srh_core.api.gate.RequestGate` of the adapters
            this access builds, from the operator's endpoint they reach (None when
            they reach none); None: adapters send directly (the embedded runtime).
    """

    registry: EndpointRegistry = field(default_factory=EndpointRegistry)
    operator: bool = False
    run_key: str | None = field(default=None, repr=False)
    gate_for: Callable[[Endpoint | None], Any] | None = field(default=None, repr=False,
                                                               compare=False)

    @classmethod
    def local(cls) -> ModelAccess:
        """The embedded runtime's access: the local endpoints file, any base URL."""
        return cls(EndpointRegistry.from_env(), operator=True)

    def provider_for(self, settings: Any, provider: str) -> str:
        """The provider a model of the run uses (a named endpoint decides the main one)."""
        if settings.endpoint and provider == settings.llm_provider:
            return self.registry.get(settings.endpoint).provider
        return provider

    def api_options(self, settings: Any, provider: str,
                    environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Constructor options (base URL, key) for an adapter of ``provider`` in this run.

        Raises:
            EndpointAccessError: The run names an unknown endpoint, or a base URL that
                is not the operator's while bringing no key of its own.
            ConfigurationError: The chosen endpoint's key variable is unset here.
        """
        chosen = self._choose(settings, provider)
        if not isinstance(chosen, Endpoint):
            return chosen
        options: dict[str, Any] = {"base_url": chosen.base_url}
        if chosen.api_key_env:
            key = (os.environ if environ is None else environ).get(chosen.api_key_env)
            if not key:
                raise ConfigurationError(
                    f"Endpoint {chosen.name!r} reads its key from {chosen.api_key_env}, "
                    "which is not set on this worker.", setting=chosen.api_key_env)
            options["api_key"] = key
        return options

    def endpoint_for(self, settings: Any, provider: str) -> Endpoint | None:
        """The operator's endpoint an adapter of ``provider`` reaches in this run, if any."""
        chosen = self._choose(settings, provider)
        return chosen if isinstance(chosen, Endpoint) else None

    def check_run(self, settings: Any) -> None:
        """Refuse a run now (at submit) when a worker would refuse it (keys are not read).

        Raises:
            EndpointAccessError: As :meth:`api_options`.
        """
        providers = [settings.llm_provider]
        if settings.strong_llm_model:
            providers.append(settings.strong_llm_provider or settings.llm_provider)
        for provider in providers:
            self._choose(settings, self.provider_for(settings, provider))

    def _choose(self, settings: Any, provider: str) -> Endpoint | dict[str, Any]:
        """The operator's endpoint the run reaches, or the adapter options it may use."""
        if settings.endpoint:
            endpoint = self.registry.get(settings.endpoint)
            if settings.base_url and normalize_url(settings.base_url) != normalize_url(
                    endpoint.base_url):
                raise EndpointAccessError(
                    f"The run names endpoint {endpoint.name!r} and base URL "
                    f"{settings.base_url!r}; give one of them.", setting="base_url")
            if endpoint.provider == provider:
                return endpoint
        if not settings.base_url:
            return {"api_key": self.run_key, "isolated": True} if self.run_key else {}
        if self.operator:
            return {"base_url": settings.base_url}
        if self.run_key:
            return {"base_url": settings.base_url, "api_key": self.run_key, "isolated": True}
        endpoint = self.registry.by_url(settings.base_url)
        if endpoint is None or endpoint.provider != provider:
            known = ", ".join(e.base_url for e in self.registry.endpoints.values()) or "none"
            raise EndpointAccessError(
                f"The base URL {settings.base_url!r} is not one of the operator's endpoints "
                f"({known}), and the run brings no key of its own: the workers never send "
                "their keys to an address a run chose. Name an endpoint (--endpoint), or "
                "bring your own key (--own-key).", setting="base_url")
        return endpoint


def build_api(settings: Any, provider: str, model: str | None, access: ModelAccess | None = None,
              **kwargs: Any) -> Any:
    """The adapter of ``provider`` for a run with ``settings``, reaching what ``access`` allows.

    Args:
        settings: The run's SearchSettings (``base_url``, ``endpoint``).
        provider: Provider name as the settings give it.
        model: Model name (None: the endpoint's, else the provider's default).
        access: The run's access (None: :meth:`ModelAccess.local`).
        **kwargs: Further adapter options (tools, parser).

    Raises:
        EndpointAccessError: The run asks for an endpoint ``access`` does not allow.
    """
    from srh_core.api.openai_api import OpenAIAPI  # the OpenAI SDK: 0.7 s of imports

    access = access or ModelAccess.local()
    provider = access.provider_for(settings, provider)
    if issubclass(PROVIDERS.get(provider), OpenAIAPI):
        kwargs.update(access.api_options(settings, provider))
        kwargs.setdefault("stream", bool(getattr(settings, "llm_stream", False)))
        if access.gate_for is not None:
            kwargs["gate"] = access.gate_for(access.endpoint_for(settings, provider))
        if model is None and settings.endpoint:
            model = access.registry.get(settings.endpoint).model
    elif settings.base_url:
        kwargs["base_url"] = settings.base_url
    return BaseAPI.create(provider, model=model, **kwargs)


__all__ = ["ENDPOINTS_ENV", "LIMIT_FIELDS", "build_api", "Endpoint", "EndpointAccessError",
           "EndpointRegistry", "ModelAccess", "normalize_url"]
