"""Turn pydantic validation errors into :class:`lakelogic.errors.Problem` (file, line, YAML path,
bad value, allowed values, did-you-mean)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import ErrorDetails

from lakelogic.contract.interpolate import is_credential_key
from lakelogic.contract.models_base import closest
from lakelogic.contract.models_contract import Contract
from lakelogic.contract.models_fields import Model, ModelField
from lakelogic.contract.models_quality import Quality
from lakelogic.contract.models_target import Materialization
from lakelogic.contract.problem_texts import describe, model_keys, rewrite, union_members, unwrap
from lakelogic.contract.yaml_io import Positions, join_path
from lakelogic.errors import Problem

# Keys people put in the wrong place, with where they belong (SEMANTICS §1.2).
_TOP_LEVEL_PK = "primary_key is a top-level key: move it to the root of the contract"
_MISPLACED: dict[tuple[str, str], str] = {
    ("model", "primary_key"): _TOP_LEVEL_PK,
    ("materialization", "primary_key"): _TOP_LEVEL_PK,
    ("field", "primary_key"): "primary_key is a top-level key listing key columns: primary_key: [<field>]",
    ("field", "unique"): "uniqueness is a dataset rule: quality.dataset_rules: [{unique: <field>}]",
    ("model", "unique"): "uniqueness is a dataset rule: quality.dataset_rules: [{unique: [<cols>]}]",
    ("root", "row_rules"): "row_rules belong under quality: quality.row_rules",
    ("root", "dataset_rules"): "dataset_rules belong under quality: quality.dataset_rules",
    ("root", "fields"): "fields belong under model: model.fields",
    ("model", "transformations"): "transformations is a top-level key",
    ("quality", "transformations"): "transformations is a top-level key",
}

_BLOCK_NAMES: dict[type[BaseModel], str] = {
    Contract: "root",
    Model: "model",
    Materialization: "materialization",
    ModelField: "field",
    Quality: "quality",
}

_VALUE_MAX = 80


def problems_from_validation(
    exc: ValidationError, root: type[BaseModel], data: Any, *, file: str, positions: Positions
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, de-duplicated, in document order."""
    converted: list[tuple[str, Problem]] = []
    for err in exc.errors(include_url=False):
        if err["type"] == "document":
            converted += [("document", p) for p in _document_problems(err, data, file, positions)]
        else:
            converted.append((err["type"], _convert(err, root, data, file=file, positions=positions)))
    out: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for problem in _merge_union_branches(converted):
        if (problem.path, problem.message) in seen:
            continue
        seen.add((problem.path, problem.message))
        out.append(problem)
    out.sort(key=lambda p: (p.line or 10**9, p.column, p.path))
    return out


# pydantic error types meaning "the value has the wrong shape for this branch of a union".
_SHAPE_ERRORS = {
    "string_type": "text",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
    "bool_value": "true/false",
    "bool_type": "true/false",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "an integer",
    "int_parsing": "an integer",
}


def _merge_union_branches(converted: list[tuple[str, Problem]]) -> list[Problem]:
    """A value that fits no branch of a union gives one error per branch: say it once.

    When another problem lies *inside* the value (or is about the value itself but not its shape),
    the value had the right shape for that branch and the shape errors of the other branches are
    noise, so they are dropped.
    """
    shape_paths: dict[str, list[tuple[str, Problem]]] = {}
    for kind, problem in converted:
        if kind in _SHAPE_ERRORS:
            shape_paths.setdefault(problem.path, []).append((kind, problem))
    union_paths = {path for path, items in shape_paths.items() if len(items) > 1}
    out: list[Problem] = []
    merged: set[str] = set()
    for kind, problem in converted:
        if kind not in _SHAPE_ERRORS or problem.path not in union_paths:
            out.append(problem)
            continue
        path = problem.path
        deeper = any(
            p.path.startswith((path + ".", path + "[")) or (p.path == path and k not in _SHAPE_ERRORS)
            for k, p in converted
        )
        if deeper or path in merged:
            continue
        merged.add(path)
        kinds = list(dict.fromkeys(_SHAPE_ERRORS[k] for k, _ in shape_paths[path]))
        message = "expected " + (", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else kinds[0])
        out.append(replace(problem, message=message, allowed=None))  # the message lists the forms
    return out


def _document_problems(err: ErrorDetails, data: Any, file: str, positions: Positions) -> list[Problem]:
    """Expand the root model's cross-block findings (``Contract.document_problems``)."""
    prefix = _render(_data_loc(tuple(err["loc"]), data, keep_last=False))
    out = []
    for path, message in (err.get("ctx") or {}).get("problems", ()):
        full = f"{prefix}.{path}" if prefix else path
        line, col = position_of(full, positions)
        out.append(Problem(file=file, path=full, message=message, line=line, column=col))
    return out


def _convert(
    err: ErrorDetails, root: type[BaseModel], data: Any, *, file: str, positions: Positions
) -> Problem:
    loc = tuple(err["loc"])
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    kind = err["type"]
    data_loc = _data_loc(loc, data, keep_last=kind in ("missing", "extra_forbidden"))
    path = _render(data_loc)
    if kind in ("unknown_op", "op_empty") and "key" in ctx:
        path = join_path(path, str(ctx["key"]))
    line, col = position_of(path, positions)
    message = _clean(err["msg"])
    allowed = _text(ctx.get("allowed"))
    suggestion = _text(ctx.get("suggestion"))
    value: str | None = None

    if kind == "extra_forbidden":
        key = str(loc[-1])
        parent = _model_at(root, loc[:-1])
        message = "unknown key"
        if parent is not None:
            keys = model_keys(parent)
            allowed = ", ".join(keys)
            suggestion = closest(key, keys)
            hint = _misplacement_hint(parent, key)
            if hint:
                message = f"unknown key; {hint}"
                suggestion = None
    elif kind == "missing" and loc and isinstance(loc[-1], int):  # a fixed-length list one item short
        message = "too few items"
        allowed = describe(_declared_type(root, loc[:-1], data))
    elif kind == "missing":
        message = "required key is missing"
    elif kind not in ("rule_shape", "op_count"):
        value = _show_value(err.get("input"), data_loc)
        worded = rewrite(kind, ctx, _declared_type(root, loc, data), err.get("input"))
        if worded is not None:
            message, allowed, suggestion = worded[0], worded[1] or allowed, worded[2] or suggestion
            value = value or _kind_of(err.get("input"))
    if kind == "rule_shape":
        keys = list(err["input"]) if isinstance(err.get("input"), Mapping) else []
        options = (allowed or "").split(", ")
        guesses = [g for g in (closest(str(k), options) for k in keys) if g]
        suggestion = suggestion or (guesses[0] if guesses else None)
    return Problem(
        file=file,
        path=path,
        message=message,
        line=line,
        column=col,
        value=value,
        allowed=allowed,
        suggestion=suggestion,
    )


def _clean(msg: str) -> str:
    # pydantic prefixes ValueErrors raised in validators with "Value error, ".
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return msg


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _data_loc(loc: tuple[Any, ...], data: Any, *, keep_last: bool) -> list[str | int]:
    """Keep only the loc segments that address real data (drop union tags and type names)."""
    out: list[str | int] = []
    node = data
    for i, seg in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(node, Mapping) and seg in node) or (
            isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node)
        ):
            out.append(seg)
            node = node[seg]
        elif last and keep_last and isinstance(node, Mapping):
            out.append(seg)
    return out


def _render(loc: list[str | int]) -> str:
    path = ""
    for seg in loc:
        path = join_path(path, seg)
    return path


def position_of(path: str, positions: Positions) -> tuple[int, int]:
    """Position of ``path`` or of its nearest ancestor that has one."""
    probe = path
    while probe:
        if probe in positions:
            return positions[probe]
        cut = max(probe.rfind("."), probe.rfind("["))
        probe = probe[:cut] if cut > 0 else ""
    return (0, 0)


def _show_value(value: Any, loc: list[str | int]) -> str | None:
    if value is None or isinstance(value, (Mapping, list)):
        return None
    if loc and isinstance(loc[-1], str) and is_credential_key(loc[-1]):
        return "***"
    text = repr(value)
    return text if len(text) <= _VALUE_MAX else text[: _VALUE_MAX - 3] + "..."


def _misplacement_hint(model: type[BaseModel], key: str) -> str | None:
    where = _BLOCK_NAMES.get(model)
    return _MISPLACED.get((where, key)) if where else None


# --- walking the model types along a pydantic loc ------------------------------------------


def _declared_type(root: type[BaseModel], loc: tuple[Any, ...], data: Any) -> Any:
    """The type declared for the value at ``loc``: the key's own annotation, before pydantic picked a
    member of a union (the loc segments that address no data, such as ``str``, only narrow it)."""
    current: Any = root
    declared: Any = root
    node = data
    for seg in loc:
        current = _step(current, seg) or current
        if (isinstance(node, Mapping) and seg in node) or (
            isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node)
        ):
            node = node[seg]
            declared = current
    return declared


def _kind_of(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return None


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that validated the value at ``loc`` (None when it cannot be told)."""
    current: Any = root
    for seg in loc:
        # Segments that match nothing (pydantic's union branch names such as 'str') are skipped.
        current = _step(current, seg) or current
    return _as_model(current)


def _as_model(tp: Any) -> type[BaseModel] | None:
    tp, _ = unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    models = [m for m in (_as_model(x) for x in union_members(tp)) if m is not None]
    return models[0] if len(models) == 1 else None


def _step(tp: Any, seg: Any) -> Any:
    tp, _ = unwrap(tp)
    members = union_members(tp)
    if members:
        for member in members:  # a union tag selects its member
            _, meta = unwrap(member)
            if any(isinstance(m, Tag) and m.tag == seg for m in meta):
                return member
        for member in members:
            inner, _ = unwrap(member)
            if getattr(inner, "__name__", None) == seg:
                return member
        for member in members:
            found = _step(member, seg)
            if found is not None:
                return found
        return None
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and isinstance(seg, int):
        return typing.get_args(tp)[0]
    if origin is dict and isinstance(seg, str):
        return typing.get_args(tp)[1]
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(seg, str):
        for name, field in tp.model_fields.items():
            if seg in (name, field.alias):
                return (
                    field.annotation
                    if not field.metadata
                    else typing.Annotated[(field.annotation, *field.metadata)]
                )
    return None
