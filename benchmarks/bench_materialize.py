"""Cost of the write strategies: append vs merge vs SCD2 of a 1% batch into an N-row Iceberg table.

Setup (not timed): an N-row customer table is generated with ``spark.range`` and, per strategy, a fresh
Iceberg copy is created in the embedded catalog (namespace ``bench``): a plain copy for append and merge, and
for SCD2 a table built by the SCD2 strategy itself (so its version columns are exactly what the strategy
expects). The batch has N/100 rows: half update existing keys (new segment and balance, later
``updated_at``), half are new keys. The updated keys are spread over the whole table, or with
``--clustered`` they are the most recent ones: then the merge and SCD2 scans read only the files of that
key range (tables/key_range.py), as for a batch of recent orders.

The batch is handed to the write as Parquet files (``benchmarks/out/materialize/``), as a contract run hands
over its staged good rows; append, merge and SCD2 all read the same files.

Timed: one ``lakelogic.tables.spark_write.write_frame`` call per strategy (one Iceberg commit each, stamped
like a real run, and given what a contract run knows about its good rows: their count and, from the
implied primary-key ``unique`` rule, that their keys are unique). Each is repeated on a fresh
copy ``--repeat`` times; best and all times are printed with the ratios merge/append and scd2/merge.

    .venv/bin/python benchmarks/bench_materialize.py --rows 10000000
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from lakelogic.tables.spark_write import WriteOutcome
    from lakelogic.tables.spec import WriteSpec

NAMESPACE = "bench"
STAGED = Path(__file__).resolve().parent / "out" / "materialize"
SEGMENTS = ["consumer", "small_business", "enterprise", "public_sector"]
BASE_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z


def customers(spark: SparkSession, start: int, count: int, *, salt: str, offset_seconds: int) -> DataFrame:
    """``count`` customer rows with ids ``start .. start+count-1``; attributes depend on id and salt."""
    from pyspark.sql import functions as F

    def draw(name: str, modulo: int) -> Column:
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt + name)), F.lit(modulo))

    segments = F.array(*[F.lit(s) for s in SEGMENTS])
    return spark.range(start, start + count).select(
        F.col("id").alias("customer_id"),
        F.format_string("customer%d@example.com", F.col("id")).alias("email"),
        F.element_at(segments, (draw("segment", len(SEGMENTS)) + 1).cast("int")).alias("segment"),
        F.element_at(
            F.array(*[F.lit(c) for c in ("DE", "FR", "NL", "GB")]), (draw("c", 4) + 1).cast("int")
        ).alias("country"),
        (draw("balance", 10_000_000) / 100).cast("decimal(12,2)").alias("balance"),
        F.timestamp_seconds(F.lit(BASE_TIME + offset_seconds) + draw("ts", 86_400)).alias("updated_at"),
    )


def batch_frame(spark: SparkSession, rows: int, *, clustered: bool = False) -> DataFrame:
    """1% of ``rows``: half updates of existing keys, half new keys. The updated keys are spread over the
    whole table, or with ``clustered`` the most recent ones (the highest ids, as for recent orders)."""
    from pyspark.sql import functions as F

    size = max(rows // 100, 2)
    updates = size // 2
    stride = max(rows // updates, 1)
    if clustered:
        changed = customers(spark, rows - updates, updates, salt="v2", offset_seconds=30 * 86_400)
    else:
        changed = (
            customers(spark, 0, rows, salt="v2", offset_seconds=30 * 86_400)
            .where((F.col("customer_id") % stride) == 0)
            .limit(updates)
        )
    inserted = customers(spark, rows, size - updates, salt="v1", offset_seconds=30 * 86_400)
    return changed.unionByName(inserted)


def specs(as_of: datetime) -> dict[str, WriteSpec]:
    from lakelogic.tables.spec import Scd2Spec, WriteSpec

    keys = ("customer_id",)
    scd2 = Scd2Spec(
        business_key=keys,
        timestamp_field="updated_at",
        track_columns=("segment", "country", "balance"),
        version_column="version",
    )
    return {
        "append": WriteSpec(strategy="append", as_of=as_of),
        "merge": WriteSpec(strategy="merge", primary_key=keys, as_of=as_of),
        "scd2": WriteSpec(strategy="scd2", primary_key=keys, scd2=scd2, as_of=as_of),
    }


def write(spark: SparkSession, frame: DataFrame, table: str, spec: WriteSpec) -> WriteOutcome:
    from lakelogic.tables.spark_write import write_frame
    from lakelogic.tables.stamp import CommitStamp
    from lakelogic.tables.target import ResolvedTarget

    stamp = CommitStamp(run_id=str(uuid.uuid4()), contract="bench_materialize")
    return write_frame(spark, frame, ResolvedTarget("table", table, "iceberg"), spec, stamp)


def table_name(name: str) -> str:
    from lakelogic.engines.spark.session import default_catalog

    return f"{default_catalog()}.{NAMESPACE}.{name}"


def batch_name(rows: int, *, clustered: bool) -> str:
    return table_name(f"batch_{'clustered_' if clustered else ''}{rows}")


def prepare_sources(
    spark: SparkSession, rows: int, spec_by_strategy: dict[str, WriteSpec], *, clustered: bool
) -> None:
    """Build (once per ROWS) the plain base table, the SCD2 base table and the batch, all in Iceberg."""
    from lakelogic.engines.spark.session import default_catalog

    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {default_catalog()}.{NAMESPACE}")
    base, scd2_base = (table_name(f"{n}_{rows}") for n in ("base", "scd2_base"))
    batch = batch_name(rows, clustered=clustered)
    if not spark.catalog.tableExists(base):
        customers(spark, 0, rows, salt="v1", offset_seconds=0).writeTo(base).using("iceberg").create()
    if not spark.catalog.tableExists(batch):
        batch_frame(spark, rows, clustered=clustered).writeTo(batch).using("iceberg").create()
    if "scd2" in spec_by_strategy and not spark.catalog.tableExists(scd2_base):
        started = time.perf_counter()
        write(spark, spark.table(base), scd2_base, spec_by_strategy["scd2"])
        print(f"setup: initial SCD2 load of {rows:,} rows in {time.perf_counter() - started:.1f}s")


def staged_batch(spark: SparkSession, rows: int, *, clustered: bool) -> DataFrame:
    """The batch as Parquet files, written once per ROWS from the batch table."""
    path = STAGED / f"batch_{'clustered_' if clustered else ''}{rows}"
    if not (path / "_SUCCESS").exists():
        spark.table(batch_name(rows, clustered=clustered)).write.mode("overwrite").parquet(str(path))
    return spark.read.parquet(str(path))


def fresh_copy(spark: SparkSession, source: str, target: str) -> None:
    """A copy with the row-level table properties LakeLogic sets when it creates a table (merge-on-read);
    a plain CTAS would be copy-on-write and make every merge rewrite whole data files."""
    from lakelogic.tables.spec import ICEBERG_ROW_LEVEL_DEFAULTS

    properties = ", ".join(f"'{k}' = '{v}'" for k, v in ICEBERG_ROW_LEVEL_DEFAULTS.items())
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    # The same file layout for every strategy's copy (8 files of disjoint key ranges, as after a sorted
    # compaction): the SCD2 base comes from an SCD2 initial load (one file per shuffle partition), the
    # plain base from spark.range.
    spark.sql(
        f"CREATE TABLE {target} USING iceberg TBLPROPERTIES ({properties}) "
        f"AS SELECT /*+ REPARTITION_BY_RANGE(8, customer_id) */ * FROM {source}"
    )


def timed_write(
    spark: SparkSession, frame: DataFrame, table: str, spec: WriteSpec
) -> tuple[float, WriteOutcome]:
    started = time.perf_counter()
    outcome = write(spark, frame, table, spec)
    return time.perf_counter() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--strategies", default="append,merge,scd2", help="comma-separated subset of append,merge,scd2"
    )
    parser.add_argument(
        "--clustered",
        action="store_true",
        help="update the most recent keys instead of keys spread over the table (key-range pruning)",
    )
    args = parser.parse_args()
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]

    from lakelogic.engines.spark.session import spark_session

    spark = spark_session()
    as_of = datetime.now(UTC)
    spec_by_strategy = {s: spec for s, spec in specs(as_of).items() if s in chosen}
    prepare_sources(spark, args.rows, spec_by_strategy, clustered=args.clustered)
    base, scd2_base = (table_name(f"{n}_{args.rows}") for n in ("base", "scd2_base"))
    batch = staged_batch(spark, args.rows, clustered=args.clustered)
    batch_rows = batch.count()
    spread = "the most recent keys" if args.clustered else "keys spread over the table"
    print(f"table {args.rows:,} rows, batch {batch_rows:,} rows (half updates of {spread}, half inserts)")

    # warm-up on a tiny table: JIT, class loading, Iceberg metadata code paths of every strategy
    small = table_name("warmup")
    for strategy, spec in spec_by_strategy.items():
        spark.sql(f"DROP TABLE IF EXISTS {small}")
        write(spark, spark.table(base).limit(1000), small, spec)
        write(spark, batch.limit(100), small, spec)
        print(f"warm-up {strategy} done")

    times: dict[str, list[float]] = {s: [] for s in spec_by_strategy}
    for attempt in range(1, args.repeat + 1):
        for strategy, spec in spec_by_strategy.items():
            target = table_name(f"target_{strategy}")
            fresh_copy(spark, scd2_base if strategy == "scd2" else base, target)
            # a contract run hands its good rows to the write with their count (observed by the run) and,
            # when its implied primary-key `unique` rule passed on them, with their keys proven unique
            hints = replace(spec, batch_rows=batch_rows, keys_unique=True)
            seconds, outcome = timed_write(spark, batch, target, hints)
            times[strategy].append(seconds)
            print(
                f"run {attempt} {strategy:<6} {seconds:7.2f}s  inserted {outcome.rows_inserted:,} "
                f"updated {outcome.rows_updated:,} versions closed {outcome.versions_closed:,}"
            )
    for strategy in spec_by_strategy:
        spark.sql(f"DROP TABLE IF EXISTS {table_name('target_' + strategy)}")

    best = {s: min(t) for s, t in times.items()}
    print()
    print(f"rows {args.rows:,}   batch {batch_rows:,}   master {spark.sparkContext.master}")
    for strategy, all_times in times.items():
        print(f"{strategy:<8} best {best[strategy]:7.2f}s   all {', '.join(f'{t:.2f}' for t in all_times)}")
    for slower, faster in (("merge", "append"), ("scd2", "merge")):
        if slower in best and faster in best:
            print(f"{slower}/{faster}".ljust(14) + f"{best[slower] / best[faster]:.2f}x")


if __name__ == "__main__":
    main()
