"""Model fields resolved for the plan: types parsed, required-ness and masking settled (SEMANTICS §5)."""

from __future__ import annotations

from functools import partial
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.access import as_list, opt, text
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.steps import FieldSpec
from lakelogic.types import LogicalType, TypeParseError, parse_type


def field_type(field: Any, yaml_path: str) -> LogicalType:
    """The field's logical type; the contract model may hold it parsed or as text."""
    raw = opt(field, "type")
    if isinstance(raw, LogicalType):
        return raw
    try:
        return parse_type(str(text(raw)))
    except TypeParseError as err:
        hint = f"did you mean '{err.suggestion}'?" if err.suggestion else None
        raise PlanError(f"unknown type {raw!r}", yaml_path=f"{yaml_path}.type", hint=hint) from err


def is_required(field: Any) -> bool:
    """``required: true`` or ``nullable: false`` (SEMANTICS §5.1)."""
    return bool(opt(field, "required", False)) or opt(field, "nullable") is False


def model_fields(contract: Any) -> list[Any]:
    return as_list(opt(opt(contract, "model"), "fields"))


def resolve_fields(contract: Any, problems: PlanProblems | None = None) -> tuple[FieldSpec, ...]:
    """The model's fields; a field whose type does not parse is recorded in ``problems`` (when given)
    and left out, so the rest of the contract can still be checked."""
    collect = problems or PlanProblems()
    specs: list[FieldSpec] = []
    for i, field in enumerate(model_fields(contract)):
        spec = collect.attempt(partial(_field_spec, field, f"model.fields[{i}]"), None)
        if spec is not None:
            specs.append(spec)
    if problems is None:
        collect.raise_if_any()
    return tuple(specs)


def _field_spec(field: Any, path: str) -> FieldSpec:
    return FieldSpec(
        name=str(opt(field, "name")),
        type=field_type(field, path),
        required=is_required(field),
        generated=bool(opt(field, "generated", False)),
        pii=bool(opt(field, "pii", False)),
        phi=bool(opt(field, "phi", False)),
        masking=_masking(opt(field, "masking")),
        masking_format=opt(field, "masking_format"),
        pii_vault=opt(field, "pii_vault"),
    )


def _masking(value: Any) -> str | None:
    """Masking strategy with aliases folded (``null`` → ``nullify``, ``tokenize`` → ``encrypt``)."""
    name = text(value)
    if name is None:
        return None
    low = name.strip().lower()
    return {"null": "nullify", "tokenize": "encrypt"}.get(low, low)
