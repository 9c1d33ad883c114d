"""One evaluation, one Spark job, both outputs: good rows and quarantined rows (SEMANTICS §8, §11, §12).

Spark has no batch action with two sinks, and caching an evaluated frame costs more than writing it
(measured on 2M rows: building the columnar cache 4-6 s, a Parquet write 1.5-2 s). So when a run writes
its good rows to a path, every evaluated row is written ONCE, partitioned by a *quarantine key*:

* key 0: a good row. The files under ``<staging>/<key>=0`` hold exactly the good output (same columns
  in the same order; the key lives only in the directory name) and are moved into place as they are.
* key > 0: a quarantined row whose messages are all static: bit ``i`` is the ``i``-th error-severity
  check in message order, so ``_lakelogic_errors``/``_lakelogic_categories`` are rebuilt from the key.
* key -1 / -2: a quarantined row with a message quoting one of its raw values (a cast failure, unknown
  fields) in the pre / post phase. The staged row no longer holds that value (a failed cast leaves NULL).
  When the good output has a string column (the *carrier*), such a row carries its own messages: the
  carrier holds the messages, the categories and its own value (``pack_quoting_rows``), decoded when
  the quarantine is rebuilt. A quarantined row's staged values are never published as good rows, so the
  carrier can be borrowed; good rows are untouched. Without a carrier these rows are re-evaluated by an
  executor whose chain is restricted to them (for the pre phase right after the casts).

Records the reader could not parse (CSV/JSON, SEMANTICS §3.3) never enter the chain: the source
observation counts them during the one job, and only when there are some is their quarantine part read
again from the source (a scan of its own), so a clean file costs nothing more.

The quarantine output is then written from the quarantined part alone (a few percent of the rows).
Counts come from one observation on the written frame. Distinct keys bound the staging partitions:
one per combination of failed static checks that occurs in the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakelogic.engines.spark.counting import Observations
from lakelogic.engines.spark.marking import MARK_COLUMN, MarkedFrame
from lakelogic.engines.spark.outputs import StagedOutput
from lakelogic.engines.spark.quarantine import MALFORMED_ROWS, QUARANTINED_AT_COLUMN, RUN_ID_COLUMN
from lakelogic.engines.spark.rules import CATEGORIES_COLUMN, ERRORS_COLUMN, Check, array_sql, message_for
from lakelogic.plan.sqlutil import quote_ident, sql_string
from lakelogic.types import Phase

# Passes the final projection like other ``_lakelogic_`` columns; never reaches an output file.
FANOUT_KEY = "_lakelogic_fanout_key__"
FANOUT_LABEL = "fanout"
GOOD_KEY = 0
PRE_AGAIN = -1
POST_AGAIN = -2
MAX_KEYED_CHECKS = 62  # bits of a BIGINT key
_QUARANTINE_ONLY = (ERRORS_COLUMN, CATEGORIES_COLUMN, RUN_ID_COLUMN, QUARANTINED_AT_COLUMN)


def quotes_row(check: Check, *, include_reason: bool) -> bool:
    """True when the check's message depends on the row (its raw value), not just on the check."""
    return include_reason and check.message_sql is not None


@dataclass(frozen=True)
class KeyedMessage:
    bit: int
    message_sql: str
    category: str


@dataclass
class Fanout:
    """The frame the one job writes (good-shaped columns + key) and how to rebuild quarantined rows."""

    frame: DataFrame
    good_schema: StructType
    bad_schema: StructType
    messages: list[KeyedMessage]
    run_id: str
    quarantined_at: object
    carrier: str | None = None
    # The quarantine rows of the unparseable records (in the quarantine's columns), written apart from
    # the staged rows and only when the source observation counted some.
    malformed: DataFrame | None = None
    ran: bool = False
    counts: dict[str, int] = field(default_factory=dict)


def _any(flags: Sequence[str]) -> str:
    return " OR ".join(flags) if flags else "false"


def row_quoting_flags(marked: MarkedFrame, phase: Phase, *, include_reason: bool) -> list[str]:
    return [
        flag
        for flag, check in marked.message_checks
        if (check.phase == Phase.POST) == (phase == Phase.POST)
        and quotes_row(check, include_reason=include_reason)
    ]


def key_sql(marked: MarkedFrame, *, include_reason: bool) -> tuple[str, list[KeyedMessage]] | None:
    """The quarantine key expression over the marked frame, or None when the checks do not fit a key."""
    if len(marked.message_checks) > MAX_KEYED_CHECKS:
        return None
    pre_again = row_quoting_flags(marked, Phase.PRE, include_reason=include_reason)
    post_again = row_quoting_flags(marked, Phase.POST, include_reason=include_reason)
    messages: list[KeyedMessage] = []
    bits: list[str] = []
    for i, (flag, check) in enumerate(marked.message_checks):
        if quotes_row(check, include_reason=include_reason):
            continue  # rows failing it carry key -1/-2, never a bit
        bit = 1 << i
        bits.append(f"CASE WHEN {flag} THEN {bit}L ELSE 0L END")
        messages.append(
            KeyedMessage(bit, message_for(check, include_reason=include_reason), check.category.lower())
        )
    static = " + ".join(bits) if bits else "0L"
    sql = (
        f"CASE WHEN NOT {MARK_COLUMN} THEN {GOOD_KEY}L "
        f"WHEN {_any(pre_again)} THEN {PRE_AGAIN}L "
        f"WHEN {_any(post_again)} THEN {POST_AGAIN}L "
        f"ELSE {static} END"
    )
    return sql, messages


def same_columns(left: StructType, right: StructType) -> bool:
    """Same names, order and types (nullability aside: Spark reads every Parquet column as nullable)."""
    return [(f.name, f.dataType) for f in left.fields] == [(f.name, f.dataType) for f in right.fields]


def fits(staged: StructType, good: StructType, bad: StructType) -> bool:
    """The staged rows ARE the good output and hold every data column of the quarantine output."""
    data = StructType([f for f in staged.fields if f.name != FANOUT_KEY])
    if not same_columns(data, good):
        return False
    types = {f.name: f.dataType for f in data.fields}
    return all(f.name in _QUARANTINE_ONLY or types.get(f.name) == f.dataType for f in bad.fields)


def carrier_column(good: StructType, bad: StructType) -> str | None:
    """The first string column of the good output that the quarantine keeps as a string, else None."""
    bad_types = {f.name: f.dataType for f in bad.fields}
    for f in good.fields:
        if isinstance(f.dataType, StringType) and isinstance(bad_types.get(f.name), StringType):
            return f.name
    return None


def pack_quoting_rows(staged: DataFrame, carrier: str | None) -> DataFrame:
    """Rows keyed -1/-2 carry their messages in ``carrier``; the message columns leave the staged rows.

    The packed text is ``<n> NUL <n messages> NUL <n categories> NUL <'n' | 's' + carrier value>``:
    messages and categories never contain NUL (rules.message_literal) and the carrier value, which may,
    comes last. Built from code-generated functions only (``to_json`` would take the whole projection
    out of the generated code, for every row)."""
    if carrier is not None:
        col = quote_ident(carrier)
        value = f"CASE WHEN {col} IS NULL THEN 'n' ELSE concat('s', {col}) END"
        packed = (
            f"CASE WHEN {quote_ident(FANOUT_KEY)} < 0 THEN concat_ws(chr(0), "
            f"CAST(size({ERRORS_COLUMN}) AS STRING), {ERRORS_COLUMN}, {CATEGORIES_COLUMN}, {value}) "
            f"ELSE {col} END"
        )
        staged = staged.withColumn(carrier, F.expr(packed))
    return staged.drop(ERRORS_COLUMN, CATEGORIES_COLUMN)


def unpack_carrier(packed: Column) -> tuple[Column, Column, Column]:
    """(messages, categories, carrier value) of a text packed by :func:`pack_quoting_rows`."""
    count = F.substring_index(packed, "\x00", 1).cast("int")
    parts = F.split(packed, "\x00", -1)
    # A carrier value may hold NUL itself: re-join whatever follows the categories.
    tail = F.array_join(F.slice(parts, count * 2 + 2, F.size(parts)), "\x00")
    messages = F.slice(parts, F.lit(2), count)
    categories = F.slice(parts, count + 2, count)
    value = F.when(tail != F.lit("n"), F.substring(tail, 2, 1 << 30))
    return messages, categories, value


def observe_split(observations: Observations, frame: DataFrame) -> DataFrame:
    key = quote_ident(FANOUT_KEY)

    def count_where(cond: str) -> Column:
        return F.expr(f"count_if({cond})")  # one gateway call per metric

    return observations.observe(
        frame,
        FANOUT_LABEL,
        {
            "bad": count_where(f"{key} != {GOOD_KEY}"),
            "pre_again": count_where(f"{key} = {PRE_AGAIN}"),
            "post_again": count_where(f"{key} = {POST_AGAIN}"),
        },
    )


class FanoutOutputs:
    """Runs the one job into a staging directory; serves the good rows and the quarantined rows from it.

    ``commit`` moves the good partition to the good output path; ``discard`` removes everything staged.
    """

    def __init__(self, spark: SparkSession, fanout: Fanout, good_path: str, run_id: str) -> None:
        self.spark = spark
        self.fanout = fanout
        self.good = StagedOutput(spark, good_path, run_id)
        self.root = f"{self.good.path}.__lakelogic_fanout_{run_id.replace('-', '')[:12]}"
        self.good_dir = f"{self.root}/{FANOUT_KEY}={GOOD_KEY}"

    def stage(self, observations: Observations) -> None:
        """The one job: every row evaluated once and written under its key."""
        self.fanout.frame.write.mode("overwrite").partitionBy(FANOUT_KEY).parquet(self.root)
        self.fanout.ran = True
        values = observations.collect_one(FANOUT_LABEL)
        self.fanout.counts = {k: int(values.get(k) or 0) for k in ("rows", "bad", "pre_again", "post_again")}
        if self.fanout.malformed is not None:
            self.fanout.counts["malformed"] = int(observations.value("source", MALFORMED_ROWS) or 0)
        fs, good_dir = self.good.filesystem(self.good_dir)
        if not fs.exists(good_dir):  # no good rows: the output is still a (empty) dataset with its schema
            self.spark.createDataFrame([], self.fanout.good_schema).write.mode("overwrite").parquet(
                self.good_dir
            )
        self.good.adopt(self.good_dir)

    def good_rows(self) -> DataFrame:
        return self.spark.read.schema(self.fanout.good_schema).parquet(self.good_dir)

    def quarantine(self, reevaluate: Callable[[str], DataFrame]) -> DataFrame:
        """The quarantined rows in the quarantine frame's columns: rebuilt from keys, plus re-evaluated."""
        fan = self.fanout
        parts: list[DataFrame] = []
        if fan.carrier is not None:
            if fan.counts.get("bad", 0) > 0:
                parts.append(self._rebuilt())
        else:
            again = fan.counts.get("pre_again", 0) + fan.counts.get("post_again", 0)
            if fan.counts.get("bad", 0) - again > 0:
                parts.append(self._rebuilt())
            if fan.counts.get("pre_again", 0) > 0:
                parts.append(reevaluate("pre"))
            if fan.counts.get("post_again", 0) > 0:
                parts.append(reevaluate("post"))
        if fan.malformed is not None and fan.counts.get("malformed", 0) > 0:
            parts.append(fan.malformed)
        if not parts:
            return self.spark.createDataFrame([], fan.bad_schema)
        names = [f.name for f in fan.bad_schema.fields]
        out = parts[0].select(*[quote_ident(c) for c in names])
        for part in parts[1:]:
            out = out.unionByName(part.select(*[quote_ident(c) for c in names]))
        return out

    def _rebuilt(self) -> DataFrame:
        """Quarantined rows from the staged partitions: messages from the key's bits, or unpacked from the
        carrier for rows keyed -1/-2 (only read when the run has a carrier)."""
        fan = self.fanout
        schema = StructType([*fan.good_schema.fields, StructField(FANOUT_KEY, LongType())])
        key = quote_ident(FANOUT_KEY)
        staged = (
            self.spark.read.schema(schema)
            .option("basePath", self.root)
            .parquet(self.root)
            .where(f"{key} != {GOOD_KEY}" if fan.carrier is not None else f"{key} > {GOOD_KEY}")
        )
        errors = array_sql([(f"({key} & {m.bit}L) != 0", m.message_sql) for m in fan.messages])
        categories = array_sql([(f"({key} & {m.bit}L) != 0", sql_string(m.category)) for m in fan.messages])
        extra = {
            ERRORS_COLUMN: F.expr(errors),
            CATEGORIES_COLUMN: F.expr(categories),
            RUN_ID_COLUMN: F.lit(fan.run_id),
            QUARANTINED_AT_COLUMN: F.lit(fan.quarantined_at).cast("timestamp"),
        }
        if fan.carrier is not None:
            carried_errors, carried_categories, value = unpack_carrier(F.col(quote_ident(fan.carrier)))
            is_packed = F.col(key) < 0
            extra[ERRORS_COLUMN] = F.when(is_packed, carried_errors).otherwise(extra[ERRORS_COLUMN])
            extra[CATEGORIES_COLUMN] = F.when(is_packed, carried_categories).otherwise(
                extra[CATEGORIES_COLUMN]
            )
            extra[fan.carrier] = F.when(is_packed, value).otherwise(F.col(quote_ident(fan.carrier)))
        cols = [
            extra[f.name].alias(f.name) if f.name in extra else F.col(quote_ident(f.name))
            for f in fan.bad_schema.fields
        ]
        return staged.select(*cols)

    def commit(self) -> None:
        self.good.commit()
        self.discard()

    def discard(self) -> None:
        fs, root = self.good.filesystem(self.root)
        if fs.exists(root):
            fs.delete(root, True)
        self.good.discard()
