"""Schema enforcement: step 5 (missing columns, unknown fields, strict casts) and step 10 (re-cast,
missing columns, ordering) of SEMANTICS §8, plus the ``cast`` op, all sharing the strict-cast machinery.

A cast keeps the raw value in a hidden column next to the converted one (two projections), so the
failure flag and the failure message read the raw value without computing the cast twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, NumericType, StringType

from lakelogic.engines.spark.casting import (
    CastFormats,
    cast_failed_sql,
    cast_failure_message_sql,
    spark_type_matches,
    strict_cast_sql,
)
from lakelogic.engines.spark.masking import masked_raw_json_sql
from lakelogic.engines.spark.rules import HIDDEN_PREFIX, Check, message_literal
from lakelogic.errors import MissingRequiredColumnError
from lakelogic.plan.naming import sanitize_name
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import EnforceSchema, FieldSpec
from lakelogic.report import SchemaDrift
from lakelogic.sources.columns import CORRUPT_COLUMN, SOURCE_FILE_COLUMN
from lakelogic.types import LogicalType, Phase, Severity, parse_type

INTERNAL_PREFIXES = (HIDDEN_PREFIX, "__lakelogic_", CORRUPT_COLUMN, SOURCE_FILE_COLUMN)


def is_internal(column: str) -> bool:
    return column.startswith(INTERNAL_PREFIXES)


@dataclass(frozen=True)
class CastRequest:
    column: str
    type: LogicalType
    mask: FieldSpec | None = None  # the masked model field: failure messages show its raw value masked


@dataclass
class CastOutcome:
    frame: DataFrame
    checks: list[Check] = field(default_factory=list)


def strict_cast_columns(
    frame: DataFrame, requests: Sequence[CastRequest], *, phase: Phase, formats: CastFormats, tag: str
) -> CastOutcome:
    """Cast ``requests`` in place; each cast that can fail yields a ``<column>_type`` check.

    The raw values stay in hidden ``__ll_raw_<tag>_<i>`` columns until the phase is evaluated.
    """
    types = dict(frame.dtypes)
    schema = {f.name: f.dataType for f in frame.schema.fields}
    casts: dict[str, str] = {}
    raws: list[tuple[str, str, CastRequest, DataType]] = []
    for i, req in enumerate(requests):
        source = schema[req.column]
        if spark_type_matches(source, req.type):
            continue
        raw = f"{HIDDEN_PREFIX}raw_{tag}_{i}"
        casts[req.column] = strict_cast_sql(raw, source, req.type, formats)
        raws.append((req.column, raw, req, source))
    if not casts:
        return CastOutcome(frame)
    del types
    # Projection 1 keeps the raw values under hidden names; projection 2 converts them in place.
    hidden = [F.col(quote_ident(col)).alias(raw) for col, raw, _, _ in raws]
    staged = frame.select("*", *hidden)
    converted = [
        F.expr(casts[c]).alias(c) if c in casts else F.col(quote_ident(c)) for c in frame.columns
    ] + [F.col(raw) for _, raw, _, _ in raws]
    out = staged.select(*converted)
    checks = []
    for col, raw, req, source in raws:
        fail = cast_failed_sql(raw, quote_ident(col), source, req.type)
        if fail == "false":
            continue
        checks.append(
            Check(
                name=sanitize_name(f"{col}_type"),  # §10.4: generated names hold [A-Za-z0-9_.-]
                category="schema",
                severity=Severity.ERROR,
                phase=phase,
                origin="schema",
                sql=f"CAST({quote_ident(col)} AS {req.type.spark_sql()})",
                fail_sql=fail,
                message_sql=cast_failure_message_sql(
                    col, raw, req.type, shown=_masked_raw(req.mask, raw, source), source=source
                ),
            )
        )
    return CastOutcome(out, checks)


def _masked_raw(mask: FieldSpec | None, raw: str, source: DataType) -> str | None:
    if mask is None:
        return None
    text = raw if isinstance(source, StringType) else strict_cast_sql(raw, source, LogicalType("string"))
    return masked_raw_json_sql(mask, text)


def hidden_columns(frame: DataFrame) -> list[str]:
    """Engine bookkeeping columns (raw values, flags, rule probes); never in any output."""
    return [c for c in frame.columns if c.startswith((HIDDEN_PREFIX, "__lakelogic_"))]


def drop_internal(frame: DataFrame) -> DataFrame:
    """Remove every engine column (hidden, corrupt-record, source-file) before output."""
    internal = [c for c in frame.columns if is_internal(c)]
    return frame.drop(*internal) if internal else frame


def drop_hidden(frame: DataFrame) -> DataFrame:
    hidden = set(hidden_columns(frame))
    return (
        frame.select(*[F.col(quote_ident(c)) for c in frame.columns if c not in hidden]) if hidden else frame
    )


@dataclass
class SchemaOutcome:
    frame: DataFrame
    checks: list[Check]
    unknown: list[str]
    drift: SchemaDrift


def enforce_schema(
    frame: DataFrame,
    step: EnforceSchema,
    *,
    created_by_ops: Iterable[str],
    formats: CastFormats,
) -> SchemaOutcome:
    """Step 5: check required columns, apply the unknown-fields policy, cast model columns strictly."""
    frame = _in_model_spelling(frame, step.fields)
    present = set(frame.columns)
    post_created = set(step.post_created)
    missing = [f.name for f in step.fields if f.name not in present]
    fatal = [
        name
        for f in step.fields
        if (name := f.name) in missing
        and not f.generated
        and name not in post_created
        and (f.required or step.evolution == "strict")
    ]
    if fatal:
        raise MissingRequiredColumnError(fatal, available=[c for c in frame.columns if not is_internal(c)])
    model = {f.name for f in step.fields}
    created = set(created_by_ops)
    unknown = [
        c
        for c in frame.columns
        if c not in model
        and c not in created
        and not is_internal(c)
        and not c.startswith("_lakelogic_")
        and not c.startswith("_upstream")
    ]
    drift = SchemaDrift(
        unknown_fields=unknown,
        missing_fields=missing,
        type_changes=_type_changes(frame, step.fields),
        policy=step.unknown_fields,
    )
    requests = [
        CastRequest(
            f.name, LogicalType("string") if step.cast_to_string else f.type, mask=f if f.masking else None
        )
        for f in step.fields
        if f.name in present
    ]
    outcome = strict_cast_columns(frame, requests, phase=Phase.PRE, formats=formats, tag="s")
    out = outcome.frame
    # Absent, non-required model columns become typed NULLs now unless a post op creates them.
    additions = [
        F.lit(None).cast("STRING" if step.cast_to_string else f.type.spark_sql()).alias(f.name)
        for f in step.fields
        if f.name in missing and f.name not in post_created
    ]
    if additions:
        out = out.select("*", *additions)
    checks = list(outcome.checks)
    if step.unknown_fields == "quarantine" and unknown:
        checks.append(unknown_fields_check(unknown))
    return SchemaOutcome(out, checks, unknown, drift)


def _in_model_spelling(frame: DataFrame, fields: Sequence[FieldSpec]) -> DataFrame:
    """Source columns named like a model field in another case (``S`` for ``s``) renamed to the field.

    Spark resolves names case-insensitively (unless ``spark.sql.caseSensitive``), so the contract's SQL
    already reads ``S`` as ``s``; treating them as two columns added a NULL ``s`` beside ``S`` and the run
    failed with an ambiguous reference. A field with a column of its exact name keeps that one."""
    if str(frame.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() == "true":
        return frame
    exact = set(frame.columns)
    wanted = {f.name.lower(): f.name for f in fields if f.name not in exact}
    renames = {c: wanted[c.lower()] for c in frame.columns if c.lower() in wanted and not is_internal(c)}
    if not renames:
        return frame
    return frame.select(
        *[
            F.col(quote_ident(c)).alias(renames[c]) if c in renames else F.col(quote_ident(c))
            for c in frame.columns
        ]
    )


def unknown_fields_check(unknown: Sequence[str]) -> Check:
    any_present = " OR ".join(f"{quote_ident(c)} IS NOT NULL" for c in unknown)
    names = ", ".join(
        f"CASE WHEN {quote_ident(c)} IS NOT NULL THEN {message_literal(c)} END" for c in unknown
    )
    message = f"concat('Rule failed: unknown_fields (', concat_ws(', ', {names}), ')')"  # skips NULLs
    return Check(
        name="unknown_fields",
        category="schema",
        severity=Severity.ERROR,
        phase=Phase.PRE,
        origin="schema",
        sql=any_present,
        fail_sql=f"({any_present})",
        message_sql=message,
    )


def _type_changes(frame: DataFrame, fields: Sequence[FieldSpec]) -> list[dict[str, str]]:
    """Source columns whose (non-text) type differs from the model type in kind, not just width."""
    schema = {f.name: f.dataType for f in frame.schema.fields}
    changes = []
    for spec in fields:
        source = schema.get(spec.name)
        if source is None or isinstance(source, StringType) or spark_type_matches(source, spec.type):
            continue
        if isinstance(source, NumericType) and spec.type.is_numeric:
            continue
        changes.append(
            {"column": spec.name, "source_type": source.simpleString(), "model_type": str(spec.type)}
        )
    return changes


def recast_requests(frame: DataFrame, fields: Sequence[FieldSpec]) -> list[CastRequest]:
    """Step 10: model columns whose current type is not the model type (an op changed it)."""
    schema = {f.name: f.dataType for f in frame.schema.fields}
    return [
        CastRequest(f.name, f.type, mask=f if f.masking else None)
        for f in fields
        if f.name in schema and not spark_type_matches(schema[f.name], f.type)
    ]


def final_projection(
    frame: DataFrame,
    fields: Sequence[FieldSpec],
    *,
    unknown_policy: str,
    unknown: Sequence[str],
    cast_to_string: bool = False,
    lineage_copies: Sequence[str] = (),
) -> DataFrame:
    """Step 10 ordering: model fields (missing ones as typed NULL), then pass-through columns.
    ``lineage_copies``: the ``preserve_upstream`` copies, lineage the contract made (kept under ``drop``)."""
    present = set(frame.columns)
    model_cols = []
    for f in fields:
        spark_type = "STRING" if cast_to_string else f.type.spark_sql()
        model_cols.append(
            F.col(quote_ident(f.name)) if f.name in present else F.lit(None).cast(spark_type).alias(f.name)
        )
    model = {f.name for f in fields}
    unknown_set = set(unknown)
    passthrough = []
    for c in frame.columns:
        if c == SOURCE_FILE_COLUMN:
            passthrough.append(F.col(c))  # kept for lineage, removed after it
            continue
        if c in model or is_internal(c):
            continue
        if unknown_policy == "drop" and not c.startswith("_lakelogic_") and c not in lineage_copies:
            continue  # unknown and post-created helper columns alike
        if unknown_policy == "quarantine" and c in unknown_set:
            continue
        passthrough.append(F.col(quote_ident(c)))
    return frame.select(*model_cols, *passthrough)


def logical(type_text: str) -> LogicalType:
    return parse_type(type_text)
