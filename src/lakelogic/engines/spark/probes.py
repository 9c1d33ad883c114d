"""Reference probes of row rules (``referential_integrity``, ``lifecycle_window`` with a reference).

A probe becomes a boolean column computed by ONE left join with a per-key summary of the link (distinct
keys, or per-key validity windows), so the join never fans rows out and the rule itself stays a plain
predicate over the probe column inside the phase projection. Reference tables are small: broadcast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.casting import strict_cast_sql
from lakelogic.errors import PlanError
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import ReferenceProbe, RowRule
from lakelogic.types import parse_type


def attach_probes(frame: DataFrame, rules: Sequence[RowRule], links: Mapping[str, DataFrame]) -> DataFrame:
    """Add one boolean column per distinct probe (``probe.column``) of ``rules``."""
    seen: set[str] = set()
    for rule in rules:
        for probe in rule.probes:
            if probe.column in seen or probe.column in frame.columns:
                continue
            seen.add(probe.column)
            if probe.link not in links:
                raise PlanError(
                    f"rule {rule.name} needs link {probe.link!r}, which is not declared under links",
                    yaml_path=rule.yaml_path,
                )
            link = links[probe.link]
            _require_link_columns(rule, probe, link)
            if probe.window_start is not None:
                frame = _window_probe(frame, probe, link)
            else:
                frame = _membership_probe(frame, probe, link)
    return frame


def _require_link_columns(rule: RowRule, probe: ReferenceProbe, link: DataFrame) -> None:
    """The columns a probe reads from its link, checked before Spark reports them as the contract's SQL."""
    needed = [*probe.key, *(c for c in (probe.window_start, probe.window_end) if c)]
    missing = [c for c in needed if c not in link.columns]
    if missing:
        raise PlanError(
            f"rule {rule.name}: link {probe.link!r} has no column(s) {', '.join(missing)}",
            yaml_path=rule.yaml_path,
            hint=f"the link's columns: {', '.join(link.columns[:30])}",
        )


def _key_aliases(probe: ReferenceProbe) -> list[str]:
    return [f"__ll_pk_{probe.column}_{i}" for i in range(len(probe.key))]


def _key_pairs(frame: DataFrame, probe: ReferenceProbe, link: DataFrame) -> list[tuple[Column, Column]]:
    """(value in the frame, key in the link) per key column. Values of two types compare as §5.3 text,
    as lookup and join keys do and as Spark's own ``x IN (SELECT k …)`` compares an int with a string:
    an equality would cast the text side to a number, and `' 7'`, `'07'` and `'7.9'` matched the key 7."""
    if len(probe.key) != len(probe.frame_expr):
        raise PlanError(
            f"probe {probe.column}: {len(probe.key)} key column(s) but {len(probe.frame_expr)} value(s)"
        )
    pairs = []
    for expr, key in zip(probe.frame_expr, probe.key, strict=True):
        value_type = frame.select(F.expr(expr)).schema.fields[0].dataType
        key_type = link.schema[key].dataType
        if value_type.simpleString() == key_type.simpleString():
            pairs.append((F.expr(expr), F.col(quote_ident(key))))
        else:
            as_text = parse_type("string")
            pairs.append(
                (
                    F.expr(strict_cast_sql(f"({expr})", value_type, as_text)),
                    F.expr(strict_cast_sql(quote_ident(key), key_type, as_text)),
                )
            )
    return pairs


def _join_condition(values: Sequence[Column], aliases: list[str]) -> Column:
    cond: Column | None = None
    for value, alias in zip(values, aliases, strict=True):
        part = value == F.col(alias)
        cond = part if cond is None else cond & part
    assert cond is not None
    return cond


def _membership_probe(frame: DataFrame, probe: ReferenceProbe, link: DataFrame) -> DataFrame:
    aliases = _key_aliases(probe)
    pairs = _key_pairs(frame, probe, link)
    hit = f"__ll_hit_{probe.column}"
    keys = (
        link.select(*[k.alias(a) for (_, k), a in zip(pairs, aliases, strict=True)])
        .where(" AND ".join(f"{a} IS NOT NULL" for a in aliases))
        .distinct()
        .withColumn(hit, F.lit(True))
    )
    joined = frame.join(F.broadcast(keys), _join_condition([v for v, _ in pairs], aliases), "left")
    if not probe.sql_in_semantics:
        return joined.withColumn(probe.column, F.coalesce(F.col(hit), F.lit(False))).drop(hit, *aliases)
    # SQL's `x IN (SELECT k FROM link)`: TRUE on a match; otherwise NULL when x is NULL or the link's
    # key holds a NULL, unless the link is empty (then FALSE). One summary row of the link decides.
    has_null, has_rows = f"__ll_null_{probe.column}", f"__ll_rows_{probe.column}"
    null_key = " OR ".join(f"{quote_ident(k)} IS NULL" for k in probe.key)
    summary = link.selectExpr(
        f"coalesce(max({null_key}), false) AS {has_null}", f"count(1) > 0 AS {has_rows}"
    )
    joined = joined.crossJoin(F.broadcast(summary))
    subject_null = reduce(lambda a, b: a | b, (F.expr(e).isNull() for e in probe.frame_expr))
    value = (
        F.when(F.col(hit), F.lit(True))
        .when(~F.col(has_rows), F.lit(False))
        .when(subject_null | F.col(has_null), F.lit(None))
        .otherwise(F.lit(False))
    )
    return joined.withColumn(probe.column, value).drop(hit, has_null, has_rows, *aliases)


def _window_probe(frame: DataFrame, probe: ReferenceProbe, link: DataFrame) -> DataFrame:
    aliases = _key_aliases(probe)
    pairs = _key_pairs(frame, probe, link)
    windows = f"__ll_win_{probe.column}"
    start = F.col(quote_ident(probe.window_start or ""))
    end = F.col(quote_ident(probe.window_end)) if probe.window_end else F.lit(None)
    summary = link.groupBy(*[k.alias(a) for (_, k), a in zip(pairs, aliases, strict=True)]).agg(
        F.collect_list(F.struct(start.alias("s"), end.alias("e"))).alias(windows)
    )
    joined = frame.join(F.broadcast(summary), _join_condition([v for v, _ in pairs], aliases), "left")
    value = probe.window_value_expr or (probe.frame_expr[0] if probe.frame_expr else "NULL")
    end_default = probe.window_end_default or "NULL"
    inside = f"w.s <= ({value}) AND ({value}) <= coalesce(w.e, {end_default})"
    test = f"coalesce(exists({windows}, w -> {inside}), false)"
    return joined.withColumn(probe.column, F.expr(test)).drop(windows, *aliases)
