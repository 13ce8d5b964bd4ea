"""A run's specification and data, published once in Redis.

Submitting a run writes its :class:`RunSpec` (settings and problem) and its
context payload (metadata JSON plus one ``.npy`` per array, never pickled)
under the run's keys. Workers load both by run id; the data travels once
per run, not with every task, and each array's sha256 is checked when a
worker rebuilds the context.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from redis import Redis

from srh_core.agent.settings import SearchSettings
from srh_core.errors import SearchStateError
from srh_workers.keys import RUNS_INDEX, RunKeys

METADATA_FIELD = b"metadata"
ARRAY_PREFIX = "array:"


class RunSpec(BaseModel):
    """What a worker needs to rebuild a run's agent, besides the data.

    Attributes:
        run_id: The run identifier.
        settings: ``SearchSettings.model_dump()``.
        description: The problem description shown to the model.
        target: Target variable.
        features: Feature variables, in order.
        submitted_at: Epoch seconds at submission.
        deadline: Epoch seconds when the time limit ends, or None.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    run_id: str
    settings: dict[str, Any]
    description: str
    target: str
    features: list[str]
    submitted_at: float = Field(default_factory=time.time)
    deadline: float | None = None

    def search_settings(self) -> SearchSettings:
        return SearchSettings.build(**self.settings)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def publish_run(client: Redis, spec: RunSpec, payload: Any) -> None:
    """Write the spec and the context payload, and index the run (one transaction)."""
    keys = RunKeys(spec.run_id)
    mapping: dict[str, bytes] = {METADATA_FIELD.decode(): json.dumps(
        payload.metadata_json()).encode()}
    mapping.update({ARRAY_PREFIX + name: _npy(value) for name, value in payload.arrays.items()})
    pipe = client.pipeline(transaction=True)
    pipe.set(keys.spec, spec.model_dump_json())
    pipe.delete(keys.context)
    pipe.hset(keys.context, mapping=mapping)
    pipe.zadd(RUNS_INDEX, {spec.run_id: spec.submitted_at})
    pipe.execute()


def load_spec(client: Redis, run_id: str) -> RunSpec:
    """The run's spec.

    Raises:
        SearchStateError: The run is unknown (never submitted, or expired).
    """
    raw = client.get(RunKeys(run_id).spec)
    if raw is None:
        raise SearchStateError(f"Run {run_id!r} is not known to this Redis (never submitted, "
                               "or its keys expired).")
    return RunSpec.model_validate_json(raw)


def load_payload(client: Redis, run_id: str) -> Any:
    """The context payload of a run (arrays decoded without pickle)."""
    from srh_core.context.payload import ContextPayload

    fields: Mapping[bytes, bytes] = client.hgetall(RunKeys(run_id).context)
    if METADATA_FIELD not in fields:
        raise SearchStateError(f"Run {run_id!r} has no published data.")
    metadata = json.loads(fields[METADATA_FIELD])
    arrays = {key.decode()[len(ARRAY_PREFIX):]: np.load(io.BytesIO(value), allow_pickle=False)
              for key, value in fields.items() if key.decode().startswith(ARRAY_PREFIX)}
    return ContextPayload.from_parts(metadata, arrays)
