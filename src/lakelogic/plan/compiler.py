"""The compiler: one contract → one :class:`~lakelogic.plan.steps.Plan` (SEMANTICS §8 order).

Pure: no engine import and no I/O beyond what loading the contract already did. Engines execute the
plan's steps and never re-read the contract to decide semantics.
"""

from __future__ import annotations

from typing import Any

from lakelogic.errors import ContractError, PlanError, Problem
from lakelogic.plan import io_steps, shape_steps
from lakelogic.plan.access import as_list, opt, plain, text
from lakelogic.plan.dataset_rules import compile_dataset_rules
from lakelogic.plan.fields import resolve_fields
from lakelogic.plan.rule_forms import RuleContext
from lakelogic.plan.rules import ColumnOrigins, compile_row_rules
from lakelogic.plan.steps import (
    AddLineage,
    CheckDataset,
    FieldSpec,
    Plan,
    Split,
    Step,
    Transform,
    ValidateRows,
)
from lakelogic.types import Phase, normalize_layer, slugify

# Ops whose output columns cannot be known before the run (they replace or reshape the frame).
_OPAQUE_OPS = frozenset({"sql", "pivot", "unpivot", "rollup", "select"})


def compile_contract(
    contract: Any, *, engine: str = "spark", external_logic_engine_override: bool = False
) -> Plan:
    """Compile ``contract`` into the ordered steps of one run on ``engine``.

    ``external_logic_engine_override``: run ``external_logic`` on ``engine`` even when the contract names
    another engine (the conformance harness does this; SEMANTICS §23). Raises :class:`PlanError` (or
    :class:`ContractError` for key columns that exist nowhere) naming the YAML path.
    """
    warnings: list[str] = []
    fields = resolve_fields(contract)
    name = _contract_name(contract)
    transforms = _transforms(contract, name)
    pre = [t for t in transforms if t.phase == Phase.PRE]
    post = [t for t in transforms if t.phase == Phase.POST]

    preserve = shape_steps.preserve_upstream(contract)
    extracted = io_steps.extraction_outputs(contract)
    pre_created = set(extracted) | {c for t in pre for c in t.creates}
    post_only = frozenset(c for t in post for c in t.creates if c not in pre_created)
    unknown_fields, _ = shape_steps.schema_policy(contract)

    strategy = str(text(opt(opt(contract, "materialization"), "strategy", ""))) or None
    key_cols, key_path = _write_keys(contract, strategy)
    _check_key_columns(contract, fields, transforms)
    links = io_steps.load_links(contract)
    write_only = {f.name for f in fields if f.generated} | _materialization_columns(
        contract, strategy, transforms
    )
    ctx = RuleContext(
        fields=fields,
        links=frozenset(link.name for link in links),
        enforce_required=bool(opt(opt(contract, "quality"), "enforce_required", True)),
        cast_to_string=shape_steps.cast_to_string(contract),
        key_columns=key_cols,
        key_path=key_path,
        write_only=frozenset(write_only),
    )
    origins = ColumnOrigins(
        post_only=post_only,
        known=_known_columns(contract, fields, transforms, extracted, preserve),
        source_may_add=unknown_fields != "quarantine",
    )
    row_rules = compile_row_rules(contract, ctx, origins, warnings)
    lineage = shape_steps.add_lineage(
        contract,
        contract_name=name,
        domain=_identity(contract, "domain"),
        system=_identity(contract, "system"),
    )
    _check_write_columns(
        contract, origins, lineage, _materialization_columns(contract, strategy, []), warnings
    )
    dataset_rules = compile_dataset_rules(
        contract,
        implied_unique=_implied_unique(contract, strategy),
        materialization_columns=_materialization_columns(contract, strategy, transforms),
    )

    steps: list[Step | None] = []
    if opt(contract, "source") is not None:
        steps.append(io_steps.read_source(contract))
    steps.extend(links)
    steps.append(preserve)
    if opt(contract, "extraction") is not None:
        steps.append(io_steps.extract(contract))
    if opt(contract, "external_logic") is not None:
        steps.append(
            io_steps.external_logic(contract, engine=engine, override_engine=external_logic_engine_override)
        )
    steps.extend(pre)
    steps.append(shape_steps.enforce_schema(contract, fields, post_only))
    steps.append(
        ValidateRows(
            yaml_path="quality.row_rules",
            phase=Phase.PRE,
            rules=tuple(r for r in row_rules if r.phase == Phase.PRE),
        )
    )
    quarantine = opt(contract, "quarantine")
    steps.append(
        Split(
            yaml_path="quarantine",
            quarantine_enabled=bool(opt(quarantine, "enabled", True)),
            include_error_reason=bool(opt(quarantine, "include_error_reason", True)),
        )
    )
    steps.extend(post)
    steps.append(
        ValidateRows(
            yaml_path="quality.row_rules",
            phase=Phase.POST,
            rules=tuple(r for r in row_rules if r.phase == Phase.POST),
        )
    )
    steps.append(shape_steps.final_projection(contract, fields))
    steps.append(
        CheckDataset(
            yaml_path="quality.dataset_rules",
            rules=dataset_rules,
            fail_pipeline_on_dataset_error=bool(
                opt(opt(contract, "quality"), "fail_pipeline_on_dataset_error", False)
            ),
        )
    )
    info = opt(contract, "info")
    domain, system = _identity(contract, "domain"), _identity(contract, "system")
    steps.append(shape_steps.mask(fields))
    steps.append(lineage)
    if opt(contract, "materialization") is not None:
        steps.append(io_steps.materialize(contract))

    layer = getattr(contract, "layer", None) if hasattr(contract, "layer") else None
    return Plan(
        contract_name=name,
        title=str(opt(info, "title", name)),
        table_name=str(
            getattr(contract, "table_name", None)
            or opt(info, "table_name")
            or slugify(str(opt(info, "title", name)))
        ),
        version=str(opt(info, "version", "1.0.0")),
        layer=layer
        if layer is not None
        else normalize_layer(opt(info, "target_layer") or opt(contract, "tier")),
        domain=domain,
        system=system,
        steps=tuple(s for s in steps if s is not None),
        links=links,
        primary_key=tuple(as_list(opt(contract, "primary_key"))),
        fields=fields,
        quarantine=plain(quarantine) if quarantine is not None else {},
        warnings=tuple(warnings),
    )


# --- pieces -----------------------------------------------------------------------------------


def _contract_name(contract: Any) -> str:
    name = getattr(contract, "contract_name", None)
    if isinstance(name, str) and name:
        return name
    info = opt(contract, "info")
    return str(
        opt(contract, "dataset") or opt(info, "table_name") or slugify(str(opt(info, "title", "contract")))
    )


def _identity(contract: Any, key: str) -> str | None:
    value = getattr(contract, key, None) if not isinstance(contract, dict) else None
    if isinstance(value, str):
        return value
    return opt(opt(contract, "info"), key) or opt(opt(contract, "metadata"), key)


def _transforms(contract: Any, dataset: str) -> list[Transform]:
    from lakelogic.plan.ops import compile_transform

    return [
        compile_transform(i, item, f"transformations[{i}]", dataset=dataset)
        for i, item in enumerate(as_list(opt(contract, "transformations")))
    ]


def _write_keys(contract: Any, strategy: str | None) -> tuple[tuple[str, ...], str]:
    """Key columns a merge/SCD2 write needs non-NULL (§6), and where they were declared."""
    if strategy == "merge":
        return tuple(as_list(opt(contract, "primary_key"))), "primary_key"
    if strategy == "scd2":
        business = as_list(opt(opt(opt(contract, "materialization"), "scd2"), "business_key"))
        if business:
            return tuple(business), "materialization.scd2.business_key"
        if as_list(opt(contract, "natural_key")):
            return tuple(as_list(opt(contract, "natural_key"))), "natural_key"
        return tuple(as_list(opt(contract, "primary_key"))), "primary_key"
    return (), "primary_key"


def _implied_unique(contract: Any, strategy: str | None) -> tuple[str, ...]:
    pk = tuple(str(c) for c in as_list(opt(contract, "primary_key")))
    if not pk:
        return ()
    if strategy == "scd2":
        ts = opt(opt(opt(contract, "materialization"), "scd2"), "timestamp_field")
        if ts and ts not in pk:
            return (*pk, str(ts))
    return pk


def _materialization_columns(contract: Any, strategy: str | None, transforms: list[Transform]) -> set[str]:
    """Columns only the write adds (SCD2 bookkeeping, surrogate key, soft-delete columns)."""
    mat = opt(contract, "materialization")
    cols: set[str] = set()
    if strategy == "scd2":
        scd2 = opt(mat, "scd2")
        cols |= {
            str(opt(scd2, "effective_from_field", "effective_from")),
            str(opt(scd2, "effective_to_field", "effective_to")),
            str(opt(scd2, "current_flag_field", "is_current")),
        }
        for key in ("version_column", "surrogate_key", "change_reason_column"):
            if opt(scd2, key):
                cols.add(str(opt(scd2, key)))
    for key in ("soft_delete_column", "soft_delete_time_column", "soft_delete_reason_column"):
        if opt(mat, key):
            cols.add(str(opt(mat, key)))
    created = {c for t in transforms for c in t.creates}
    return cols - created


def _known_columns(
    contract: Any,
    fields: tuple[FieldSpec, ...],
    transforms: list[Transform],
    extracted: tuple[str, ...],
    preserve: Any,
) -> frozenset[str]:
    """Every column the contract declares or creates; empty when that cannot be known at plan time."""
    if opt(contract, "external_logic") is not None or any(t.op in _OPAQUE_OPS for t in transforms):
        return frozenset()
    known = {f.name for f in fields} | set(extracted) | set(shape_steps.preserved_columns(preserve))
    for t in transforms:
        known |= set(t.creates)
    return frozenset(known)


def _check_write_columns(
    contract: Any, origins: ColumnOrigins, lineage: AddLineage | None, written: set[str], warnings: list[str]
) -> None:
    """§13.4: ``partition_by``/``cluster_by`` columns must exist in the output."""
    if not origins.known:
        return
    available = set(origins.known) | written | set(lineage.columns if lineage else ())
    mat = opt(contract, "materialization")
    for key in ("partition_by", "cluster_by"):
        missing = [str(c) for c in as_list(opt(mat, key)) if c not in available]
        if not missing:
            continue
        message = f"{', '.join(missing)} not in the output (model fields, op outputs, lineage columns)"
        if not origins.source_may_add or shape_steps.schema_policy(contract)[0] == "drop":
            raise PlanError(message, yaml_path=f"materialization.{key}")
        warnings.append(f"materialization.{key}: {message}; it must come from the source")


def _check_key_columns(contract: Any, fields: tuple[FieldSpec, ...], transforms: list[Transform]) -> None:
    """§6: key columns must be model fields or transformation outputs."""
    available = {f.name for f in fields} | {c for t in transforms for c in t.creates}
    if any(t.op in _OPAQUE_OPS for t in transforms):
        return
    problems = []
    for key in ("primary_key", "natural_key"):
        missing = [c for c in as_list(opt(contract, key)) if c not in available]
        if missing:
            problems.append(
                Problem(
                    file=str(getattr(contract, "source_file", None) or "<contract>"),
                    path=key,
                    message=f"key column(s) {', '.join(missing)} are not model fields nor created by an op",
                    allowed=", ".join(sorted(available)) or None,
                )
            )
    if problems:
        raise ContractError(problems)


__all__ = ["PlanError", "compile_contract"]
