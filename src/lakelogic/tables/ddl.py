"""CREATE TABLE statements for a contract's target and quarantine sink, without running the pipeline.

Columns come from the compiled plan: model fields (their Spark types), lineage columns when enabled, SCD2
columns the runtime adds; the quarantine sink adds the error columns of SEMANTICS §11. ``apply_ddl``
creates the (empty) tables through the same adapters the writes use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lakelogic.plan.steps import AddLineage, Plan
from lakelogic.tables.spec import WriteSpec, write_spec_from_contract
from lakelogic.tables.target import ResolvedTarget

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# A bare TIMESTAMP follows the reading session's spark.sql.timestampType: in a session set to
# TIMESTAMP_NTZ the printed DDL would create columns without time zone, where a model `timestamp` is an
# instant (SEMANTICS §5.1). The DDL names the type exactly.
INSTANT = "TIMESTAMP_LTZ"
_BARE_TIMESTAMP = re.compile(r"\bTIMESTAMP\b")
_LINEAGE_TYPES = {"processed_at": INSTANT, "created_at": INSTANT}
QUARANTINE_COLUMNS = (
    ("_lakelogic_errors", "ARRAY<STRING>"),
    ("_lakelogic_categories", "ARRAY<STRING>"),
    ("_lakelogic_run_id", "STRING"),
    ("_lakelogic_quarantined_at", INSTANT),
)


@dataclass(frozen=True)
class TableDDL:
    target: ResolvedTarget
    columns: tuple[tuple[str, str], ...]
    spec: WriteSpec
    statement: str


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"


def ddl_type(spark_sql: str) -> str:
    """A Spark SQL type name as DDL spells it: every bare ``TIMESTAMP`` (also inside ``ARRAY<…>``) as
    ``TIMESTAMP_LTZ``; ``TIMESTAMP_NTZ`` stays."""
    return _BARE_TIMESTAMP.sub(INSTANT, spark_sql)


def _model_columns(plan: Plan) -> list[tuple[str, str]]:
    return [(f.name, ddl_type(f.type.spark_sql())) for f in plan.fields]


def target_columns(plan: Plan, spec: WriteSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the target in write order."""
    columns = _model_columns(plan)
    names = {n for n, _ in columns}
    for step in plan.of_kind(AddLineage):
        assert isinstance(step, AddLineage)
        for column, kind in step.columns.items():
            if column not in names:
                columns.append((column, _LINEAGE_TYPES.get(kind, "STRING")))
                names.add(column)
    scd = spec.scd2
    if scd is not None:
        ts_type = next((t for n, t in columns if n == scd.timestamp_field), INSTANT)
        extra = [
            (scd.effective_from, ts_type),
            (scd.effective_to, ts_type),
            (scd.current_flag, "BOOLEAN"),
            (scd.version_column, "INT"),
            (scd.surrogate_key, "STRING"),
            (scd.change_reason_column, "STRING"),
        ]
        for name, dtype in extra:
            if name and name not in names:
                columns.append((name, dtype))
                names.add(name)
    return columns


def quarantine_columns(plan: Plan) -> list[tuple[str, str]]:
    columns = _model_columns(plan)
    names = {n for n, _ in columns}
    return columns + [(n, t) for n, t in QUARANTINE_COLUMNS if n not in names]


def render_create(target: ResolvedTarget, columns: list[tuple[str, str]], spec: WriteSpec) -> str:
    """A CREATE TABLE statement in Spark SQL for the target's format."""
    body = ",\n  ".join(f"{_quote(n)} {t}" for n, t in columns)
    if target.is_table:
        name = ".".join(_quote(p) for p in target.name.split("."))
    else:
        name = _quote(target.name.rstrip("/").rsplit("/", 1)[-1])  # registered name; data at LOCATION
    ddl = f"CREATE TABLE IF NOT EXISTS {name} (\n  {body}\n) USING {target.format}"
    partition_by = [c for c in spec.partition_by if c in {n for n, _ in columns}]
    if partition_by:
        ddl += "\nPARTITIONED BY (" + ", ".join(_quote(c) for c in partition_by) + ")"
    if not target.is_table:
        ddl += f"\nLOCATION {_sql_string(target.name)}"
    properties = spec.table_properties_for(target.format)
    if properties:
        ddl += (
            "\nTBLPROPERTIES ("
            + ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in properties.items())
            + ")"
        )
    return ddl + ";"


def contract_ddl(contract: Any, plan: Plan, resolved: ResolvedTarget) -> list[TableDDL]:
    """DDL of the target and (when enabled) the quarantine sink."""
    spec = write_spec_from_contract(contract)
    out = []
    columns = tuple(target_columns(plan, spec))
    out.append(TableDDL(resolved, columns, spec, render_create(resolved, list(columns), spec)))
    enabled = bool((plan.quarantine or {}).get("enabled", True))
    if resolved.quarantine is not None and enabled:
        q_spec = WriteSpec(strategy=resolved.quarantine.write_mode)
        q_cols = tuple(quarantine_columns(plan))
        out.append(
            TableDDL(
                resolved.quarantine, q_cols, q_spec, render_create(resolved.quarantine, list(q_cols), q_spec)
            )
        )
    return out


def apply_ddl(spark: SparkSession, table: TableDDL) -> str:
    """Create ``table`` empty, or bring an existing one to the contract's columns as a write would (DRIVER
    §17 "creates or alters"; the contract's schema evolution decides what may change). Returns
    ``created``, ``altered`` or ``unchanged``."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    from lakelogic.tables.spark_write import adapter_for, evolve_target, write_frame
    from lakelogic.tables.stamp import CommitStamp

    adapter = adapter_for(spark, table.target)
    schema = _parse_datatype_string("struct<" + ",".join(f"{_quote(n)}:{t}" for n, t in table.columns) + ">")
    assert isinstance(schema, StructType)
    empty = spark.createDataFrame([], schema)
    if adapter.exists():
        plan = evolve_target(adapter, empty, table.spec)
        return "altered" if plan.changes_table and not plan.replace_schema else "unchanged"
    spec = replace(
        table.spec, strategy="append", table_properties=table.spec.table_properties_for(table.target.format)
    )
    write_frame(spark, empty, table.target, spec, CommitStamp(run_id="ddl", contract="ddl", role="ddl"))
    return "created"
