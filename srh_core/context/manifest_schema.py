"""The ``manifest.json`` format of a ``context.data`` directory, as pydantic models.

```json
{
  "target": "y",
  "description": "Optional text about the data set.",
  "variables": {
    "x": {"file": "x.npy", "description": "Input.", "axes": ["sample"]},
    "y": {"file": "y.npy", "description": "Response.", "axes": ["sample"]}
  },
  "axes": {"sample": {"size": 100, "description": "Sample position."}},
  "num_nodes": null
}
```

- ``variables`` (required, non-empty): ``file`` (a relative ``.npy`` path
  inside the directory), ``description`` (text; empty gives a warning),
  ``axes`` (optional; when given, the array's rank and dimension lengths must
  match the declared axes), ``kind`` ("variable" or "relation") and
  ``structure`` (the relation a graph variable is aligned with), ``units``
  (optional unit text such as ``"m/s"``, see :func:`srh_engine.parse_units`).
- ``axes`` (optional): ``description`` and exactly one of ``values`` (inline
  JSON scalars), ``file`` (a 1-D ``.npy``) or ``size`` (gives ``0..size-1``).
- ``target`` (optional) names the variable to predict; ``weights`` (optional)
  names the variable holding each row's weight (PySR's ``weights``; a run over
  the directory then weighs its fits and metrics by it); ``num_nodes`` is
  required with relations.

Each part is validated separately, so one broken variable does not hide the
problems of the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

MANIFEST_NAME = "manifest.json"
AXIS_VALUE_TYPES = (bool, int, float, str)
#: Largest axis ``size`` (an axis of size n is materialised as ``arange(n)``).
MAX_AXIS_SIZE = 100_000_000


@dataclass(frozen=True, slots=True)
class ManifestIssue:
    """One problem of a manifest directory, where it is and how to repair it."""

    location: str
    message: str
    hint: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"location": self.location, "message": self.message, "hint": self.hint}

    def __str__(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.location}: {self.message}{hint}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class VariableSpec(_Strict):
    """One variable: its file, description, axes and graph role."""

    file: str
    description: str = ""
    axes: list[str] | None = None
    kind: Literal["variable", "relation"] = "variable"
    structure: str | None = None
    units: str | None = None


class AxisSpec(_Strict):
    """One axis: a description and exactly one of values, file or size."""

    description: str = ""
    values: list[Any] | None = Field(default=None, min_length=1)
    file: str | None = None
    size: int | None = Field(default=None, ge=1, le=MAX_AXIS_SIZE)

    @model_validator(mode="after")
    def _one_source(self) -> AxisSpec:
        sources = [name for name in ("values", "file", "size") if getattr(self, name) is not None]
        if len(sources) != 1:
            raise ValueError(f"an axis needs exactly one of values, file or size; got {sources}")
        bad = [v for v in self.values or () if not isinstance(v, AXIS_VALUE_TYPES)]
        if bad:
            raise ValueError(f"axis values must be JSON numbers, strings or booleans; "
                             f"got {bad[0]!r}")
        return self


class ManifestRoot(_Strict):
    """Root fields; variables and axes are checked one by one afterwards."""

    target: str | None = None
    weights: str | None = None
    description: str = ""
    variables: dict[str, Any] = Field(min_length=1)
    axes: dict[str, Any] = Field(default_factory=dict)
    num_nodes: int | None = Field(default=None, ge=1)


def pydantic_issues(
    prefix: str, exc: ValidationError, fields: tuple[str, ...]
) -> list[ManifestIssue]:
    """Turn a pydantic error into one issue per problem, each with a hint."""
    return [_issue(prefix, error, fields) for error in exc.errors()]


def _issue(prefix: str, error: Any, fields: tuple[str, ...]) -> ManifestIssue:
    location = ".".join([prefix, *(str(part) for part in error["loc"])]).strip(".") or prefix
    kind, message = error["type"], error["msg"]
    quiet = ("missing", "extra_forbidden", "value_error")  # their messages say it already
    got = "" if kind in quiet else f"; got {error['input']!r}"
    return ManifestIssue(location or "manifest", f"{message}{got}", _hint(kind, fields))


def _hint(kind: str, fields: tuple[str, ...]) -> str:
    if kind == "missing":
        return "Add the required field."
    if kind == "extra_forbidden":
        return f"Remove the field; allowed fields are {list(fields)}."
    if kind.endswith("_type") or kind.startswith("literal"):
        return "Use a value of the expected type."
    if kind == "too_short":
        return "Add at least one entry."
    if kind == "greater_than_equal":
        return "Use a positive value."
    if kind == "less_than_equal":
        return "Use a smaller value; larger ones are refused before anything is allocated."
    return "Fix the value as described."


VARIABLE_FIELDS = tuple(VariableSpec.model_fields)
AXIS_FIELDS = tuple(AxisSpec.model_fields)
ROOT_FIELDS = tuple(ManifestRoot.model_fields)
