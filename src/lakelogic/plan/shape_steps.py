"""Steps that shape columns: schema enforcement, final projection, masking, lineage (§5, §7.1, §14)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal, cast

from lakelogic.plan.access import as_list, opt, text
from lakelogic.plan.rule_drafts import explicitly_set
from lakelogic.plan.steps import AddLineage, EnforceSchema, FieldSpec, FinalProjection, Mask, PreserveUpstream

UnknownFields = Literal["allow", "drop", "quarantine"]


def schema_policy(contract: Any) -> tuple[UnknownFields, str]:
    """Effective (unknown_fields, evolution): top-level policy, overridden per key by ``server`` (§7.1)."""
    top = opt(contract, "schema_policy")
    unknown = str(text(opt(top, "unknown_fields", "allow")))
    evolution = str(text(opt(top, "evolution", "allow")))
    server_policy = opt(opt(contract, "server"), "schema_policy")
    if server_policy is not None:
        if explicitly_set(server_policy, "unknown_fields"):
            unknown = str(text(opt(server_policy, "unknown_fields")))
        if explicitly_set(server_policy, "evolution"):
            evolution = str(text(opt(server_policy, "evolution")))
    return cast(UnknownFields, unknown), evolution


def cast_to_string(contract: Any) -> bool:
    return bool(opt(opt(contract, "server"), "cast_to_string", False))


def enforce_schema(contract: Any, fields: tuple[FieldSpec, ...], post_only: Collection[str]) -> EnforceSchema:
    unknown, evolution = schema_policy(contract)
    options = opt(opt(contract, "source"), "options", {}) or {}
    return EnforceSchema(
        yaml_path="model",
        fields=fields,
        unknown_fields=unknown,
        evolution=evolution,
        cast_to_string=cast_to_string(contract),
        post_created=tuple(f.name for f in fields if f.name in post_only),
        date_formats=tuple(str(v) for v in as_list(opt(options, "date_formats"))),
        timestamp_formats=tuple(str(v) for v in as_list(opt(options, "timestamp_formats"))),
    )


def final_projection(contract: Any, fields: tuple[FieldSpec, ...]) -> FinalProjection:
    unknown, _ = schema_policy(contract)
    return FinalProjection(yaml_path="model", fields=fields, unknown_fields=unknown)


def mask(fields: tuple[FieldSpec, ...]) -> Mask | None:
    masked = tuple(f for f in fields if f.masking)
    return Mask(yaml_path="model", fields=masked) if masked else None


def preserve_upstream(contract: Any) -> PreserveUpstream | None:
    lineage = opt(contract, "lineage")
    columns = tuple(str(c) for c in as_list(opt(lineage, "preserve_upstream")))
    if not columns:
        return None
    return PreserveUpstream(
        yaml_path="lineage.preserve_upstream",
        columns=columns,
        prefix=str(opt(lineage, "upstream_prefix", "_upstream")),
    )


def preserved_columns(step: PreserveUpstream | None) -> tuple[str, ...]:
    """Output names of preserved upstream columns (prefix + column: ``_upstream`` + ``_lakelogic_run_id``)."""
    return tuple(step.prefix + c for c in step.columns) if step else ()


# (switch, column-name key, default column, what the column holds)
_LINEAGE_COLUMNS = (
    ("capture_source_path", "source_column_name", "_lakelogic_source", "source_path"),
    ("capture_timestamp", "timestamp_column_name", "_lakelogic_processed_at", "processed_at"),
    ("capture_run_id", "run_id_column_name", "_lakelogic_run_id", "run_id"),
    ("capture_contract_name", "contract_name_column_name", "_lakelogic_contract_name", "contract_name"),
    ("capture_domain", "domain_column_name", "_lakelogic_domain", "domain"),
    ("capture_system", "system_column_name", "_lakelogic_system", "system"),
    ("capture_created_at", "created_at_column_name", "_lakelogic_created_at", "created_at"),
    ("capture_created_by", "created_by_column_name", "_lakelogic_created_by", "created_by"),
)


def add_lineage(
    contract: Any, *, contract_name: str, domain: str | None, system: str | None
) -> AddLineage | None:
    lineage = opt(contract, "lineage")
    if lineage is None or not opt(lineage, "enabled", False):
        return None
    columns: dict[str, str] = {}
    for switch, name_key, default, what in _LINEAGE_COLUMNS:
        if opt(lineage, switch, True):
            holds = what
            if what == "run_id" and str(text(opt(lineage, "run_id_source", "run_id"))) == "pipeline_run_id":
                holds = "pipeline_run_id"  # the engine falls back to the run id when there is none
            columns[str(opt(lineage, name_key, default))] = holds
    version = str(opt(opt(contract, "info"), "version", "1.0.0"))
    values: dict[str, str] = {"contract_name": f"{contract_name} (v{version})"}
    if domain is not None:
        values["domain"] = domain
    if system is not None:
        values["system"] = system
    override = opt(lineage, "created_by_override")
    if override is not None:
        values["created_by"] = str(override)
    return AddLineage(yaml_path="lineage", columns=columns, values=values)
