"""Links (SEMANTICS §4): each reference data set is loaded once per run, filtered, then projected.

Files are read with Spark (parquet default; csv/json/jsonl by type or extension); Delta goes through
Spark's Delta reader or delta-rs (small reference tables only); iceberg/table names through the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakelogic.engines.spark.link_cache import LinkCache
from lakelogic.errors import PlanError, SourceError
from lakelogic.plan.sqlutil import first_line, quote_ident
from lakelogic.plan.steps import LoadLink
from lakelogic.tables.delta_files import read_delta


def _link_format(step: LoadLink) -> str:
    """The compiler already chose: the written ``type``, else a recognised path extension, else parquet
    (SEMANTICS §4); an explicit type is never overridden by the extension."""
    kind = (step.type or "parquet").lower()
    return {"jsonl": "json", "ndjson": "json"}.get(kind, kind)


def load_link(spark: SparkSession, step: LoadLink) -> DataFrame:
    kind = _link_format(step)
    try:
        if step.table or kind in ("iceberg", "table"):
            name = (step.table or step.path or "").removeprefix("table:")
            frame = spark.table(name) if "/" not in name else spark.read.format("iceberg").load(name)
        elif kind == "delta":
            frame = read_delta(spark, str(step.path))
        elif kind == "csv":
            # quoted values may span lines (RFC 4180), as in CSV sources: read line by line, such a
            # value was cut short and its rest became a row of its own
            reader = spark.read.option("header", "true").option("inferSchema", "true")
            frame = reader.option("multiLine", "true").csv(str(step.path))
        elif kind == "json":
            frame = spark.read.json(str(step.path))
            if frame.columns == [_SPARK_CORRUPT]:  # no line parsed: a pretty-printed document?
                whole = spark.read.option("multiLine", "true").json(str(step.path))
                if _SPARK_CORRUPT not in whole.columns and not _second_document(step):
                    frame = whole
            _refuse_malformed_json(step, frame)
        elif kind in ("parquet", "orc"):
            frame = spark.read.format(kind).load(str(step.path))
        else:
            raise PlanError(f"link {step.name!r}: unsupported type {step.type!r}", yaml_path=step.yaml_path)
    except (PlanError, SourceError):
        raise
    except Exception as exc:  # converted: the report names the link and path, not a JVM trace
        raise SourceError(
            f"link {step.name!r} could not be read from {step.path or step.table}: {exc}"
        ) from exc
    if step.filter:
        try:
            frame = frame.where(step.filter)
        except AnalysisException as exc:
            raise _link_sql_error(step, "filter", exc, frame) from exc
    if step.columns:
        missing = [c for c in step.columns if c not in frame.columns]
        if missing:
            raise PlanError(
                f"link {step.name!r}: unknown column(s) {', '.join(missing)}",
                yaml_path=f"{step.yaml_path}.columns",
            )
        frame = frame.select(*[F.col(quote_ident(c)) for c in step.columns])
    if step.query:
        view = f"__ll_link_{step.name}_{id(frame)}"
        # over a projection: dropping a view uncaches every cached plan equal to its own, and the plain
        # read may be another link's cached frame (the same path without a query)
        frame.select("*").createOrReplaceTempView(view)
        try:
            frame = spark.sql(step.query.replace("{link}", view).replace("{" + step.name + "}", view))
        except AnalysisException as exc:
            raise _link_sql_error(step, "query", exc, frame) from exc
        finally:
            spark.catalog.dropTempView(view)
    return F.broadcast(frame) if step.broadcast else frame


_SPARK_CORRUPT = "_corrupt_record"


def _second_document(step: LoadLink) -> bool:
    """A local link file holding more than one JSON document (Spark's multiLine read keeps the first)."""
    from pathlib import Path

    from lakelogic.sources.json_trailing import trailing_records

    path = str(step.path or "")
    return Path(path).is_file() and bool(trailing_records([path], {"multiLine": "true"}))


def _refuse_malformed_json(step: LoadLink, frame: DataFrame) -> None:
    """Reference data with a broken record fails the run, naming the link: Spark's inference adds its
    corrupt-record column only when a record did not parse (no extra pass to know), and the record would
    otherwise be a row of NULLs, so rows that reference it were quarantined for a reason that is not
    theirs."""
    if _SPARK_CORRUPT not in frame.columns:
        return
    bad = frame.where(F.col(_SPARK_CORRUPT).isNotNull()).select(_SPARK_CORRUPT).first()
    shown = str(bad[0])[:120] if bad is not None else "?"
    raise SourceError(
        f"link {step.name!r}: {step.path} holds a record that is not valid JSON: {shown!r}",
        hint="fix the reference file; reference data is read as a whole, so a broken record is not skipped",
    )


def _link_sql_error(step: LoadLink, key: str, exc: Exception, frame: DataFrame) -> PlanError:
    """Spark's analysis error of a link's own ``filter``/``query``, naming the link and its YAML path."""
    return PlanError(
        f"link {step.name!r} {key}: {first_line(exc)}",
        yaml_path=f"{step.yaml_path}.{key}",
        hint="the link's columns: " + ", ".join(frame.columns),
    )


def load_links(
    spark: SparkSession, steps: Sequence[LoadLink], cache: LinkCache | None = None
) -> dict[str, DataFrame]:
    """Each link of the run; through the pipeline run's reference cache when one is given (DRIVER §12)."""
    if cache is None:
        return {step.name: load_link(spark, step) for step in steps}
    return {step.name: cache.get(step, lambda s: load_link(spark, s)) for step in steps}
