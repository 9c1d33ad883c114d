"""Regular expressions of row rules checked before any data is read.

Spark compiles a literal pattern (``RLIKE``, ``regexp_*``, ``split``) only when a task first evaluates it,
so a malformed one failed the run's job with a raw ``PatternSyntaxException``, naming neither the rule
nor its YAML path. Each literal pattern is compiled here with the JVM's own ``java.util.regex`` (the
engine Spark uses, so exactly what Spark accepts), after Spark's own parser has read the literal (its
escape rules decide which backslashes reach the pattern). Analysis only: no job.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlglot
from py4j.protocol import Py4JJavaError
from pyspark.errors import IllegalArgumentException
from pyspark.sql import SparkSession
from sqlglot import exp

from lakelogic.errors import PlanError

_PATTERN_NODES = (exp.RegexpLike, exp.RegexpILike, exp.RegexpExtract, exp.RegexpReplace, exp.RegexpSplit)
_MENTIONS = ("rlike", "regexp", "split")


def literal_patterns(sql: str) -> list[str]:
    """The string literals (as Spark SQL text) in the pattern position of ``sql``'s regex functions."""
    if not any(word in sql.lower() for word in _MENTIONS):
        return []
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return []  # Spark's own analysis reports SQL it cannot read
    found: list[str] = []
    for node in tree.find_all(*_PATTERN_NODES):
        pattern = node.args.get("expression")
        if isinstance(pattern, exp.Literal) and pattern.is_string:
            found.append(pattern.sql(dialect="spark"))
    return found


def pattern_problem(spark: SparkSession, literal_sql: str) -> str | None:
    """Why Java rejects the pattern the Spark SQL string literal ``literal_sql`` holds; None when valid."""
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    try:
        literal = spark._jsparkSession.sessionState().sqlParser().parseExpression(literal_sql)  # type: ignore[attr-defined]
        jvm.java.util.regex.Pattern.compile(literal.value().toString())
    except IllegalArgumentException as exc:  # PySpark's translation of PatternSyntaxException
        return str(exc).strip()
    except Py4JJavaError as exc:
        return str(exc.java_exception.getMessage())
    return None


def refuse_invalid_patterns(spark: SparkSession, checks: Iterable[tuple[str, str, str]]) -> None:
    """``checks``: (rule name, SQL, YAML path). The first malformed literal pattern is a plan error naming
    its rule and path, with Java's description of the problem."""
    for name, sql, yaml_path in checks:
        for literal in literal_patterns(sql):
            problem = pattern_problem(spark, literal)
            if problem is not None:
                raise PlanError(
                    f"row rule {name!r}: invalid regular expression {literal}: {problem}",
                    yaml_path=yaml_path,
                    hint="patterns are Java regular expressions (java.util.regex.Pattern)",
                )
