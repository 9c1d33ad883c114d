"""Extraction at step 2 (SEMANTICS §20). ``provider: regex`` is deterministic and runs as Spark SQL.

Each ``patterns`` entry writes the first capture group of the first match anywhere in ``text_column``
(the whole match when the pattern has no group); no match or NULL text gives NULL. The output is text;
the model type is applied by the strict cast at step 5. LLM providers are not part of the Spark core.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.errors import PlanError, UnsupportedError
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import Extract


def apply_extraction(frame: DataFrame, step: Extract) -> DataFrame:
    if step.provider.lower() != "regex":
        raise UnsupportedError(
            f"extraction provider {step.provider!r} is not available on the Spark engine",
            hint="use provider: regex, or run the LLM extraction upstream",
        )
    if not step.text_column or step.text_column not in frame.columns:
        raise PlanError(
            f"extraction.text_column {step.text_column!r} is not a column of the input",
            yaml_path=f"{step.yaml_path}.text_column",
        )
    text = F.col(quote_ident(step.text_column)).cast("string")
    outputs = {}
    for column, pattern in step.patterns.items():
        groups = _java_group_count(frame, pattern, f"{step.yaml_path}.patterns.{column}")
        outputs[column] = F.when(text.rlike(pattern), F.regexp_extract(text, pattern, 1 if groups else 0))
    # A same-named column is replaced in place (named as Spark resolves names: case-insensitively unless
    # the session is case-sensitive, or `Status` and `status` would be two columns of one name); new ones
    # are appended.
    fold = str(frame.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() != "true"

    def key(name: str) -> str:
        return name.lower() if fold else name

    by_key = {key(name): name for name in outputs}
    kept = [
        outputs.pop(by_key[key(c)]).alias(c)
        if key(c) in by_key and by_key[key(c)] in outputs
        else F.col(quote_ident(c))
        for c in frame.columns
    ]
    return frame.select(*kept, *[col.alias(name) for name, col in outputs.items()])


def _java_group_count(frame: DataFrame, pattern: str, yaml_path: str) -> int:
    """Capture groups of ``pattern`` compiled as Spark compiles it (java.util.regex, the canonical dialect
    of SEMANTICS §0: ``\\p{Alpha}`` and ``(?<name>...)`` are valid, Python's ``(?P<name>...)`` is not)."""
    jvm = frame.sparkSession._jvm  # type: ignore[attr-defined]
    assert jvm is not None
    try:
        return int(jvm.java.util.regex.Pattern.compile(pattern).matcher("").groupCount())
    except Exception as exc:  # noqa: BLE001 - PatternSyntaxException, surfaced by PySpark or Py4J
        java = getattr(exc, "java_exception", None)
        text = str(java.getMessage()) if java is not None else str(exc)
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise PlanError(f"invalid regex {pattern!r}: {first}", yaml_path=yaml_path) from None
