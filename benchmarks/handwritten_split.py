"""A naive hand-written PySpark split of the benchmark contract, as a reference point for bench_runtime.

It does what a data engineer would write by hand for ``contracts/silver_orders.yaml`` without LakeLogic:
the same cleaning ops, casts, derive and row rules (required checks included), every rule evaluated in one
projection into an array of failed rule names, the marked frame cached, then two writes (good rows, and bad
rows with their rule names) and a duplicate-key count on the good output. It has none of LakeLogic's
guarantees (no reconciliation, no per-rule counts, no categories, a cast failure is a NULL,
``current_timestamp`` may differ between the two writes): a lower bound for "a split with cache".
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from generate_orders import read_orders

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RULES = {
    "order_id_required": "order_id IS NOT NULL",
    "customer_id_required": "customer_id IS NOT NULL",
    "order_ts_required": "order_ts IS NOT NULL",
    "amount_required": "amount IS NOT NULL",
    "order_id_format": "order_id RLIKE '^O[0-9]{10}$'",
    "customer_id_format": "customer_id RLIKE '^C[0-9]{8}$'",
    "email_format": r"customer_email RLIKE '^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$'",
    "status_accepted": "status IN ('placed', 'paid', 'shipped', 'delivered', 'cancelled', 'returned')",
    "currency_accepted": "currency IN ('EUR', 'USD', 'GBP')",
    "channel_accepted": "channel IN ('store', 'web', 'app')",
    "country_accepted": "country IN ('DE', 'FR', 'NL', 'GB', 'ES', 'IT', 'US', 'SE')",
    "amount_range": "amount BETWEEN 0 AND 100000",
    "quantity_range": "quantity BETWEEN 1 AND 1000",
    "discount_pct_range": "discount_pct BETWEEN 0 AND 100",
    "order_not_in_future": "order_ts <= current_timestamp()",
    "net_not_above_gross": "net_amount <= amount * quantity",
}


def handwritten_run(spark: SparkSession, source: Path, out: Path) -> dict[str, Any]:
    """Clean, cast, derive, mark, cache, write good and bad, count duplicate keys."""
    import shutil

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    shutil.rmtree(out, ignore_errors=True)
    frame = read_orders(spark, source)
    cleaned = frame.select(
        *[
            c
            for c in frame.columns
            if c not in ("status", "currency", "channel", "country", "order_ts", "amount")
        ],
        F.lower(F.trim("status")).alias("status"),
        F.upper(F.trim("currency")).alias("currency"),
        F.lower(F.trim("channel")).alias("channel"),
        F.upper(F.trim("country")).alias("country"),
        F.col("order_ts").cast("timestamp").alias("order_ts"),
        F.col("amount").cast("decimal(12,2)").alias("amount"),
    ).withColumn(
        "net_amount",
        F.expr("CAST(round(amount * quantity * (1 - discount_pct / 100), 2) AS decimal(14,2))"),
    )
    failed = F.filter(
        F.array(
            *[F.when(~F.coalesce(F.expr(rule), F.lit(False)), F.lit(name)) for name, rule in RULES.items()]
        ),
        lambda name: name.isNotNull(),
    )
    marked = cleaned.withColumn("_errors", failed).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        marked.where(F.size("_errors") == 0).drop("_errors").write.parquet(str(out / "good"))
        marked.where(F.size("_errors") > 0).write.parquet(str(out / "bad"))
    finally:
        marked.unpersist()
    good = spark.read.parquet(str(out / "good"))
    duplicates = good.groupBy("order_id").count().where("count > 1").count()
    return {"duplicate keys": duplicates}
