"""Transformation ops -> :class:`~lakelogic.plan.steps.Transform` steps (SEMANTICS §9).

``compile_transform`` is the one entry point the compiler calls per ``transformations[i]`` item. It
resolves the phase (an explicit ``phase`` wins, else the op's default from the §9.2 table), validates
and normalises the parameters (aliases resolved, defaults applied, SQL parsed with sqlglot), and
declares how the op may change the row count so engines can count without extra jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan import ops_columns as col
from lakelogic.plan import ops_reshape as reshape
from lakelogic.plan import ops_rows as rows
from lakelogic.plan.ops_common import OpArgs, OpCompiled, params_as_dict
from lakelogic.plan.steps import Transform
from lakelogic.types import Phase

Compiler = Callable[[OpArgs], OpCompiled]


@dataclass(frozen=True)
class OpSpec:
    name: str
    default_phase: Phase
    compile: Compiler | None  # None: `sql`, compiled separately (its parameter is a string)


_PRE, _POST = Phase.PRE, Phase.POST

# Normalising ops default to pre, enriching ops to post (SEMANTICS §9.2 table, column "Phase").
OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("sql", _POST, None),
        OpSpec("rename", _PRE, col.compile_rename),
        OpSpec("derive", _POST, col.compile_derive),
        OpSpec("filter", _PRE, col.compile_filter),
        OpSpec("cast", _PRE, col.compile_cast),
        OpSpec("select", _PRE, col.compile_select),
        OpSpec("drop", _PRE, col.compile_drop),
        OpSpec("trim", _PRE, col.compile_trim),
        OpSpec("lower", _PRE, col.compile_case),
        OpSpec("upper", _PRE, col.compile_case),
        OpSpec("coalesce", _PRE, col.compile_coalesce),
        OpSpec("map_values", _PRE, col.compile_map_values),
        OpSpec("deduplicate", _PRE, rows.compile_deduplicate),
        OpSpec("deduplicate_by_latest", _PRE, rows.compile_deduplicate_by_latest),
        OpSpec("split", _PRE, col.compile_split),
        OpSpec("explode", _PRE, rows.compile_explode),
        OpSpec("json_extract", _POST, col.compile_json_extract),
        OpSpec("bucket", _POST, col.compile_bucket),
        OpSpec("date_diff", _POST, col.compile_date_diff),
        OpSpec("date_range_explode", _POST, rows.compile_date_range_explode),
        OpSpec("lookup", _POST, rows.compile_lookup),
        OpSpec("join", _POST, rows.compile_join),
        OpSpec("rollup", _POST, reshape.compile_rollup),
        OpSpec("pivot", _POST, reshape.compile_pivot),
        OpSpec("unpivot", _POST, reshape.compile_unpivot),
    )
}

OP_NAMES: tuple[str, ...] = tuple(OPS)


def default_phase(op: str) -> Phase:
    """The phase an op runs in when the item does not say."""
    return OPS[op].default_phase


def _unpack(item: Any, yaml_path: str) -> tuple[str, Any, Phase | None]:
    """(op name, op parameters, explicit phase) of a contract item or a plain mapping."""
    if isinstance(item, Mapping):
        keys = [k for k, v in item.items() if k != "phase" and v is not None]
        if len(keys) != 1:
            raise PlanError(
                f"a transformation needs exactly one op key, got {', '.join(map(str, keys)) or 'none'}",
                yaml_path=yaml_path,
                hint=f"ops: {', '.join(OP_NAMES)}",
            )
        op_name, params, phase = str(keys[0]), item[keys[0]], item.get("phase")
    else:
        op_name, params, phase = item.op_name, item.op, getattr(item, "phase", None)
    if phase is not None:
        try:
            phase = Phase(str(getattr(phase, "value", phase)).lower())
        except ValueError as exc:
            raise PlanError(
                f"phase must be pre or post, got {phase!r}", yaml_path=f"{yaml_path}.phase"
            ) from exc
    return op_name, params, phase


def compile_transform(index: int, item: Any, yaml_path: str, *, dataset: str | None = None) -> Transform:
    """Compile ``transformations[index]`` (a contract ``Transformation`` or a plain mapping).

    ``dataset`` is the contract's dataset name: the ``sql`` op accepts it (and ``{dataset}``) as a
    synonym of ``source``. Raises :class:`PlanError` naming the op index and YAML path on bad input.
    """
    op_name, params, explicit_phase = _unpack(item, yaml_path)
    spec = OPS.get(op_name)
    if spec is None:
        raise PlanError(
            f"unknown transformation op {op_name!r}", yaml_path=yaml_path, hint=f"ops: {', '.join(OP_NAMES)}"
        )
    if spec.compile is None:
        sql_args = _SqlArgs(op="sql", index=index, yaml_path=yaml_path, raw={})
        if not isinstance(params, str):
            raise sql_args.error("the `sql` op takes a SELECT query string")
        compiled = col.compile_sql(sql_args, params, dataset)
    else:
        args = OpArgs(op=op_name, index=index, yaml_path=yaml_path, raw=params_as_dict(params))
        compiled = spec.compile(args)
    return Transform(
        yaml_path=yaml_path,
        index=index,
        op=op_name,
        phase=explicit_phase or spec.default_phase,
        params=compiled.params,
        row_effect=compiled.row_effect,
        sql=compiled.sql,
        creates=compiled.creates,
        reads=compiled.reads,
    )


class _SqlArgs(OpArgs):
    """The `sql` op's only parameter is the item value itself: its YAML path is `transformations[i].sql`."""

    def path(self, key: str | None = None) -> str:
        return f"{self.yaml_path}.sql"
