"""Strict casting (SEMANTICS §5.3) as pure Spark SQL expressions.

Every cast is rendered as one SQL expression that yields the converted value, or NULL when the value is
not representable in the target type. A *cast failure* is then "the raw value counts as present, the
converted value is NULL" (:func:`cast_failed_sql`); empty or whitespace-only text is NULL for non-string
targets, never a failure. No Python UDFs: everything stays inside Spark's code generation.

Spark's own ``CAST`` is too lenient for the contract (``'3.5'`` -> ``3``, long -> int wraps around), so
each source/target pair gets an explicit, checked expression built from ``try_cast``, ``try_to_timestamp``
and range/integrality guards.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lakelogic.engines.spark.rules import message_literal
from lakelogic.plan.naming import sanitize_name
from lakelogic.plan.ops_columns import ASCII_WHITESPACE
from lakelogic.plan.sqlutil import sql_string
from lakelogic.types import LogicalType

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_FRACTIONAL = (FloatType, DoubleType)
_INT_BOUNDS = {
    "integer": ("-2147483648", "2147483647"),
    "bigint": ("-9223372036854775808", "9223372036854775807"),
}
_INT_WIDTH = {ByteType: 1, ShortType: 2, IntegerType: 4, LongType: 8}
# Doubles below 2^128 - 2^103 round to a finite float (the largest, 3.4028235e38, included); from there
# on they round to Infinity.
_FLOAT_OVERFLOW = "3.4028235677973366E38D"  # D: a double whatever the literal settings say
# ASCII whitespace (what Java regex \s means) as raw characters: a SQL literal of them holds no escapes, so
# spark.sql.parser.escapedStringLiterals cannot change it.
_WHITESPACE_SQL = f"'{ASCII_WHITESPACE}'"
_ISO_DATE = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_BASIC_DATE = "^[0-9]{8}$"
_MINUTES_ONLY = "^([0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2})([^:]|$)"
_ISO_TIMESTAMP = (
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}"
    "([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?)?"
    "[ ]?(Z|UTC|[+-][0-9]{2}(:?[0-9]{2})?)?$"
)
# A fraction with a non-zero digit beyond the 6th: timestamps hold microseconds, and Spark's parsers drop
# the rest silently (§5.3: never truncated).
_SUBMICRO_FRACTION = "[.,][0-9]{6}[0-9]*[1-9]"
_MAX_FRACTION = 6
_BOOL_TRUE = ("true", "t", "yes", "y", "1")
_BOOL_FALSE = ("false", "f", "no", "n", "0")


@dataclass(frozen=True)
class CastFormats:
    """Extra text formats tried after the ISO forms (``options.date_formats`` / ``timestamp_formats``)."""

    date_formats: tuple[str, ...] = ()
    timestamp_formats: tuple[str, ...] = ()


def trim_sql(x: str, side: str = "BOTH") -> str:
    """``TRIM(<side> <ASCII whitespace> FROM x)``, skipped for a value with no whitespace at a trimmed end.

    Spark's TRIM with a character set allocates a one-character string for every character it inspects,
    even when there is nothing to strip; ``startswith``/``endswith`` compare bytes in place. Most values
    need no trimming, so the guard saves about half of the op (7 columns of 2M rows: 1.6 s -> 0.9 s over
    the scan). ``x`` appears in every check; Spark's subexpression elimination evaluates an ``x`` that is
    an expression (a JSON extraction) once per row, as it already did for the cast paths' own repeats."""
    checks = []
    if side in ("BOTH", "LEADING"):
        checks += [f"startswith({x}, '{c}')" for c in ASCII_WHITESPACE]
    if side in ("BOTH", "TRAILING"):
        checks += [f"endswith({x}, '{c}')" for c in ASCII_WHITESPACE]
    return f"CASE WHEN {' OR '.join(checks)} THEN trim({side} {_WHITESPACE_SQL} FROM {x}) ELSE {x} END"


def _is_blank_text(x: str) -> str:
    # Asked only of the rare values whose cast gave NULL: the guard of trim_sql would only add code.
    return f"(trim(BOTH {_WHITESPACE_SQL} FROM {x}) = '')"


def strict_cast_sql(
    x: str, source: DataType, target: LogicalType, formats: CastFormats | None = None, *, depth: int = 0
) -> str:
    """SQL for ``x`` (of Spark type ``source``) converted to ``target``; NULL when not representable.

    Blank text for a non-string target is NULL too; callers tell the two apart with :func:`cast_failed_sql`.
    """
    formats = formats or CastFormats()
    if isinstance(source, NullType):
        return f"CAST(NULL AS {target.spark_sql()})"
    kind = target.kind
    if kind == "string":
        return _to_string(x, source)
    if kind == "json":
        return _to_json_text(x, source)
    if kind in ("integer", "bigint"):
        value = _to_integer(x, source, kind)
    elif kind in ("float", "double"):
        value = _to_floating(x, source, kind)
    elif kind == "decimal":
        value = _to_decimal(x, source, target)
    elif kind == "boolean":
        value = _to_boolean(x, source)
    elif kind == "date":
        value = _to_date(x, source, formats)
    elif kind in ("timestamp", "timestamp_ntz"):
        value = _to_timestamp(x, source, formats, ntz=kind == "timestamp_ntz")
    elif kind == "binary":
        value = _to_binary(x, source)
    elif kind == "array":
        value = _to_array(x, source, target, formats, depth)
    else:  # pragma: no cover - parse_type only yields the kinds above
        raise ValueError(f"unsupported logical type {target}")
    if isinstance(source, StringType) and kind == "binary":
        # Every other text conversion already yields NULL for blank text; bytes would not.
        return f"CASE WHEN {_is_blank_text(x)} THEN NULL ELSE {value} END"
    return value


def cast_failed_sql(raw: str, value: str, source: DataType, target: LogicalType) -> str:
    """Boolean SQL: TRUE when the raw value is present but its cast (column ``value``) is NULL."""
    if isinstance(source, NullType) or target.kind == "string":
        return "false"
    # Cheapest test first: the blank-text check only runs for the (rare) NULL results.
    failed = f"{value} IS NULL AND {raw} IS NOT NULL"
    if isinstance(source, StringType):
        failed += f" AND NOT {_is_blank_text(raw)}"
    return f"({failed})"


# What follows the backslash of JSON's two-character escapes (as Spark's JSON writer uses them), as SQL;
# other control characters are written \u00XX.
_SHORT_ESCAPES = {8: "'b'", 9: "'t'", 10: "'n'", 12: "'f'", 13: "'r'", 34: "chr(34)", 92: "chr(92)"}


def json_string_sql(x: str) -> str:
    """String ``x`` as a JSON string literal, exactly as ``to_json`` writes it (quotes, backslashes and
    control characters escaped; everything else as is). ``to_json`` has no generated code: one in a
    projection takes the projection out of the pipeline's generated code, which cost ~15% of a run of the
    benchmark contract, where every cast check's message quotes its raw value. Characters are written
    with ``chr`` so the SQL means the same whatever ``spark.sql.parser.escapedStringLiterals`` says."""
    escaped = x
    for code in (92, 34, *range(32)):  # the backslash first: the later escapes insert backslashes
        tail = _SHORT_ESCAPES.get(code, f"'u{code:04X}'")
        escaped = f"replace({escaped}, chr({code}), concat(chr(92), {tail}))"
    return f"concat(chr(34), {escaped}, chr(34))"


def raw_json_sql(raw: str, source: DataType | None = None) -> str:
    """The raw value rendered as JSON text (``"abc"``, ``3.5``, ``[1,2]``) for failure messages."""
    if isinstance(source, StringType):
        return json_string_sql(raw)
    text = f"CAST({raw} AS STRING)"
    if isinstance(source, ByteType | ShortType | IntegerType | LongType | BooleanType | DecimalType):
        return text  # the same text as JSON's
    if isinstance(source, DoubleType | FloatType):
        # the same text as JSON's, except that JSON quotes the values that are no numbers
        not_finite = f"isnan({raw}) OR abs({raw}) = double('Infinity')"
        return f"CASE WHEN {not_finite} THEN concat(chr(34), {text}, chr(34)) ELSE {text} END"
    wrapped = f"to_json(named_struct('v', {raw}))"
    return f"substring({wrapped}, 6, length({wrapped}) - 6)"


def cast_failure_message_sql(
    field: str, raw: str, target: LogicalType, *, shown: str | None = None, source: DataType | None = None
) -> str:
    """``Rule failed: <field>_type (cannot cast <raw as JSON> to <type>)`` as a SQL string expression;
    ``shown`` replaces the raw value's JSON (a masked field's, see masking.masked_raw_json_sql)."""
    shown = shown if shown is not None else raw_json_sql(raw, source)
    head = message_literal(f"Rule failed: {sanitize_name(field + '_type')} (cannot cast ")
    return f"concat({head}, {shown}, {message_literal(f' to {target})')})"


# --- per-target conversions --------------------------------------------------------------------


def _to_string(x: str, source: DataType) -> str:
    if isinstance(source, StringType):
        return x
    if isinstance(source, TimestampType):
        return f"concat(replace(CAST({x} AS STRING), ' ', 'T'), 'Z')"
    if isinstance(source, TimestampNTZType):
        return f"replace(CAST({x} AS STRING), ' ', 'T')"
    if isinstance(source, ArrayType | StructType | MapType):
        return f"to_json({x})"
    return f"CAST({x} AS STRING)"


def json_value_sql(x: str) -> str:
    """SQL: the text ``x`` when it holds exactly one JSON value, else NULL.

    Inside `[x]` one value is one element and inside `[x,0]` two. Text that is no value fails the parse
    or gives another count; text with something after a value (`{} x`) either fails or closes the array
    early, and then both wrappers count the same elements. (Spark's own JSON functions read the first
    value and ignore what follows.)"""
    return (
        f"CASE WHEN json_array_length(concat('[', {x}, ']')) = 1 "
        f"AND json_array_length(concat('[', {x}, ',0]')) = 2 THEN {x} END"
    )


def _to_json_text(x: str, source: DataType) -> str:
    if isinstance(source, StringType):
        return json_value_sql(x)
    if isinstance(source, ArrayType | StructType | MapType):
        return f"to_json({x})"
    if isinstance(source, (*_INTEGRAL, *_FRACTIONAL, DecimalType, BooleanType)):
        return f"CAST({x} AS STRING)"
    return "CAST(NULL AS STRING)"


def _to_integer(x: str, source: DataType, kind: str) -> str:
    lo, hi = _INT_BOUNDS[kind]
    spark_type = "INT" if kind == "integer" else "BIGINT"
    if isinstance(source, _INTEGRAL):
        width = _INT_WIDTH[type(source)]
        if kind == "bigint" or width <= 4:
            return f"CAST({x} AS {spark_type})"
        return f"CASE WHEN {x} BETWEEN {lo} AND {hi} THEN CAST({x} AS INT) END"
    if isinstance(source, _FRACTIONAL):
        # Doubles hold every int exactly; for bigint the upper bound 2^63 itself is excluded.
        upper = f"{x} <= {hi}" if kind == "integer" else f"{x} < 9.223372036854775807E18"
        return f"CASE WHEN {x} >= {lo} AND {upper} AND {x} = floor({x}) THEN CAST({x} AS {spark_type}) END"
    if isinstance(source, DecimalType):
        return f"CASE WHEN {x} BETWEEN {lo} AND {hi} AND {x} % 1 = 0 THEN CAST({x} AS {spark_type}) END"
    if isinstance(source, StringType):
        # The slow path runs only when the fast one gives NULL, so Spark cannot share its repeats of the
        # trimmed text with the rest of the projection; the guarded trim_sql, copied into each of them,
        # made four integer columns of a CSV source exceed the JVM's 64 KB method limit (Spark then runs
        # the stage without whole-stage code generation). A plain trim keeps the copies small.
        t = f"trim(BOTH {_WHITESPACE_SQL} FROM {x})"
        # Fast path: plain integer text. Spark's text->int cast would truncate "3.5", so text with a
        # decimal point (or an exponent, which it rejects) takes the checked path below.
        fast = f"CASE WHEN NOT contains({x}, '.') THEN try_cast({x} AS {spark_type}) END"
        # Exact decimal parsing: "3.0000000000000001" is no integer (a double would round it to 3).
        d = f"try_cast({t} AS DECIMAL(38,0))"
        slow = (
            f"CASE WHEN {_fraction_digits(t)} <= 0 AND {d} BETWEEN {lo} AND {hi} "
            f"THEN CAST({d} AS {spark_type}) END"
        )
        return f"coalesce({fast}, {slow})"
    return f"CAST(NULL AS {spark_type})"


def _fraction_digits(t: str) -> str:
    """SQL: how many fractional digits the number text ``t`` (``-12.340``, ``1.5e-3``, ``2E+4``) needs
    once trailing zeros are dropped and the exponent applied; NULL for a malformed exponent. Plain string
    functions, no regular expression: it runs for every text value cast to a decimal."""
    exp_at = f"instr(lower({t}), 'e')"
    mantissa = f"CASE WHEN {exp_at} > 0 THEN substring({t}, 1, {exp_at} - 1) ELSE {t} END"
    exponent = f"CASE WHEN {exp_at} > 0 THEN try_cast(substring({t}, {exp_at} + 1) AS INT) ELSE 0 END"
    fraction = f"CASE WHEN contains({mantissa}, '.') THEN substring_index({mantissa}, '.', -1) ELSE '' END"
    # value = digits x 10^(exponent - len(fraction)); trailing zeros of all the digits (integer part
    # included: "1230e-3" is 1.23) lower what the fraction needs
    digits = f"replace(replace(replace({mantissa}, '.', ''), '-', ''), '+', '')"
    significant = f"TRIM(TRAILING '0' FROM {digits})"
    zeros = f"(length({digits}) - length({significant}))"
    # all zeros is 0 at any scale; a malformed exponent stays NULL (no number)
    needed = f"length({fraction}) - {zeros} - {exponent}"
    return f"(CASE WHEN {significant} = '' THEN 0 * {exponent} ELSE {needed} END)"


def _text_to_double(t: str) -> str:
    """Trimmed text ``t`` as a double, NULL unless it is a decimal number (optional exponent) or NaN /
    Infinity. Spark parses text with Java's ``Double.parseDouble``, which also reads hexadecimal
    (``0x1p3``) and type suffixes (``5d``, ``2.5f``): no number a data file means, so they are cast
    failures. Plain character tests rather than a regular expression: cheap for every row; ``inf`` (which
    Spark reads as Infinity) ends in ``f`` and stays accepted."""
    java_only = (
        f"(contains({t}, 'x') OR contains({t}, 'X') OR "
        f"(substring({t}, -1) IN ('d', 'D', 'f', 'F') AND NOT endswith(lower({t}), 'inf')))"
    )
    parsed = f"try_cast({t} AS DOUBLE)"
    # A finite number beyond double range (1e309) parses as Infinity: an overflow, so a cast failure.
    # Only text with an exponent (or hundreds of digits) can overflow; other rows skip the test.
    may_overflow = f"(contains({t}, 'e') OR contains({t}, 'E') OR length({t}) > 300)"
    overflowed = f"(abs({parsed}) = double('Infinity') AND NOT contains(lower({t}), 'inf'))"
    return f"CASE WHEN {java_only} THEN NULL WHEN {may_overflow} AND {overflowed} THEN NULL ELSE {parsed} END"


def _to_floating(x: str, source: DataType, kind: str) -> str:
    spark_type = "FLOAT" if kind == "float" else "DOUBLE"
    if isinstance(source, (*_INTEGRAL, *_FRACTIONAL, DecimalType)):
        value = x
    elif isinstance(source, StringType):
        value = _text_to_double(trim_sql(x))
    else:
        return f"CAST(NULL AS {spark_type})"
    if kind == "double" or isinstance(source, (*_INTEGRAL, FloatType)):
        return f"CAST({value} AS {spark_type})"
    # A finite double beyond float range would silently become Infinity.
    return (
        f"CASE WHEN isnan({value}) OR abs({value}) = double('Infinity') OR abs({value}) < {_FLOAT_OVERFLOW} "
        f"THEN CAST({value} AS FLOAT) END"
    )


def _to_decimal(x: str, source: DataType, target: LogicalType) -> str:
    """Exact: a value with more fractional digits than the scale is a cast failure (SEMANTICS §5.3:
    "never wrapped, truncated or nulled"), where Spark's cast rounds half-up."""
    spark_type = target.spark_sql()
    if isinstance(source, _INTEGRAL):
        return f"try_cast({x} AS {spark_type})"
    if isinstance(source, (*_FRACTIONAL, DecimalType)):
        value = f"try_cast({x} AS {spark_type})"
        if isinstance(source, DecimalType) and source.scale <= (target.scale or 0):
            return value
        # a float is exact when the rounded value converts back to it: its shortest decimal text has no
        # more fractional digits than the scale (a shorter text that round-trips would be the shortest)
        back = f"CAST({value} AS DOUBLE) = {x}" if isinstance(source, _FRACTIONAL) else f"{value} = {x}"
        return f"CASE WHEN {back} THEN {value} END"
    if isinstance(source, StringType):
        text = trim_sql(x)
        # Spark's cast rounds half-up to the scale; text needing more fractional digits is a failure
        # (and text beyond the precision is NULL from try_cast), at any precision up to 38.
        return (
            f"CASE WHEN {_fraction_digits(text)} <= {target.scale or 0} "
            f"THEN try_cast({text} AS {spark_type}) END"
        )
    return f"CAST(NULL AS {spark_type})"


def _to_boolean(x: str, source: DataType) -> str:
    if isinstance(source, BooleanType):
        return x
    if isinstance(source, (*_INTEGRAL, *_FRACTIONAL, DecimalType)):
        return f"CASE WHEN {x} = 1 THEN true WHEN {x} = 0 THEN false END"
    if isinstance(source, StringType):
        low = f"lower({trim_sql(x)})"
        trues = ", ".join(sql_string(v) for v in _BOOL_TRUE)
        falses = ", ".join(sql_string(v) for v in _BOOL_FALSE)
        return f"CASE WHEN {low} IN ({trues}) THEN true WHEN {low} IN ({falses}) THEN false END"
    return "CAST(NULL AS BOOLEAN)"


def _java_pattern(fmt: str) -> str:
    """Accept strftime-style formats (``%Y-%m-%d``) as well as Spark datetime patterns."""
    if "%" not in fmt:
        return fmt
    table = {
        "%Y": "yyyy",
        "%m": "MM",
        "%d": "dd",
        "%H": "HH",
        "%M": "mm",
        "%S": "ss",
        "%f": "SSSSSS",
        "%y": "yy",
        "%b": "MMM",
        "%B": "MMMM",
        "%p": "a",
        "%I": "hh",
        "%z": "Z",
        "%j": "DDD",
    }
    out = fmt
    for key, value in table.items():
        out = out.replace(key, value)
    return out


def _guarded_date(t: str, shape: str, pattern: str) -> str:
    return (
        f"CASE WHEN {t} RLIKE {sql_string(shape)} THEN CAST(try_to_timestamp({t}, '{pattern}') AS DATE) END"
    )


def _utc_date(instant: str) -> str:
    """The UTC calendar date of a TIMESTAMP (§5.3 "timestamps (UTC date)"). Runs pin the session zone to
    UTC (:mod:`lakelogic.engines.spark.pinned`) and Spark binds the zone into the cast when it analyses the
    frame, so a plain cast gives the UTC date even when the frame is evaluated after the run. (A shift by
    ``current_timezone()`` would not: that is folded when the frame executes, in whatever zone the
    session has then.)"""
    return f"CAST({instant} AS DATE)"


def _to_date(x: str, source: DataType, formats: CastFormats) -> str:
    if isinstance(source, DateType):
        return x
    if isinstance(source, TimestampType):
        return _utc_date(x)
    if isinstance(source, TimestampNTZType):
        return f"CAST({x} AS DATE)"
    if isinstance(source, IntegralType):
        # YYYYMMDD read from JSON as a number (20240115), as date_diff reads it; other numbers fail
        return _guarded_date(f"CAST({x} AS STRING)", _BASIC_DATE, "yyyyMMdd")
    if not isinstance(source, StringType):
        return "CAST(NULL AS DATE)"
    t = trim_sql(x)
    options = [
        _guarded_date(t, _ISO_DATE, "yyyy-MM-dd"),
        _guarded_date(t, _BASIC_DATE, "yyyyMMdd"),
    ]
    options += [f"CAST({_formatted_timestamp(t, f)} AS DATE)" for f in formats.date_formats]
    # a timestamp in ISO 8601 text (JSON has no other way to carry one): its UTC date
    stamp = _to_timestamp(x, source, CastFormats(), ntz=False)
    options.append(f"CASE WHEN {t} RLIKE {sql_string(_ISO_TIMESTAMP)} THEN {_utc_date(stamp)} END")
    return f"coalesce({', '.join(options)})"


def _to_timestamp(x: str, source: DataType, formats: CastFormats, *, ntz: bool) -> str:
    spark_type = "TIMESTAMP_NTZ" if ntz else "TIMESTAMP"
    if isinstance(source, TimestampType | TimestampNTZType | DateType):
        return f"CAST({x} AS {spark_type})"
    if not isinstance(source, StringType):
        return f"CAST(NULL AS {spark_type})"
    t = trim_sql(x)
    iso = f"replace(replace({t}, ',', '.'), 'UTC', 'Z')"
    # ISO 8601 lets the seconds go (`2024-01-15T10:00Z`); Spark's parser needs them before a zone
    iso = f"regexp_replace({iso}, {sql_string(_MINUTES_ONLY)}, '$1:00$2')"
    # Fast path for the common, already-clean `YYYY-MM-DD...` text: Spark's own parser checks the rest.
    # Only values it rejects pay for trimming, the ISO shape check and the separator fix-ups.
    fast = f"CASE WHEN {_iso_like_shape(x)} AND NOT {_submicro(x)} THEN try_cast({x} AS {spark_type}) END"
    options = [fast]
    if not ntz:
        # Fastest path, for `YYYY-MM-DDTHH:MM:SSZ` in a UTC session (the usual setting): Spark's parser
        # resolves an explicit zone per value (a costly look-up); without the `Z` it reads the same instant.
        # current_timezone() is folded while planning, so other sessions never take this branch.
        utc_text = f"current_timezone() IN ('UTC', 'Etc/UTC', 'Z', 'GMT') AND {_utc_iso_shape(x)}"
        without_z = f"CAST(substring(CAST({x} AS BINARY), 1, 19) AS STRING)"
        options.insert(0, f"CASE WHEN {utc_text} THEN try_cast({without_z} AS TIMESTAMP) END")
    iso_shape = f"{t} RLIKE {sql_string(_ISO_TIMESTAMP)} AND NOT {_submicro(t)}"
    options.append(f"CASE WHEN {iso_shape} THEN try_cast({iso} AS {spark_type}) END")
    options += [f"CAST({_formatted_timestamp(t, f)} AS {spark_type})" for f in formats.timestamp_formats]
    return f"coalesce({', '.join(options)})"


def _submicro(x: str) -> str:
    """SQL: the ISO text ``x`` has a fractional second with a non-zero digit beyond microseconds. The
    regular expression only runs for text with a decimal separator."""
    return f"((contains({x}, '.') OR contains({x}, ',')) AND {x} RLIKE {sql_string(_SUBMICRO_FRACTION)})"


def _formatted_timestamp(t: str, fmt: str) -> str:
    """SQL: text ``t`` read with the user's format ``fmt`` (a TIMESTAMP), NULL when it does not match or
    its fraction has a non-zero digit beyond microseconds."""
    patterns = _microsecond_patterns(_java_pattern(fmt))
    parsed = [f"try_to_timestamp({t}, {sql_string(p)})" for p in patterns]
    return parsed[0] if len(parsed) == 1 else f"coalesce({', '.join(parsed)})"


def _microsecond_patterns(pattern: str) -> list[str]:
    """Spark reads a run of ``n > 6`` ``S`` as up to ``n`` digits and truncates them to microseconds.
    Such a run becomes ``6 + k`` digits whose last ``k`` are literal zeros (``k = 0..n-6``; unquoted
    digits are literals in a pattern): Spark's fraction reader takes up to 6 digits greedily, so each
    variant reads one range of lengths and text with a non-zero digit past the 6th matches none."""
    choices: list[list[str]] = []
    # quoted text ('...', '' a quote) is literal: only unquoted runs of S are fractions
    for i, part in enumerate(re.split(r"('[^']*(?:'|$))", pattern)):
        for j, piece in enumerate(re.split(f"(S{{{_MAX_FRACTION + 1},}})", part) if i % 2 == 0 else [part]):
            zeros = range(len(piece) - _MAX_FRACTION + 1) if j % 2 else ()
            choices.append(["S" * _MAX_FRACTION + "0" * k for k in zeros] or [piece])
    return ["".join(p) for p in itertools.product(*choices)]


def _iso_like_shape(x: str) -> str:
    """``x`` starts ``????-??-??`` then ends there or goes on with ``T``/space, and ends in a digit or ``Z``:
    the values Spark's own (more lenient) parser may read directly. Text Spark would also read but ISO 8601
    does not allow (`2024-1-5`, a region zone id such as `…10:00Europe/Paris`) fails this shape and the
    ISO check after it. Byte checks: cheap enough for every value."""
    data = f"CAST({x} AS BINARY)"
    last = f"substring({data}, -1, 1)"
    return (
        f"substring({data}, 5, 1) = X'2D' AND substring({data}, 8, 1) = X'2D' "
        f"AND (octet_length({x}) = 10 OR substring({data}, 11, 1) IN (X'54', X'20')) "
        f"AND ({last} BETWEEN X'30' AND X'39' OR {last} = X'5A')"
    )


def _utc_iso_shape(x: str) -> str:
    """``x`` has the shape ``????-??-??T??:??:?dZ`` (20 bytes, ``d`` a digit): cutting the ``Z`` leaves a
    time without zone that ends in a digit, which reads as the same instant in a UTC session. Checked on
    the bytes: character positions (``substring`` of a string) cost a scan of the string per call, and
    this check runs on every timestamp value (10M values: 1.1 s instead of 3.7 s)."""
    data = f"CAST({x} AS BINARY)"
    marks = {5: "2D", 8: "2D", 11: "54", 14: "3A", 17: "3A"}  # - - T : :
    checks = [f"substring({data}, {at}, 1) = X'{byte}'" for at, byte in marks.items()]
    checks.append(f"substring({data}, 19, 1) BETWEEN X'30' AND X'39'")
    return f"octet_length({x}) = 20 AND endswith({x}, 'Z') AND {' AND '.join(checks)}"


def _to_binary(x: str, source: DataType) -> str:
    if isinstance(source, BinaryType):
        return x
    if isinstance(source, StringType):
        return f"CAST({x} AS BINARY)"
    return "CAST(NULL AS BINARY)"


def _to_array(x: str, source: DataType, target: LogicalType, formats: CastFormats, depth: int) -> str:
    element = target.element or LogicalType("string")
    var = f"__ll_e{depth}"
    if isinstance(source, ArrayType):
        array_sql, element_type = x, source.elementType
    elif isinstance(source, StringType):
        # JSON-array text: parse elements as text (numbers keep their literal text), then cast each;
        # only text holding exactly one JSON value (`[1,2] x` was read as [1, 2])
        one_value = json_value_sql(trim_sql(x))
        array_sql, element_type = f"from_json({one_value}, 'array<string>')", StringType()
    else:
        return f"CAST(NULL AS {target.spark_sql()})"
    inner = strict_cast_sql(var, element_type, element, formats, depth=depth + 1)
    bad = cast_failed_sql(var, inner, element_type, element)
    # A single bad element makes the whole value unrepresentable (never silently dropped).
    return (
        f"CASE WHEN exists({array_sql}, {var} -> {bad}) THEN CAST(NULL AS {target.spark_sql()}) "
        f"ELSE transform({array_sql}, {var} -> {inner}) END"
    )


def spark_type_matches(source: DataType, target: LogicalType) -> bool:
    """True when a column of ``source`` type already has the model type (no cast needed). A ``json``
    field is stored as a string but its text must still be valid JSON (SEMANTICS §5.2), so it never
    matches."""
    if target.kind == "json":
        return False
    return source.simpleString().lower() == target.spark_sql().lower().replace(" ", "")


def formats_from(date_formats: Sequence[str], timestamp_formats: Sequence[str]) -> CastFormats:
    return CastFormats(tuple(date_formats), tuple(timestamp_formats))
