"""CREATE TABLE statements for a contract's target and quarantine sink, without running the pipeline.

Columns come from the compiled plan: model fields (their Spark types), lineage columns when enabled, SCD2
columns the runtime adds; the quarantine sink adds the error columns of SEMANTICS §11. ``apply_ddl``
creates the (empty) tables through the same adapters the writes use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lakelogic.plan.steps import AddLineage, Mask, Plan
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
_TYPE_KEEPING_MASKS = frozenset({"nullify", "null"})
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
    # §5.4: every masking strategy but nullify writes text, so the written column is a string
    texts = {
        f.name
        for step in plan.of_kind(Mask)
        if isinstance(step, Mask)
        for f in step.fields
        if f.masking is not None and f.masking.lower() not in _TYPE_KEEPING_MASKS
    }
    return [(f.name, "STRING" if f.name in texts else ddl_type(f.type.spark_sql())) for f in plan.fields]


def _with_lineage(plan: Plan, columns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``columns`` and the lineage columns a run adds to its rows (good and quarantined alike, §14)."""
    names = {n for n, _ in columns}
    for step in plan.of_kind(AddLineage):
        assert isinstance(step, AddLineage)
        for column, kind in step.columns.items():
            if column not in names:
                columns.append((column, _LINEAGE_TYPES.get(kind, "STRING")))
                names.add(column)
    return columns


def target_columns(plan: Plan, spec: WriteSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the target in write order."""
    columns = _with_lineage(plan, _model_columns(plan))
    names = {n for n, _ in columns}
    for soft, soft_type in spec.soft_delete_columns.items():  # §13.6: the write adds them
        if soft not in names:
            columns.append((soft, ddl_type(soft_type.upper())))
            names.add(soft)
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
    columns = _with_lineage(plan, _model_columns(plan))
    names = {n for n, _ in columns}
    return columns + [(n, t) for n, t in QUARANTINE_COLUMNS if n not in names]


def stored_columns(target: ResolvedTarget, columns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``columns`` as ``target`` stores them: CSV/JSON sinks hold arrays, maps and structs as JSON text
    (SEMANTICS §11), so their DDL says STRING (CSV has no nested types at all)."""
    if target.format not in ("csv", "json"):
        return columns
    nested = ("ARRAY<", "MAP<", "STRUCT<")
    return [(n, "STRING" if t.upper().startswith(nested) else t) for n, t in columns]


def path_table_name(target: ResolvedTarget) -> str:
    """The name a path target is registered under in the printed DDL (its data stays at LOCATION)."""
    return target.name.rstrip("/").rsplit("/", 1)[-1]


def render_create(
    target: ResolvedTarget, columns: list[tuple[str, str]], spec: WriteSpec, *, registered: str | None = None
) -> str:
    """A CREATE TABLE statement in Spark SQL for the target's format; ``registered``: the name a path
    target is registered under (default: its last path segment)."""
    body = ",\n  ".join(f"{_quote(n)} {t}" for n, t in columns)
    if target.is_table:
        name = ".".join(_quote(p) for p in target.name.split("."))
    else:
        name = _quote(registered or path_table_name(target))
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
    columns = tuple(stored_columns(resolved, target_columns(plan, spec)))
    out.append(TableDDL(resolved, columns, spec, render_create(resolved, list(columns), spec)))
    enabled = bool((plan.quarantine or {}).get("enabled", True))
    if resolved.quarantine is not None and enabled:
        sink = resolved.quarantine
        q_spec = WriteSpec(strategy=sink.write_mode)
        q_cols = tuple(stored_columns(sink, quarantine_columns(plan)))
        # a path sink under <root>/_quarantine/<name> shares the target's last segment: registered under
        # that one name, the second statement would be a no-op (IF NOT EXISTS)
        registered = None
        if not sink.is_table and not resolved.is_table and path_table_name(sink) == path_table_name(resolved):
            registered = f"{path_table_name(sink)}_quarantine"
        statement = render_create(sink, list(q_cols), q_spec, registered=registered)
        out.append(TableDDL(sink, q_cols, q_spec, statement))
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
