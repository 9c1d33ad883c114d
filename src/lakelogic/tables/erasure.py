"""Erasure of data subjects (SEMANTICS §18) and retention deletes, one atomic commit per table.

``nullify``, ``hash`` and ``redact`` rewrite the chosen columns on every row of the subjects (all SCD2
versions, the quarantine table too); ``delete`` removes those rows. Iceberg and Spark's own Delta run one
``MERGE INTO … USING <subject ids>``; Delta without delta-spark runs delta-rs's merge with the same
expressions in its SQL dialect. Plain Parquet/CSV/JSON paths have no row-level commits and are refused.
Each table's commit carries the ``lakelogic.*`` stamp (role ``erasure``/``retention``), like a run's.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakelogic.errors import TableError, UnsupportedError
from lakelogic.plan.sqlutil import quote_ident, sql_string
from lakelogic.tables.stamp import CommitStamp

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from lakelogic.tables.target import ResolvedTarget

ERASURE_STRATEGIES = ("nullify", "hash", "redact", "delete")
TEXT_STRATEGIES = ("hash", "redact")
REDACTED = "***REDACTED***"
SUBJECT = "__ll_subject"
_HEX64 = "^[0-9a-f]{64}$"


@dataclass(frozen=True)
class ErasureRequest:
    contract: str
    subject_column: str
    subject_ids: tuple[str, ...]  # distinct canonical texts of the typed ids (what the evidence hashes)
    strategy: str
    columns: tuple[str, ...]
    reason: str | None = None
    requested_by: str | None = None
    # the ids as values of the subject column's type (set by typed_subject_ids before any table is touched)
    subject_values: tuple[Any, ...] = ()
    erasure_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    requested_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def run_id(self) -> str:
        return f"erasure-{self.erasure_id}"

    @property
    def subject_ids_sha256(self) -> str:
        """SHA-256 of the sorted ids joined by newlines: proves which set was erased without holding it."""
        return hashlib.sha256("\n".join(sorted(self.subject_ids)).encode("utf-8")).hexdigest()


@dataclass
class TableOutcome:
    """What one table's commit did. ``status``: succeeded, skipped (no such table), failed."""

    table: str
    role: str  # target | quarantine
    status: str
    rows_affected: int = 0
    columns: tuple[str, ...] = ()
    executed_at: datetime | None = None
    snapshot: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


def _stamp(request_run_id: str, contract: str, role: str) -> CommitStamp:
    return CommitStamp(run_id=request_run_id, contract=contract, role=role)


def _column_type(schema: StructType, column: str) -> Any:
    for f in schema.fields:
        if f.name == column:
            return f.dataType
    return None


def _spark_value(strategy: str, column: str, data_type: Any, salt: str) -> str:
    col = f"t.{quote_ident(column)}"
    if strategy == "nullify":
        return f"CASE WHEN false THEN {col} END"  # NULL of the column's own type, whatever it is
    if strategy == "redact":
        return f"CASE WHEN {col} IS NOT NULL THEN {sql_string(REDACTED)} END"
    return (
        f"CASE WHEN {col} RLIKE {sql_string(_HEX64)} THEN {col} "
        f"ELSE sha2(concat({sql_string(salt)}, {col}), 256) END"
    )


# §5.3 cast-failure messages quote the raw value (`Rule failed: dob_type (cannot cast "1990-13-45" to
# date)`): erasing `dob` in a quarantine table rewrites that quote too, or the erased value outlives it
ERRORS_COLUMN = "_lakelogic_errors"


def _erased_quote(strategy: str) -> str:
    """What a message shows in place of an erased raw value (as the JSON a message quotes)."""
    return "null" if strategy == "nullify" else f'"{REDACTED}"'


def _cast_message_prefix(column: str) -> str:
    from lakelogic.plan.naming import sanitize_name

    return f"Rule failed: {sanitize_name(column + '_type')} (cannot cast "


def _spark_errors_value(strategy: str, columns: tuple[str, ...]) -> str:
    """The messages with each erased column's quoted raw value replaced (the type after the last
    `` to `` stays: type names hold no such text)."""
    shown = _erased_quote(strategy)
    cases = " ".join(
        f"WHEN startswith(m, {sql_string(prefix)}) "
        f"THEN concat({sql_string(prefix + shown + ' to ')}, substring_index(m, ' to ', -1))"
        for prefix in (_cast_message_prefix(c) for c in columns)
    )
    return f"transform(t.{quote_ident(ERRORS_COLUMN)}, m -> CASE {cases} ELSE m END)"


def _datafusion_errors_value(strategy: str, columns: tuple[str, ...]) -> str:
    """:func:`_spark_errors_value` in DataFusion, which has no lambdas: the messages joined by NUL (no
    message holds one: raw values are quoted as JSON), rewritten by a regular expression per column,
    split again."""
    col = f"t.{_df_ident(ERRORS_COLUMN)}"
    text = f"array_to_string({col}, chr(0))"
    shown = _erased_quote(strategy)
    for column in columns:
        prefix = re.escape(_cast_message_prefix(column))
        pattern = rf"({prefix})[^\x00]*( to [^\x00 ]+)"  # the regex's own \x00 escape: no NUL in the SQL
        text = f"regexp_replace({text}, {_df_string(pattern)}, {_df_string('${1}' + shown + '${2}')}, 'g')"
    return f"CASE WHEN cardinality({col}) > 0 THEN string_to_array({text}, chr(0)) ELSE {col} END"


def _datafusion_value(strategy: str, column: str, salt: str) -> str:
    col = f"t.{_df_ident(column)}"
    if strategy == "nullify":
        return "NULL"
    if strategy == "redact":
        return f"CASE WHEN {col} IS NOT NULL THEN {_df_string(REDACTED)} END"
    return (
        f"CASE WHEN {col} IS NULL THEN NULL WHEN regexp_like({col}, {_df_string(_HEX64)}) THEN {col} "
        f"ELSE encode(sha256(concat({_df_string(salt)}, {col})), 'hex') END"
    )


def _df_string(text: str) -> str:
    """A DataFusion (ANSI) string literal: quotes doubled, backslashes literal (not Spark's escaping)."""
    return "'" + text.replace("'", "''") + "'"


def _df_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_columns(schema: StructType, request: ErasureRequest) -> tuple[str, ...]:
    """The request's columns this table has; a text strategy on a non-text column is an error."""
    present = tuple(c for c in request.columns if _column_type(schema, c) is not None)
    if request.strategy in TEXT_STRATEGIES:
        wrong = [c for c in present if _column_type(schema, c).simpleString() != "string"]
        if wrong:
            raise TableError(
                f"strategy {request.strategy} writes text, but {', '.join(wrong)} "
                f"{'is' if len(wrong) == 1 else 'are'} not a string column",
                hint="use strategy nullify (or delete) for non-text columns, or leave them out of columns",
            )
    return present


def erase_table(
    spark: SparkSession, target: ResolvedTarget, request: ErasureRequest, *, role: str, salt: str
) -> TableOutcome:
    """Apply ``request`` to one table in one commit. Errors become a failed outcome, never an exception,
    so the other table is still handled and the evidence still written."""
    outcome = TableOutcome(table=target.name, role=role, status="failed")
    try:
        _erase(spark, target, request, outcome, salt)
    except Exception as exc:  # noqa: BLE001 - reported per table and in the evidence; the caller decides
        outcome.status = "failed"
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.executed_at = datetime.now(UTC)
    return outcome


def _erase(
    spark: SparkSession, target: ResolvedTarget, request: ErasureRequest, outcome: TableOutcome, salt: str
) -> None:
    from lakelogic.tables.spark_write import adapter_for

    adapter: Any = adapter_for(spark, target)
    if not adapter.exists():
        outcome.status = "skipped"
        outcome.error = "the table does not exist"
        return
    schema = adapter.schema()
    subject_type = _column_type(schema, request.subject_column)
    if subject_type is None:
        raise TableError(f"the table has no column {request.subject_column!r}")
    columns = () if request.strategy == "delete" else _check_columns(schema, request)
    outcome.columns = columns
    if request.strategy != "delete" and not columns:
        outcome.status = "skipped"
        outcome.error = f"the table has none of the columns {', '.join(request.columns)}"
        return
    job = _TableJob(
        adapter, request, columns, subject_type, salt, _stamp(request.run_id, request.contract, "erasure")
    )
    kind = type(adapter).__name__
    if kind == "DeltaRsTable":
        outcome.rows_affected, outcome.snapshot = _delta_rs_merge(job)
    elif kind in ("IcebergTable", "NativeDeltaTable"):
        outcome.rows_affected, outcome.snapshot = _spark_merge(spark, job)
    else:
        raise UnsupportedError(
            f"erasure needs a table format with row-level commits; {target.format} at {target.name} has none",
            hint="materialize the contract as iceberg or delta",
        )
    outcome.status = "succeeded"


@dataclass(frozen=True)
class _TableJob:
    """One table's erasure: its adapter, the request, the columns it rewrites there, the subject
    column's type in that table, the hash salt and the commit stamp."""

    adapter: Any
    request: ErasureRequest
    columns: tuple[str, ...]
    subject_type: Any
    salt: str
    stamp: CommitStamp


def _spark_merge(spark: SparkSession, job: _TableJob) -> tuple[int, str | None]:
    adapter, request, columns, salt, stamp = job.adapter, job.request, job.columns, job.salt, job.stamp
    from pyspark.sql.types import StructField, StructType

    view = f"_ll_subjects_{uuid.uuid4().hex[:12]}"
    # the request's own ids (a list the caller handed in), already of the column's type; not table data
    ids = spark.createDataFrame(
        [(v,) for v in request.subject_values], StructType([StructField(SUBJECT, job.subject_type)])
    )
    ids.createOrReplaceTempView(view)
    subject = quote_ident(request.subject_column)
    typed = f"(SELECT DISTINCT {SUBJECT} FROM {view})"
    on = f"t.{subject} = s.{SUBJECT}"
    schema = adapter.schema()
    try:
        matched = spark.sql(
            f"SELECT count(*) AS n FROM {adapter.sql_name} t LEFT SEMI JOIN {typed} s ON {on}"
        )
        first = matched.first()
        rows = int(first["n"]) if first is not None else 0
        if rows == 0:
            return 0, None
        action = "DELETE"
        if request.strategy != "delete":
            values = {c: _spark_value(request.strategy, c, _column_type(schema, c), salt) for c in columns}
            if _column_type(schema, ERRORS_COLUMN) is not None:
                values[ERRORS_COLUMN] = _spark_errors_value(request.strategy, columns)
            action = "UPDATE SET " + ", ".join(f"t.{quote_ident(c)} = {v}" for c, v in values.items())
        statement = f"MERGE INTO {adapter.sql_name} t USING {typed} s ON {on} WHEN MATCHED THEN {action}"
        adapter.commit_sql(statement, stamp)
    finally:
        spark.catalog.dropTempView(view)
    return rows, _snapshot(adapter, stamp)


def _snapshot(adapter: Any, stamp: CommitStamp) -> str | None:
    if type(adapter).__name__ == "IcebergTable":
        return adapter.snapshot_of(stamp)  # type: ignore[no-any-return]
    return str(adapter.version())


def _delta_rs_merge(job: _TableJob) -> tuple[int, str | None]:
    import pyarrow as pa
    from deltalake.transaction import CommitProperties

    adapter, request, columns, salt, stamp = job.adapter, job.request, job.columns, job.salt, job.stamp
    table = adapter._table()
    arrow_type = pa.schema(table.schema().to_arrow()).field(request.subject_column).type
    values = pa.array(list(request.subject_values)).cast(arrow_type)
    source = pa.table({SUBJECT: values})
    predicate = f"t.{_df_ident(request.subject_column)} = s.{SUBJECT}"
    merger = table.merge(
        source=source,
        predicate=predicate,
        source_alias="s",
        target_alias="t",
        commit_properties=CommitProperties(custom_metadata=stamp.properties()),
    )
    if request.strategy == "delete":
        metrics = merger.when_matched_delete().execute()
        rows = int(metrics.get("num_target_rows_deleted", 0))
    else:
        updates = {c: _datafusion_value(request.strategy, c, salt) for c in columns}
        if ERRORS_COLUMN in pa.schema(table.schema().to_arrow()).names:
            updates[ERRORS_COLUMN] = _datafusion_errors_value(request.strategy, columns)
        metrics = merger.when_matched_update(updates=updates).execute()
        rows = int(metrics.get("num_target_rows_updated", 0))
    return rows, adapter.version()  # type: ignore[no-any-return]


def _older_than_spark(column: str, data_type: Any, cutoff: datetime) -> str:
    """``column`` before ``cutoff`` (UTC) whatever the session time zone; a date column compares with the
    cutoff's UTC date (a row dated exactly then is kept, at any hour of the run)."""
    col = quote_ident(column)
    if data_type.simpleString() == "date":
        return f"{col} < DATE {sql_string(cutoff.date().isoformat())}"
    if data_type.simpleString() == "timestamp_ntz":  # wall-clock values: the cutoff's UTC wall clock
        return f"{col} < CAST({sql_string(cutoff.strftime('%Y-%m-%d %H:%M:%S.%f'))} AS TIMESTAMP_NTZ)"
    return f"{col} < CAST({sql_string(cutoff.strftime('%Y-%m-%dT%H:%M:%S.%fZ'))} AS TIMESTAMP)"


def _older_than_datafusion(column: str, arrow_type: Any, cutoff: datetime) -> str:
    col = _df_ident(column)
    text = str(arrow_type)
    if text.startswith("date"):
        return f"{col} < CAST({_df_string(cutoff.date().isoformat())} AS DATE)"
    zone = 'Some("UTC")' if getattr(arrow_type, "tz", None) else "None"
    literal = _df_string(cutoff.strftime("%Y-%m-%dT%H:%M:%S.%f") + ("Z" if zone != "None" else ""))
    return f"{col} < arrow_cast({literal}, {_df_string(f'Timestamp(Microsecond, {zone})')})"


def delete_older_than(
    spark: SparkSession,
    target: ResolvedTarget,
    *,
    column: str,
    cutoff: datetime,
    contract: str,
    dry_run: bool,
) -> TableOutcome:
    """Retention: delete the rows with ``column < cutoff`` in one commit (``dry_run``: count only)."""
    from lakelogic.tables.spark_write import adapter_for

    outcome = TableOutcome(table=target.name, role="target", status="failed")
    adapter: Any = adapter_for(spark, target)
    if not adapter.exists():
        outcome.status, outcome.error = "skipped", "the table does not exist"
        return outcome
    data_type = _column_type(adapter.schema(), column)
    if data_type is None:
        raise TableError(f"{target.name} has no column {column!r}")
    if data_type.simpleString() not in ("date", "timestamp", "timestamp_ntz"):
        raise TableError(
            f"retention column {column!r} is {data_type.simpleString()}, not a date or timestamp",
            hint="point compliance.retention.column at a date or timestamp column",
        )
    condition = _older_than_spark(column, data_type, cutoff)
    kind = type(adapter).__name__
    if kind not in ("IcebergTable", "NativeDeltaTable", "DeltaRsTable"):
        raise UnsupportedError(
            f"retention deletes need a table format with row-level commits; {target.format} has none",
            hint="materialize the contract as iceberg or delta",
        )
    expired = adapter.read().where(condition).count()
    outcome.rows_affected = expired
    outcome.status = "succeeded"
    if dry_run or expired == 0:
        return outcome
    stamp = _stamp(f"retention-{uuid.uuid4()}", contract, "retention")
    if kind == "DeltaRsTable":
        import pyarrow as pa
        from deltalake.transaction import CommitProperties

        table = adapter._table()
        arrow_type = pa.schema(table.schema().to_arrow()).field(column).type
        metrics = table.delete(
            _older_than_datafusion(column, arrow_type, cutoff),
            commit_properties=CommitProperties(custom_metadata=stamp.properties()),
        )
        outcome.rows_affected = int(metrics.get("num_deleted_rows", expired))
    else:
        adapter.commit_sql(f"DELETE FROM {adapter.sql_name} WHERE {condition}", stamp)
    outcome.snapshot = _snapshot(adapter, stamp)
    outcome.executed_at = datetime.now(UTC)
    return outcome
