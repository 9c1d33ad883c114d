"""An expert's single-pass split of the benchmark contract: how fast plain Spark can do this contract's work.

Where ``handwritten_split.py`` is what a data engineer writes first (rule names in an array, a cache, two
writes), this is what a Spark expert tunes it to: every op, cast, derive and rule of
``contracts/silver_orders.yaml`` in ONE projection, the failed rules as bits of one integer, and ONE write
job partitioned by that integer (``_qk=0`` holds the good rows), then an exact duplicate-key count on the
good rows. The timestamp is cast from its first 19 bytes (the generator writes only ``...Z`` UTC text).

It keeps none of LakeLogic's guarantees: no messages or categories, no per-rule counts, no reconciliation,
a value that fails to cast is a NULL that may pass, and the good files still sit in a partition directory.
It bounds what any engine built on Spark SQL expressions can reach on this contract; bench_runtime.py
prints its ratio to the floor next to LakeLogic's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generate_orders import read_orders
from handwritten_split import RULES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_TRIMMED = {"status": "lower", "currency": "upper", "channel": "lower", "country": "upper"}


def expert_run(spark: SparkSession, source: Path, out: Path) -> dict[str, Any]:
    """One projection, one partitioned write, one duplicate-key count."""
    from pyspark.sql import functions as F

    shutil.rmtree(out, ignore_errors=True)
    frame = read_orders(spark, source)
    typed = frame.select(
        *[c for c in frame.columns if c not in (*_TRIMMED, "order_ts", "amount")],
        *[F.expr(f"{case}(trim({c}))").alias(c) for c, case in _TRIMMED.items()],
        F.expr("CAST(CAST(substring(CAST(order_ts AS BINARY), 1, 19) AS STRING) AS TIMESTAMP)").alias(
            "order_ts"
        ),
        F.col("amount").cast("decimal(12,2)").alias("amount"),
    ).withColumn(
        "net_amount",
        F.expr("CAST(round(amount * quantity * (1 - discount_pct / 100), 2) AS decimal(14,2))"),
    )
    bits = " + ".join(
        f"CASE WHEN coalesce({rule}, false) THEN 0 ELSE {1 << i} END" for i, rule in enumerate(RULES.values())
    )
    typed.withColumn("_qk", F.expr(bits)).write.partitionBy("_qk").parquet(str(out / "split"))
    good = spark.read.parquet(str(out / "split" / "_qk=0"))
    duplicates = good.groupBy("order_id").count().where("count > 1").count()
    return {"duplicate keys": duplicates}
