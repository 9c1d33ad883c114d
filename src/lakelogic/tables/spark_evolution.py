"""Write-side schema evolution: batch schema vs existing target schema (SEMANTICS §7.1).

:func:`plan_evolution` decides (pure, on Spark types); :func:`align_batch` reshapes the batch to the
evolved target schema. Casts that may fail are checked inside the write job itself (``raise_error``),
so no extra pass over the data is needed; :func:`as_schema_error` turns that failure into a
:class:`SchemaEvolutionError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    MapType,
    StructField,
    StructType,
    TimestampType,
)

from lakelogic.errors import SchemaEvolutionError
from lakelogic.tables.spark_batch import atomic_type_name, null_as, projected, quote_ident

CAST_FAILURE_MARKER = "lakelogic_cast_failure"

WIDENING_POLICIES = ("compatible", "merge", "allow", "overwrite")
CASTING_POLICIES = ("merge", "allow")
TYPE_STRICT_POLICIES = ("strict", "append")


@dataclass
class WriteDrift:
    added: list[str]
    missing: list[str]
    type_changes: list[dict[str, str]]


@dataclass
class EvolutionPlan:
    """What the write must do to the target schema and the batch."""

    added: list[StructField] = field(default_factory=list)
    widened: list[tuple[str, DataType, DataType]] = field(default_factory=list)  # column, from, to
    missing: list[str] = field(default_factory=list)  # target columns absent from the batch
    casts: dict[str, DataType] = field(default_factory=dict)  # batch columns cast to the target type
    checked_casts: set[str] = field(default_factory=set)  # casts that may fail on some values
    replace_schema: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def changes_table(self) -> bool:
        return bool(self.added or self.widened or self.replace_schema)


def _strip_nullability(dtype: DataType) -> DataType:
    if isinstance(dtype, ArrayType):
        return ArrayType(_strip_nullability(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(_strip_nullability(dtype.keyType), _strip_nullability(dtype.valueType), True)
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, _strip_nullability(f.dataType), True) for f in dtype.fields])
    return dtype


def same_type(a: DataType, b: DataType) -> bool:
    return _strip_nullability(a) == _strip_nullability(b)


def is_widening(narrow: DataType, wide: DataType) -> bool:
    """int→bigint, float→double, decimal precision up (same scale), date→timestamp (SEMANTICS §7.1)."""
    if isinstance(narrow, IntegerType) and isinstance(wide, LongType):
        return True
    if isinstance(narrow, FloatType) and isinstance(wide, DoubleType):
        return True
    if isinstance(narrow, DateType) and isinstance(wide, TimestampType):
        return True
    if isinstance(narrow, DecimalType) and isinstance(wide, DecimalType):
        return wide.scale == narrow.scale and wide.precision > narrow.precision
    return False


def _refuse(column: str, target: DataType, batch: DataType, policy: str) -> SchemaEvolutionError:
    return SchemaEvolutionError(
        f"column {column!r}: target type {target.simpleString()} vs batch type {batch.simpleString()} "
        f"is not allowed by schema_policy.evolution={policy}",
        hint="compatible allows safe widening; merge/allow also cast the batch to the target type",
    )


def plan_evolution(
    target: StructType | None, batch: StructType, *, policy: str, strategy: str
) -> EvolutionPlan:
    """Compare schemas and decide additions, widenings, casts and missing columns, or refuse. A refusal
    carries the whole drift (``SchemaEvolutionError.drift``): the report shows it either way (§7.1)."""
    try:
        return _plan_evolution(target, batch, policy=policy, strategy=strategy)
    except SchemaEvolutionError as exc:
        if target is not None:
            exc.drift = schema_drift(target, batch)
        raise


def schema_drift(target: StructType, batch: StructType) -> WriteDrift:
    """Every difference between a target and a batch schema, as the report lists it."""
    target_types = {f.name: f.dataType for f in target.fields}
    return WriteDrift(
        added=[f.name for f in batch.fields if f.name not in target_types],
        missing=[n for n in target.fieldNames() if n not in batch.fieldNames()],
        type_changes=[
            {
                "column": f.name,
                "target_type": target_types[f.name].simpleString(),
                "batch_type": f.dataType.simpleString(),
                "change": "refused",
            }
            for f in batch.fields
            if f.name in target_types and not same_type(f.dataType, target_types[f.name])
        ],
    )


def _plan_evolution(
    target: StructType | None, batch: StructType, *, policy: str, strategy: str
) -> EvolutionPlan:
    plan = EvolutionPlan()
    if target is None:
        return plan
    if policy == "overwrite" and strategy != "overwrite":
        plan.warnings.append("schema_policy.evolution=overwrite acts as merge unless strategy is overwrite")
        policy = "merge"
    if policy == "overwrite":
        plan.replace_schema = any(
            f.name not in target.fieldNames() or not same_type(f.dataType, target[f.name].dataType)
            for f in batch.fields
        ) or set(target.fieldNames()) != set(batch.fieldNames())
        return plan
    target_types = {f.name: f.dataType for f in target.fields}
    for f in batch.fields:
        if f.name not in target_types:
            if policy == "strict":
                raise SchemaEvolutionError(
                    f"new column {f.name!r} ({f.dataType.simpleString()}) is not in the target and "
                    "schema_policy.evolution=strict"
                )
            plan.added.append(StructField(f.name, f.dataType, True))
            continue
        current = target_types[f.name]
        if same_type(current, f.dataType):
            continue
        if policy in TYPE_STRICT_POLICIES:  # §7.1: any type change at write is an error
            raise _refuse(f.name, current, f.dataType, policy)
        if is_widening(f.dataType, current):
            plan.casts[f.name] = current  # batch narrower than the target: lossless cast up
        elif is_widening(current, f.dataType) and policy in WIDENING_POLICIES:
            plan.widened.append((f.name, current, f.dataType))
        elif policy in CASTING_POLICIES:
            plan.casts[f.name] = current
            plan.checked_casts.add(f.name)
        else:
            raise _refuse(f.name, current, f.dataType, policy)
    plan.missing = [name for name in target.fieldNames() if name not in batch.fieldNames()]
    if plan.missing and policy == "strict":
        raise SchemaEvolutionError(
            f"target column(s) {', '.join(plan.missing)} missing from the batch "
            "and schema_policy.evolution=strict"
        )
    return plan


def evolved_schema(target: StructType | None, batch: StructType, plan: EvolutionPlan) -> StructType:
    """Target schema after the plan: target order, widened types, then added columns."""
    if target is None or plan.replace_schema:
        return batch
    widened = {name: to for name, _, to in plan.widened}
    fields = [StructField(f.name, widened.get(f.name, f.dataType), True) for f in target.fields]
    return StructType(fields + list(plan.added))


_EXACT_NUMBERS = (IntegralType, DecimalType)
_NUMBERS = (IntegralType, DecimalType, FloatType, DoubleType)


def _checked_cast(column: str, dtype: DataType, source: DataType | None = None) -> Column:
    """The batch column cast to the target's type; a value the cast does not keep fails the write job.
    Not kept: a NULL from a non-NULL value, and for a number cast to an exact type (integer, decimal) a
    value that changed (``2.5`` into a ``bigint`` column read back as ``2``, a fraction beyond the
    decimal's scale rounded; a double's binary noise is not a change): a cast that quietly alters data is
    the failure §7.1 makes an error."""
    src = F.col(f"`{column}`")
    casted = F.expr(f"try_cast(`{column}` AS {dtype.simpleString()})")
    of = f" ({source.simpleString()})" if source is not None else ""
    message = F.concat(
        F.lit(f"{CAST_FAILURE_MARKER}: column {column!r} value "),
        src.cast("string"),
        F.lit(f"{of} cannot be cast to the target type {dtype.simpleString()}"),
    )
    lost = src.isNotNull() & casted.isNull()
    if source is not None and isinstance(dtype, ArrayType | MapType | StructType):
        # a nested value the cast could not keep is a NULL element or field, not a NULL value
        lost = lost | F.coalesce(
            F.expr(
                _nested_loss(f"`{column}`", source, f"try_cast(`{column}` AS {dtype.simpleString()})", dtype)
            ),
            F.lit(False),
        )
    if isinstance(source, DoubleType) and isinstance(dtype, DecimalType):
        # a computed double carries binary noise (0.1 + 0.2 is 0.30000000000000004): it is kept when the
        # decimal is that double to within its own precision (2^-50 of its size, a few ulps), changed
        # when the cast rounded a real digit away (2.555 into a scale of 2)
        lost = lost | (casted.isNotNull() & (F.abs(casted.cast("double") - src) > F.abs(src) * 2.0**-50))
    elif isinstance(source, _NUMBERS) and isinstance(dtype, _EXACT_NUMBERS):
        # NaN and infinities never equal a cast back, so they fail too
        lost = lost | (casted.isNotNull() & ~casted.cast(source).eqNullSafe(src))
    return F.when(lost, F.raise_error(message)).otherwise(casted)


def _nested_loss(src: str, source: DataType, casted: str, target: DataType, depth: int = 0) -> str:
    """SQL: whether a non-NULL value somewhere inside ``src`` became NULL in ``casted`` (its cast to
    ``target``): elements pairwise (``zip_with``), map keys and values pairwise (a cast keeps their
    order), struct fields by position (a struct cast is positional)."""
    here = f"({src} IS NOT NULL AND {casted} IS NULL)"
    a, b = f"_ll_a{depth}", f"_ll_b{depth}"
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        inner = _nested_loss(a, source.elementType, b, target.elementType, depth + 1)
        return f"({here} OR exists(zip_with({src}, {casted}, ({a}, {b}) -> {inner}), x -> x))"
    if isinstance(source, MapType) and isinstance(target, MapType):
        keys = _nested_loss(a, source.keyType, b, target.keyType, depth + 1)
        values = _nested_loss(a, source.valueType, b, target.valueType, depth + 1)
        return (
            f"({here} OR exists(zip_with(map_keys({src}), map_keys({casted}), ({a}, {b}) -> {keys}), x -> x)"
            f" OR exists(zip_with(map_values({src}), map_values({casted}), ({a}, {b}) -> {values}), x -> x))"
        )
    if isinstance(source, StructType) and isinstance(target, StructType):
        parts = [
            _nested_loss(f"{src}.`{s.name}`", s.dataType, f"{casted}.`{t.name}`", t.dataType, depth)
            for s, t in zip(source.fields, target.fields, strict=False)
        ]
        return f"({' OR '.join([here, *parts])})"
    return here


def align_batch(batch: DataFrame, schema: StructType, plan: EvolutionPlan) -> DataFrame:
    """Project the batch onto ``schema``: casts, NULLs for missing columns, the schema's column order."""
    present = set(batch.columns)
    if not plan.checked_casts:
        aligned = projected(batch, [_aligned_sql(f, present, batch.schema) for f in schema.fields])
        if aligned is not None:
            return aligned
    columns: list[Column] = []
    for f in schema.fields:
        if f.name not in present:
            columns.append(F.lit(None).cast(f.dataType).alias(f.name))
        elif f.name in plan.checked_casts:
            columns.append(_checked_cast(f.name, f.dataType, batch.schema[f.name].dataType).alias(f.name))
        elif not same_type(batch.schema[f.name].dataType, f.dataType):
            columns.append(F.col(f"`{f.name}`").cast(f.dataType).alias(f.name))
        else:
            columns.append(F.col(f"`{f.name}`"))
    return batch.select(*columns)


def _aligned_sql(field: StructField, present: set[str], batch: StructType) -> str | None:
    """One column of :func:`align_batch` as SQL text; None when its type has no SQL name here."""
    name = quote_ident(field.name)
    if field.name not in present:
        return null_as(field.name, field.dataType)
    if same_type(batch[field.name].dataType, field.dataType):
        return name
    type_name = atomic_type_name(field.dataType)
    return None if type_name is None else f"CAST({name} AS {type_name}) AS {name}"


def as_schema_error(exc: BaseException) -> SchemaEvolutionError | None:
    """The SchemaEvolutionError hidden in a failed write job (from :func:`_checked_cast`), if any."""
    text = str(exc)
    if CAST_FAILURE_MARKER not in text:
        return None
    start = text.index(CAST_FAILURE_MARKER) + len(CAST_FAILURE_MARKER) + 2
    detail = text[start:].splitlines()[0]
    return SchemaEvolutionError(detail)
