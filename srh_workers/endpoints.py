"""The operator's model endpoints on a cluster: read by workers, published for submitters.

Workers read the endpoints file (``SRH_ENDPOINTS``, see
:mod:`srh_core.api.endpoints`) at start, refuse to start when it is invalid,
and publish its public part (names, providers, base URLs, default models;
never keys or key variables) in Redis, so ``srh run --backend celery``
refuses a run the workers would refuse before it is submitted. Every
worker of a cluster should read the same file.
"""

from __future__ import annotations

import logging

from redis import Redis

from srh_core.api.endpoints import EndpointRegistry, ModelAccess
from srh_workers.spec import RunSpec
from srh_workers.store.cluster import ClusterIndex

logger = logging.getLogger("srh.workers")


def publish_endpoints(client: Redis, registry: EndpointRegistry) -> None:
    """Publish the public view of ``registry`` (what submitters check runs against)."""
    ClusterIndex(client).publish_endpoints(registry.public())


def published_endpoints(client: Redis) -> EndpointRegistry:
    """The endpoints the workers published (none when no worker has started yet)."""
    public = ClusterIndex(client).endpoints()
    return EndpointRegistry() if public is None else EndpointRegistry.from_public(public)


def worker_access(spec: RunSpec, client: Redis | None = None) -> ModelAccess:
    """What a run may reach from this worker: the operator's endpoints, the run's own key.

    With ``client``, every request passes the cluster's quota of the endpoint it
    reaches, and is counted in the worker's model metrics (:mod:`srh_workers.quota`).
    """
    gate_for = None
    if client is not None:
        from srh_workers.quota import gate_factory

        gate_for = gate_factory(client)
    return ModelAccess(EndpointRegistry.from_env(), operator=False, run_key=spec.api_key,
                       gate_for=gate_for)


def submit_access(client: Redis, api_key: str | None) -> ModelAccess:
    """The access a submitted run will have, as far as the submitter can know it."""
    local = EndpointRegistry.from_env()
    published = published_endpoints(client)
    merged = EndpointRegistry({**published.endpoints, **local.endpoints})
    return ModelAccess(merged, operator=False, run_key=api_key)
