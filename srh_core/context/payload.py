"""Rebuild the same :class:`AgentContext` in another process.

A run publishes its arrays once (how is the worker runtime's business: a
shared directory, Redis, an ``.npz``...) together with the JSON
:class:`ContextMetadata`. A worker calls
:func:`srh_core.context.context.context_from_payload` with both (the context
module reads this one, never the other way) and gets a context with the same
data, metadata, settings, revision and evaluator, so its splits are identical.
Each array's sha256 is checked, so a stale or corrupted array is rejected
with the variable's name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from srh_core.errors import ConfigurationError, DataError
from srh_core.evaluator.default import DefaultEvaluator
from srh_core.evaluator.loading import load_custom_evaluator

if TYPE_CHECKING:
    from srh_core.context.context import AgentContext

PAYLOAD_FORMAT = "srh.context/1"


class ArraySpec(BaseModel):
    """Shape, dtype and sha256 of one published array."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dtype: str
    shape: list[int]
    sha256: str


class EvaluatorRef(BaseModel):
    """Which evaluator class the context used, and the file of a custom one."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    module: str
    qualname: str
    path: str | None = None


class ContextMetadata(BaseModel):
    """The JSON side of a context payload (everything but the array bytes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = Field(default=PAYLOAD_FORMAT, pattern=r"^srh\.context/1$")
    revision: int = Field(ge=0)
    target: str | None
    arrays: dict[str, ArraySpec]
    variable_descriptions: dict[str, str]
    variable_units: dict[str, str] = Field(default_factory=dict)
    variable_axes: dict[str, list[str]]
    variable_structures: dict[str, str]
    relation_names: list[str]
    num_nodes: int | None = Field(default=None, ge=1)
    settings: dict[str, Any]
    evaluator: EvaluatorRef
    workspace: str | None = None


@dataclass(frozen=True, slots=True)
class ContextPayload:
    """Metadata plus arrays: everything needed to rebuild a context.

    Attributes:
        metadata: The validated JSON side; ``metadata.model_dump(mode="json")``
            is what a runtime stores.
        arrays: Arrays by name, in data order.
    """

    metadata: ContextMetadata
    arrays: Mapping[str, np.ndarray]

    def metadata_json(self) -> dict[str, Any]:
        """Return the metadata as plain JSON values."""
        return self.metadata.model_dump(mode="json")

    @classmethod
    def from_parts(cls, metadata: Mapping[str, Any], arrays: Mapping[str, Any]) -> ContextPayload:
        """Validate JSON metadata read back from storage and pair it with arrays.

        Raises:
            ConfigurationError: The metadata does not match :class:`ContextMetadata`.
        """
        try:
            model = ContextMetadata.model_validate(dict(metadata))
        except ValidationError as exc:
            raise ConfigurationError(f"Invalid context payload metadata: {exc}",
                                     setting="payload") from exc
        return cls(metadata=model, arrays=dict(arrays))


def array_digest(value: np.ndarray) -> str:
    """Return the sha256 of an array's dtype, shape and bytes."""
    digest = hashlib.sha256(f"{value.dtype.str}|{value.shape}|".encode())
    digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def context_to_payload(context: AgentContext) -> ContextPayload:
    """Describe ``context`` as a payload (arrays are shared, not copied)."""
    data = dict(context.data)
    metadata = ContextMetadata(
        revision=context.revision,
        target=context.target,
        arrays={name: ArraySpec(dtype=value.dtype.str, shape=list(value.shape),
                                sha256=array_digest(value)) for name, value in data.items()},
        variable_descriptions=context.variable_descriptions,
        variable_units=context.variable_units,
        variable_axes={name: list(axes) for name, axes in context.layout.variable_axes.items()},
        variable_structures=context.variable_structures,
        relation_names=sorted(context.relation_names),
        num_nodes=context.num_nodes,
        settings=context.settings().to_dict(),
        evaluator=_evaluator_ref(context.evaluator),
        workspace=str(context.workspace_path) if context.workspace_path else None,
    )
    return ContextPayload(metadata=metadata, arrays=data)


def check_arrays(meta: ContextMetadata, arrays: Mapping[str, Any]) -> None:
    missing = [name for name in meta.arrays if name not in arrays]
    extra = [name for name in arrays if name not in meta.arrays]
    if missing or extra:
        name = (missing or extra)[0]
        raise DataError(f"Payload arrays do not match its metadata: missing {missing}, "
                        f"unexpected {extra}.", variable=name)
    for name, spec in meta.arrays.items():
        value = np.asarray(arrays[name])
        if array_digest(value) != spec.sha256:
            raise DataError(f"Payload array {name!r} differs from the published one "
                            f"(expected dtype {spec.dtype}, shape {tuple(spec.shape)}; got "
                            f"{value.dtype.str}, {value.shape}, or different values).",
                            variable=name)


def _evaluator_ref(evaluator: Any) -> EvaluatorRef:
    cls = evaluator if isinstance(evaluator, type) else type(evaluator)
    path = getattr(cls, "source_path", None)
    return EvaluatorRef(module=cls.__module__, qualname=cls.__qualname__,
                        path=str(path) if path else None)


def restore_evaluator(ref: EvaluatorRef) -> Any:
    if (ref.module, ref.qualname) == (DefaultEvaluator.__module__, DefaultEvaluator.__qualname__):
        return DefaultEvaluator()
    if ref.path is None:
        raise ConfigurationError(
            f"The payload was built with evaluator {ref.module}.{ref.qualname}, which cannot be "
            "restored automatically; pass evaluator=... to context_from_payload().",
            setting="evaluator",
        )
    evaluator = load_custom_evaluator(ref.path)
    if type(evaluator).__qualname__ != ref.qualname:
        raise ConfigurationError(
            f"The evaluator file {ref.path} now defines {type(evaluator).__qualname__}; the "
            f"payload was built with {ref.qualname}.",
            setting="evaluator",
        )
    return evaluator
