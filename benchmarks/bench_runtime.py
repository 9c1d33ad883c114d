"""Runtime overhead of LakeLogic over bare Spark, on the same data, in one process and one session.

* floor: ``spark.read.parquet(source).write.parquet(out)`` — the least any pipeline must do. With
  ``--source-format csv`` the source is the generator's CSV copy and the floor reads it as text with its
  header (no types, no inference) and writes Parquet.
* lakelogic: ``DataProcessor(contract).run(source, output_good=..., output_bad=...)`` with the benchmark
  contract (pre transformations, 11 explicit row rules plus required/type checks, dataset rules), writing
  good and quarantined rows.
* handwritten (``--handwritten``): a naive hand-written PySpark split with cache of the same contract
  (``handwritten_split.py``), the reference the issue compares against.
* expert (``--expert``): the same work tuned by hand into one projection and one partitioned write, with
  none of LakeLogic's guarantees (``expert_split.py``): what plain Spark can reach on this contract.

The JVM is warmed up first on a small slice (both paths). Then each path runs ``--repeat`` times,
alternating; the best and every time are printed, with the ratio of the bests. Wall time is noisy on a
shared machine, so the CPU seconds the local JVM spent (all its threads: tasks, JIT, GC; read from
/proc on Linux) are printed and compared too.

    .venv/bin/python benchmarks/bench_runtime.py --rows 10000000 [--source-format csv]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

# run as a script: its own directory is on sys.path
from expert_split import expert_run
from generate_orders import dataset_dir, generate, is_csv_copy, read_orders, write_orders
from handwritten_split import handwritten_run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HERE = Path(__file__).resolve().parent
CONTRACT = HERE / "contracts" / "silver_orders.yaml"
OUT = HERE / "out" / "runtime"


def floor_run(spark: SparkSession, source: Path, out: Path) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    reader = spark.read.option("header", "true").csv if is_csv_copy(source) else spark.read.parquet
    reader(str(source)).write.mode("overwrite").parquet(str(out / "floor"))
    return {}


def lakelogic_run(spark: SparkSession, source: Path, out: Path) -> dict[str, Any]:
    from lakelogic import DataProcessor

    shutil.rmtree(out, ignore_errors=True)
    overrides = {"source.format": "csv"} if is_csv_copy(source) else None
    result = DataProcessor(str(CONTRACT), spark=spark, overrides=overrides).run(
        str(source), output_good=out / "good", output_bad=out / "bad"
    )
    report = result.report
    if report.status == "failed":
        raise RuntimeError(f"the LakeLogic run failed: {report.error}")
    counts = report.counts
    steps = {k: round(v, 2) for k, v in report.timings.items() if v >= 0.01}
    return {
        "status": str(report.status),
        "good": counts.good,
        "quarantined": counts.quarantined,
        "steps (s)": steps,
    }


def jvm_cpu_reader(spark: SparkSession) -> Callable[[], float | None]:
    """CPU seconds (user + system) of the local JVM so far, or None where /proc is not available."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    stat = Path(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/stat")
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def read() -> float | None:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15 of stat)

    return read


def timed(
    fn: Callable[[], dict[str, Any]], cpu: Callable[[], float | None]
) -> tuple[float, float | None, dict[str, Any]]:
    cpu_before, started = cpu(), time.perf_counter()
    info = fn()
    seconds, cpu_after = time.perf_counter() - started, cpu()
    used = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return seconds, used, info


def warm_up(
    spark: SparkSession,
    source: Path,
    paths: dict[str, Callable[[SparkSession, Path, Path], dict[str, Any]]],
) -> None:
    """JIT, class loading and Parquet/codegen caches: run every path once on a small slice."""
    sample = OUT / "warmup_source" / source.name
    write_orders(read_orders(spark, source).limit(20_000), sample)
    for name, run in paths.items():
        run(spark, sample, OUT / f"warmup_{name}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--handwritten", action="store_true", help="also time a naive hand-written split with cache"
    )
    parser.add_argument(
        "--expert",
        action="store_true",
        help="also time an expert's single-pass split without LakeLogic's guarantees (expert_split.py)",
    )
    parser.add_argument(
        "--source-format",
        choices=("parquet", "csv"),
        default="parquet",
        help="read the generator's Parquet copy (default) or its CSV copy, a typical landing zone",
    )
    args = parser.parse_args()
    paths: dict[str, Callable[[SparkSession, Path, Path], dict[str, Any]]] = {
        "floor": floor_run,
        "lakelogic": lakelogic_run,
    }
    if args.handwritten:
        paths["handwritten"] = handwritten_run
    if args.expert:
        paths["expert"] = expert_run

    from lakelogic.engines.spark.session import spark_session

    spark = spark_session()
    csv = args.source_format == "csv"
    source = generate(spark, args.rows, csv=csv)[args.source_format]
    print(f"data: {dataset_dir(args.rows)} ({args.rows:,} rows)  master: {spark.sparkContext.master}")
    warm_up(spark, source, paths)

    cpu = jvm_cpu_reader(spark)
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpus: dict[str, list[float]] = {name: [] for name in paths}
    info: dict[str, Any] = {}
    for attempt in range(1, args.repeat + 1):
        for name, run in paths.items():
            seconds, used, info_ = timed(partial(run, spark, source, OUT / name), cpu)
            times[name].append(seconds)
            if used is not None:
                cpus[name].append(used)
            if name == "lakelogic":
                info = info_
        wall = "  ".join(f"{name} {times[name][-1]:.2f}s" for name in paths)
        used_cpu = " / ".join(f"{cpus[name][-1]:.2f}s" for name in paths if cpus[name])
        print(f"run {attempt}: {wall}" + (f"  (JVM CPU {used_cpu})" if used_cpu else ""))

    labels = {
        "floor": "floor (read+write)",
        "lakelogic": "lakelogic run",
        "handwritten": "hand-written split",
        "expert": "expert single pass",
    }
    print()
    print(f"rows                   {args.rows:,}")
    print(f"lakelogic result       {info}")
    for name in paths:
        all_times = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"{labels[name]:<22} best {min(times[name]):.2f}s   all {all_times}")
    for name in paths:
        if name != "floor":
            print(f"ratio {name}/floor".ljust(28) + f"{min(times[name]) / min(times['floor']):.2f}x (wall)")
    if all(cpus[name] for name in paths):
        for name in paths:
            all_cpu = ", ".join(f"{t:.2f}" for t in cpus[name])
            print(f"{labels[name] + ' CPU':<22} best {min(cpus[name]):.2f}s   all {all_cpu}")
        for name in paths:
            if name != "floor":
                ratio = min(cpus[name]) / min(cpus["floor"])
                print(f"ratio {name}/floor".ljust(28) + f"{ratio:.2f}x (JVM CPU)")


if __name__ == "__main__":
    main()
