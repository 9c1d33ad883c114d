"""Generate N synthetic orders with Spark itself (no Python loops), for the benchmarks.

Every value is a function of the row id through ``xxhash64``, so the data is identical for a given N whatever
the partitioning or machine. About 6% of the rows break at least one rule of
``benchmarks/contracts/silver_orders.yaml`` (bad e-mails, negative amounts, unknown statuses, unparseable
timestamps, NULL required values, out-of-range quantities); most other rows carry cosmetic mess (case,
whitespace) that the contract's pre transformations clean up.

    .venv/bin/python benchmarks/generate_orders.py --rows 10000000 [--csv] [--force]

Output: benchmarks/data/orders_<rows>/parquet/ (and csv/ with --csv).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DATA_ROOT = Path(__file__).resolve().parent / "data"

# Per-mille bands of the defect draw: [low, high) -> defect. Together 60 per mille = 6% of the rows.
DEFECT_BANDS: dict[str, tuple[int, int]] = {
    "bad_email": (0, 12),
    "negative_amount": (12, 24),
    "unknown_status": (24, 34),
    "unparseable_ts": (34, 44),
    "null_customer": (44, 52),
    "null_order_id": (52, 56),
    "bad_quantity": (56, 60),
}
DEFECT_PER_MILLE = 60

STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled", "returned"]
CHANNELS = ["store", "web", "app"]
CURRENCIES = ["EUR", "EUR", "EUR", "USD", "GBP"]
COUNTRIES = ["DE", "FR", "NL", "GB", "ES", "IT", "US", "SE"]


# The Parquet copy's column types, as a hand-written job reading the CSV copy would declare them.
ORDERS_SCHEMA_DDL = (
    "order_id STRING, customer_id STRING, customer_email STRING, order_ts STRING, status STRING, "
    "amount DOUBLE, quantity INT, discount_pct DOUBLE, currency STRING, channel STRING, country STRING"
)


def dataset_dir(rows: int) -> Path:
    return DATA_ROOT / f"orders_{rows}"


def is_csv_copy(path: Path) -> bool:
    return path.name == "csv"


def read_orders(spark: SparkSession, path: Path) -> DataFrame:
    """The generated orders from either copy; the CSV copy is read with the Parquet copy's types."""
    if is_csv_copy(path):
        return spark.read.schema(ORDERS_SCHEMA_DDL).option("header", "true").csv(str(path))
    return spark.read.parquet(str(path))


def write_orders(frame: DataFrame, path: Path) -> None:
    """Write ``frame`` in the format ``path`` names (the CSV copy's directory is called ``csv``)."""
    writer = frame.write.mode("overwrite")
    if is_csv_copy(path):
        writer.option("header", "true").csv(str(path))
    else:
        writer.parquet(str(path))


def _draw(salt: str, modulo: int) -> Column:
    """A deterministic pseudo-random integer in [0, modulo) per row and salt."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(modulo))


def _pick(values: list[str], salt: str) -> Column:
    from pyspark.sql import functions as F

    return F.element_at(F.array(*[F.lit(v) for v in values]), (_draw(salt, len(values)) + 1).cast("int"))


def _when_defect(defect: str, bad: Column, good: Column) -> Column:
    from pyspark.sql import functions as F

    low, high = DEFECT_BANDS[defect]
    return F.when(F.col("_defect").between(low, high - 1), bad).otherwise(good)


def orders_frame(spark: SparkSession, rows: int) -> DataFrame:
    """The synthetic orders as a lazy DataFrame over ``spark.range(rows)``."""
    from pyspark.sql import functions as F

    base = spark.range(rows).withColumn("_defect", _draw("defect", 1000))
    customer_number = _draw("customer", max(rows // 20, 1000))
    order_ts = F.timestamp_seconds(F.lit(1_767_225_600) + _draw("ts", 300 * 86_400))  # 2026-01-01 + 300 d
    amount = F.round((_draw("amount", 50_000) + 100) / 100.0, 2)
    status = _pick(STATUSES, "status")
    # cosmetic mess on 10% of the statuses: upper case and padding, fixed by the contract's trim/lower
    messy_status = F.when(
        _draw("mess", 10) == 0, F.concat(F.lit(" "), F.upper(status), F.lit(" "))
    ).otherwise(status)
    email = F.concat(F.lit("customer"), customer_number.cast("string"), F.lit("@example.com"))
    return base.select(
        _when_defect(
            "null_order_id", F.lit(None).cast("string"), F.format_string("O%010d", F.col("id"))
        ).alias("order_id"),
        _when_defect(
            "null_customer", F.lit(None).cast("string"), F.format_string("C%08d", customer_number)
        ).alias("customer_id"),
        _when_defect("bad_email", F.regexp_replace(email, "@", " at "), email).alias("customer_email"),
        _when_defect(
            "unparseable_ts", F.lit("31/13/2026 25:61"), F.date_format(order_ts, "yyyy-MM-dd'T'HH:mm:ss'Z'")
        ).alias("order_ts"),
        _when_defect("unknown_status", F.lit("lost_in_transit"), messy_status).alias("status"),
        _when_defect("negative_amount", -amount, amount).alias("amount"),
        _when_defect("bad_quantity", F.lit(0).cast("int"), (_draw("qty", 5) + 1).cast("int")).alias(
            "quantity"
        ),
        (
            F.element_at(
                F.array(*[F.lit(v) for v in (0.0, 0.0, 5.0, 10.0)]), (_draw("disc", 4) + 1).cast("int")
            )
        ).alias("discount_pct"),
        _pick(CURRENCIES, "currency").alias("currency"),
        _pick(CHANNELS, "channel").alias("channel"),
        _pick(COUNTRIES, "country").alias("country"),
    )


def generate(spark: SparkSession, rows: int, *, csv: bool = False, force: bool = False) -> dict[str, Path]:
    """Write the data set (Parquet, optionally CSV) unless it already exists; return the paths."""
    target = dataset_dir(rows)
    paths = {"parquet": target / "parquet"}
    if csv:
        paths["csv"] = target / "csv"
    frame = orders_frame(spark, rows)
    for path in paths.values():
        if (path / "_SUCCESS").exists() and not force:
            continue
        write_orders(frame, path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--csv", action="store_true", help="also write a CSV copy")
    parser.add_argument("--force", action="store_true", help="regenerate even if the data exists")
    args = parser.parse_args()

    from lakelogic.engines.spark.session import spark_session

    spark = spark_session()
    started = time.perf_counter()
    paths = generate(spark, args.rows, csv=args.csv, force=args.force)
    elapsed = time.perf_counter() - started
    written = spark.read.parquet(str(paths["parquet"]))
    defects = written.filter(
        "order_id IS NULL OR customer_id IS NULL OR customer_email NOT LIKE '%@%' OR amount < 0 "
        "OR status = 'lost_in_transit' OR order_ts LIKE '31/13/%' OR quantity < 1"
    ).count()
    print(f"{args.rows:,} orders -> {', '.join(str(p) for p in paths.values())} in {elapsed:.1f}s")
    print(f"rows breaking at least one rule: {defects:,} ({defects / max(args.rows, 1):.2%})")


if __name__ == "__main__":
    main()
