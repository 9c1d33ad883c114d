"""The append-only ``_lakelogic_erasure_evidence`` table (SEMANTICS §18): one row per table an erasure
touched (or tried to), next to the contract's target.

* Iceberg target ``cat.ns.t``: the Iceberg table ``cat.ns._lakelogic_erasure_evidence``.
* Path target ``…/silver/orders``: the Delta table ``…/silver/_lakelogic_erasure_evidence`` (Spark's own
  Delta when the session has it, else delta-rs).

Subject ids are never stored: ``subject_ids_sha256`` identifies the set.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from lakelogic.tables.erasure import ErasureRequest, TableOutcome
from lakelogic.tables.target import ResolvedTarget

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EVIDENCE_TABLE = "_lakelogic_erasure_evidence"
EVIDENCE_SCHEMA = (
    "erasure_id string, run_id string, requested_at timestamp, executed_at timestamp, contract string, "
    "`table` string, subject_column string, subject_count bigint, subject_ids_sha256 string, "
    "strategy string, columns array<string>, rows_affected bigint, reason string, requested_by string, "
    "status string"
)


def evidence_location(target: ResolvedTarget) -> ResolvedTarget:
    if target.is_table:
        return ResolvedTarget("table", f"{target.namespace}.{EVIDENCE_TABLE}", "iceberg")
    parent = posixpath.dirname(target.name.rstrip("/"))
    return ResolvedTarget("path", posixpath.join(parent, EVIDENCE_TABLE), "delta")


def evidence_rows(request: ErasureRequest, outcomes: list[TableOutcome]) -> list[tuple[object, ...]]:
    return [
        (
            request.erasure_id,
            request.run_id,
            request.requested_at,
            outcome.executed_at,
            request.contract,
            outcome.table,
            request.subject_column,
            len(request.subject_ids),
            request.subject_ids_sha256,
            request.strategy,
            list(outcome.columns),
            outcome.rows_affected,
            request.reason,
            request.requested_by,
            outcome.status,
        )
        for outcome in outcomes
    ]


def write_evidence(
    spark: SparkSession, target: ResolvedTarget, request: ErasureRequest, outcomes: list[TableOutcome]
) -> str:
    """Append the evidence rows; returns where they went."""
    location = evidence_location(target)
    frame = spark.createDataFrame(evidence_rows(request, outcomes), EVIDENCE_SCHEMA)
    if location.is_table:
        if spark.catalog.tableExists(location.name):
            frame.writeTo(location.name).append()
        else:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {target.namespace}")
            frame.writeTo(location.name).using("iceberg").create()
        return location.name
    from lakelogic.engines.spark.session import has_native_delta

    if has_native_delta(spark):
        frame.write.format("delta").mode("append").save(location.name)
    else:
        import pyarrow as pa
        from deltalake import write_deltalake

        columns = list(zip(*evidence_rows(request, outcomes), strict=True))
        arrow = pa.table(
            [pa.array(list(v), t) for v, t in zip(columns, _arrow_types(), strict=True)], names=NAMES
        )
        write_deltalake(location.name, arrow, mode="append")
    return location.name


NAMES = [
    "erasure_id",
    "run_id",
    "requested_at",
    "executed_at",
    "contract",
    "table",
    "subject_column",
    "subject_count",
    "subject_ids_sha256",
    "strategy",
    "columns",
    "rows_affected",
    "reason",
    "requested_by",
    "status",
]


def _arrow_types() -> list[object]:
    import pyarrow as pa

    text, ts, count = pa.string(), pa.timestamp("us", tz="UTC"), pa.int64()
    special = {"requested_at": ts, "executed_at": ts, "subject_count": count, "rows_affected": count}
    return [pa.list_(text) if n == "columns" else special.get(n, text) for n in NAMES]
