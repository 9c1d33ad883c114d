"""The compiler's checks of single items (an op, a rule's SQL) on a document that failed validation.

The compiler needs a valid :class:`~lakelogic.contract.models.Contract`, so a document with a schema
problem would show its SQL problems only once the schema ones are fixed. Each ``transformations`` item
and each ``{name, sql}`` rule that validates on its own is checked here instead, with the same code
(and so the same messages) as the compiler. Checks that depend on other items (columns a rule reads,
phases, names) are left to the full compile: a broken neighbour would make them report noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from pydantic import TypeAdapter, ValidationError

from lakelogic.contract.models import QualityRule, Transformation
from lakelogic.contract.models_dataset_rules import DatasetRule
from lakelogic.contract.models_row_rules import RowRule
from lakelogic.errors import PlanError
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.ops import compile_transform
from lakelogic.plan.sqlutil import parse_sql

_ROW_RULE: TypeAdapter[Any] = TypeAdapter(RowRule)
_DATASET_RULE: TypeAdapter[Any] = TypeAdapter(DatasetRule)


def item_problems(document: Mapping[str, Any]) -> list[PlanError]:
    """Plan problems of the well-formed ``transformations`` items and ``{name, sql}`` rules of
    ``document`` (a contract mapping that may fail validation elsewhere), in document order."""
    found = PlanProblems()
    dataset = _dataset_name(document)
    for i, item in enumerate(_items(document.get("transformations"))):
        transformation = _valid(Transformation.model_validate, item)
        if transformation is not None:
            compile_one = partial(
                compile_transform, i, transformation, f"transformations[{i}]", dataset=dataset
            )
            found.attempt(compile_one, None)
    model = document.get("model")
    fields = model.get("fields") if isinstance(model, Mapping) else None
    for i, field in enumerate(_items(fields)):
        rules = field.get("rules") if isinstance(field, Mapping) else None
        for j, rule in enumerate(_items(rules)):
            _check_rule(found, QualityRule.model_validate, rule, f"model.fields[{i}].rules[{j}]", "rule")
    quality = document.get("quality")
    if isinstance(quality, Mapping):
        for i, rule in enumerate(_items(quality.get("row_rules"))):
            _check_rule(found, _ROW_RULE.validate_python, rule, f"quality.row_rules[{i}]", "rule")
        for i, rule in enumerate(_items(quality.get("dataset_rules"))):
            _check_rule(
                found, _DATASET_RULE.validate_python, rule, f"quality.dataset_rules[{i}]", "dataset rule"
            )
    return found.errors


def _check_rule(found: PlanProblems, validate: Callable[[Any], Any], item: Any, path: str, kind: str) -> None:
    rule = _valid(validate, item)
    if isinstance(rule, QualityRule):  # shorthands hold no SQL of their own
        found.attempt(
            partial(parse_sql, rule.sql, what=f"{kind} {rule.name!r}", yaml_path=f"{path}.sql"), None
        )


def _valid(validate: Callable[[Any], Any], item: Any) -> Any:
    """The validated item, or None when it has a schema problem of its own (already reported)."""
    try:
        return validate(item)
    except ValidationError:
        return None


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dataset_name(document: Mapping[str, Any]) -> str | None:
    """The name the ``sql`` op accepts for its input; only recorded in the op, never checked."""
    dataset = document.get("dataset")
    info = document.get("info")
    table = info.get("table_name") if isinstance(info, Mapping) else None
    name = dataset or table
    return str(name) if name else None
