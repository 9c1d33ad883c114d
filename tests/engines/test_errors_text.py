"""JVM error text made readable for reports and the CLI (no Spark session needed)."""

from __future__ import annotations

from lakelogic.engines.spark.errors_text import without_jvm_frames

WRAPPED = """link 'r' could not be read from /data/ref: An error occurred while calling o118.load.
: org.apache.spark.SparkException: Job aborted due to stage failure: Lost task 0.0 (TID 1):
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)
\tat org.apache.spark.util.ThreadUtils$.awaitResult(ThreadUtils.scala:310)
Caused by: org.apache.spark.SparkException: [CANNOT_READ_FILE_FOOTER] Could not read footer
\tat org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat$.readFooter(X.scala:1)
\t... 23 more
Caused by: java.lang.RuntimeException: /data/ref/part-0.csv is not a Parquet file
\t... 5 more

Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)
"""


def test_a_wrapped_jvm_error_keeps_its_context_and_root_cause_only() -> None:
    assert without_jvm_frames(WRAPPED) == (
        "link 'r' could not be read from /data/ref: "
        "java.lang.RuntimeException: /data/ref/part-0.csv is not a Parquet file"
    )


def test_text_without_frames_is_left_alone() -> None:
    text = "row rule 'x' cannot be evaluated:\n  column y is missing"
    assert without_jvm_frames(text) == text


def test_spark_suggestions_leave_out_hidden_working_columns() -> None:
    from lakelogic.engines.spark.runner import _without_hidden_columns

    text = (
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `amountt` "
        "cannot be resolved. Did you mean one of the following? [`amount`, `__ll_raw_s_1`, `id`, `_ll_h`]."
    )
    cleaned = _without_hidden_columns(text)
    assert cleaned.endswith("Did you mean one of the following? [`amount`, `id`].")
    assert _without_hidden_columns("[`__ll_raw_a`, `amount`]") == "[`amount`]"
