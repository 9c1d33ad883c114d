"""Small builders shared by the Spark engine tests: in-memory contracts and runs through the public API."""

from __future__ import annotations

from typing import Any

from lakelogic.api import DataProcessor, RunResult


def contract(fields: list[dict[str, Any]], **blocks: Any) -> dict[str, Any]:
    """A minimal valid contract dict with ``fields`` and any extra top-level blocks."""
    return {
        "version": "1.0.0",
        "info": {"title": "Engine test", "table_name": "engine_test"},
        "model": {"fields": fields},
        **blocks,
    }


def run(
    spark: Any,
    doc: dict[str, Any],
    rows: list[dict[str, Any]] | Any,
    schema: str | None = None,
    **kwargs: Any,
) -> RunResult:
    frame = (
        rows
        if hasattr(rows, "schema")
        else spark.createDataFrame(rows, schema)
        if schema
        else (spark.read.json(spark.sparkContext.parallelize([_json(r) for r in rows])))
    )
    return DataProcessor(doc, spark=spark).run(frame, **kwargs)


def rows_of(frame: Any, *columns: str) -> list[tuple[Any, ...]]:
    """Rows of ``frame`` projected to ``columns``, sorted (tests only: tiny frames)."""
    picked = frame.select(*columns).collect()
    return sorted((tuple(r) for r in picked), key=lambda t: tuple(str(v) for v in t))


def _json(row: dict[str, Any]) -> str:
    import json

    return json.dumps(row)
