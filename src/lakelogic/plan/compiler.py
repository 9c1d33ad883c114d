"""The compiler: one contract → one :class:`~lakelogic.plan.steps.Plan` (SEMANTICS §8 order).

Pure: no engine import and no I/O beyond what loading the contract already did. Engines execute the
plan's steps and never re-read the contract to decide semantics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lakelogic.errors import ContractError, PlanError, Problem
from lakelogic.plan import io_steps, shape_steps
from lakelogic.plan.access import as_list, opt, plain, text
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.dataset_rules import compile_dataset_rules
from lakelogic.plan.fields import resolve_fields
from lakelogic.plan.rule_forms import RuleContext
from lakelogic.plan.rules import ColumnOrigins, compile_row_rules
from lakelogic.plan.slos import compile_slos
from lakelogic.plan.steps import (
    AddLineage,
    CheckDataset,
    CleanupSource,
    DatasetRule,
    EvaluateSlos,
    FieldSpec,
    LoadLink,
    Plan,
    PreserveUpstream,
    RowRule,
    Split,
    Step,
    Transform,
    ValidateRows,
)
from lakelogic.types import Phase, normalize_layer, slugify

# Ops whose output columns cannot be known before the run (they replace or reshape the frame).
_OPAQUE_OPS = frozenset({"sql", "pivot", "unpivot", "rollup", "select"})


@dataclass(frozen=True)
class _Compiled:
    """The parts of a plan that need the whole contract to decide (rules, phases, write columns)."""

    fields: tuple[FieldSpec, ...]
    transforms: tuple[Transform, ...]
    links: tuple[LoadLink, ...]
    preserve: PreserveUpstream | None
    post_only: frozenset[str]
    row_rules: tuple[RowRule, ...]
    dataset_rules: tuple[DatasetRule, ...]
    lineage: AddLineage | None
    slos: EvaluateSlos | None = None
    cleanup: CleanupSource | None = None


def compile_contract(
    contract: Any, *, engine: str = "spark", external_logic_engine_override: bool = False
) -> Plan:
    """Compile ``contract`` into the ordered steps of one run on ``engine``.

    ``external_logic_engine_override``: run ``external_logic`` on ``engine`` even when the contract names
    another engine (the conformance harness does this; SEMANTICS §23). Raises :class:`PlanError` (or
    :class:`ContractError` for key columns that exist nowhere) naming the YAML path.
    """
    warnings: list[str] = []
    name = _contract_name(contract)
    domain, system = _identity(contract, "domain"), _identity(contract, "system")
    problems = PlanProblems()
    parts = _compile_parts(contract, name, domain, system, warnings, problems)
    problems.raise_if_any()
    steps = _assemble(contract, parts, engine=engine, override_engine=external_logic_engine_override)
    info = opt(contract, "info")
    title = str(opt(info, "title", name))
    if str(opt(info, "status", "") or "").lower() == "deprecated":
        warnings.append(f"contract_deprecated: info.status: contract {name!r} is deprecated")
    layer = getattr(contract, "layer", None)
    quarantine = opt(contract, "quarantine")
    return Plan(
        contract_name=name,
        title=title,
        table_name=str(getattr(contract, "table_name", None) or opt(info, "table_name") or slugify(title)),
        version=str(opt(info, "version", "1.0.0")),
        layer=layer
        if layer is not None
        else normalize_layer(opt(info, "target_layer") or opt(contract, "tier")),
        domain=domain,
        system=system,
        steps=steps,
        links=parts.links,
        primary_key=tuple(as_list(opt(contract, "primary_key"))),
        fields=parts.fields,
        quarantine=plain(quarantine) if quarantine is not None else {},
        warnings=tuple(warnings),
    )


def _compile_parts(
    contract: Any,
    name: str,
    domain: str | None,
    system: str | None,
    warnings: list[str],
    problems: PlanProblems,
) -> _Compiled:
    """Every independent item (field, op, rule) is compiled even when another failed, so one run of
    the compiler reports all of a contract's problems; checks that need the failed items' output
    (which columns exist) are skipped then, so no problem is reported twice."""
    fields = resolve_fields(contract, problems)
    transforms = _transforms(contract, name, problems)
    complete = not problems.errors
    preserve = shape_steps.preserve_upstream(contract)
    extracted = io_steps.extraction_outputs(contract)
    pre_created = set(extracted) | {c for t in transforms if t.phase == Phase.PRE for c in t.creates}
    post_only = frozenset(
        c for t in transforms if t.phase == Phase.POST for c in t.adds if c not in pre_created
    )
    strategy = str(text(opt(opt(contract, "materialization"), "strategy", ""))) or None
    written = _materialization_columns(contract, strategy, transforms)
    if complete:
        _check_key_columns(contract, fields, transforms)
    no_links: tuple[LoadLink, ...] = ()
    links = problems.attempt(partial(io_steps.load_links, contract), no_links)

    key_cols, key_path = _write_keys(contract, strategy)
    ctx = RuleContext(
        fields=fields,
        links=frozenset(link.name for link in links),
        enforce_required=bool(opt(opt(contract, "quality"), "enforce_required", True)),
        cast_to_string=shape_steps.cast_to_string(contract),
        key_columns=key_cols,
        key_path=key_path,
        write_only=frozenset({f.name for f in fields if f.generated} | written),
    )
    origins = ColumnOrigins(
        post_only=post_only,
        known=_known_columns(contract, fields, transforms, extracted, preserve) if complete else frozenset(),
        source_may_add=shape_steps.schema_policy(contract)[0] != "quarantine",
        opaque_post=any(t.op in _OPAQUE_OPS and t.phase == Phase.POST for t in transforms),
    )
    row_rules = compile_row_rules(contract, ctx, origins, warnings, problems)
    lineage = shape_steps.add_lineage(contract, contract_name=name, domain=domain, system=system)
    problems.attempt(partial(_check_write_columns, contract, origins, lineage, written, warnings), None)
    dataset_rules = compile_dataset_rules(
        contract,
        implied_unique=_implied_unique(contract, strategy, fields, transforms),
        materialization_columns=written,
        problems=problems,
    )
    no_slos: EvaluateSlos | None = None
    slos = problems.attempt(partial(compile_slos, contract), no_slos)
    no_cleanup: CleanupSource | None = None
    cleanup = problems.attempt(partial(io_steps.cleanup_source, contract), no_cleanup)
    return _Compiled(
        slos=slos,
        cleanup=cleanup,
        fields=fields,
        transforms=tuple(transforms),
        links=links,
        preserve=preserve,
        post_only=post_only,
        row_rules=row_rules,
        dataset_rules=dataset_rules,
        lineage=lineage,
    )


def _assemble(contract: Any, parts: _Compiled, *, engine: str, override_engine: bool) -> tuple[Step, ...]:
    """The steps in SEMANTICS §8 order; optional steps only when configured."""
    quality, quarantine = opt(contract, "quality"), opt(contract, "quarantine")
    steps: list[Step | None] = []
    if opt(contract, "source") is not None:
        steps.append(io_steps.read_source(contract))
    steps.extend(parts.links)
    steps.append(parts.preserve)
    if opt(contract, "extraction") is not None:
        steps.append(io_steps.extract(contract))
    if opt(contract, "external_logic") is not None:
        steps.append(io_steps.external_logic(contract, engine=engine, override_engine=override_engine))
    steps.extend(t for t in parts.transforms if t.phase == Phase.PRE)
    steps.append(shape_steps.enforce_schema(contract, parts.fields, parts.post_only))
    steps.append(_validate(parts.row_rules, Phase.PRE))
    steps.append(
        Split(
            yaml_path="quarantine",
            quarantine_enabled=bool(opt(quarantine, "enabled", True)),
            include_error_reason=bool(opt(quarantine, "include_error_reason", True)),
        )
    )
    steps.extend(t for t in parts.transforms if t.phase == Phase.POST)
    steps.append(_validate(parts.row_rules, Phase.POST))
    steps.append(shape_steps.final_projection(contract, parts.fields))
    steps.append(
        CheckDataset(
            yaml_path="quality.dataset_rules",
            rules=parts.dataset_rules,
            fail_pipeline_on_dataset_error=bool(opt(quality, "fail_pipeline_on_dataset_error", False)),
        )
    )
    steps.append(shape_steps.mask(parts.fields))
    steps.append(parts.lineage)
    if opt(contract, "materialization") is not None:
        steps.append(io_steps.materialize(contract))
    steps.append(parts.cleanup)
    steps.append(parts.slos)
    return tuple(s for s in steps if s is not None)


def _validate(rules: tuple[RowRule, ...], phase: Phase) -> ValidateRows:
    return ValidateRows(
        yaml_path="quality.row_rules", phase=phase, rules=tuple(r for r in rules if r.phase == phase)
    )


# --- pieces -----------------------------------------------------------------------------------


def _contract_name(contract: Any) -> str:
    name = getattr(contract, "contract_name", None)
    if isinstance(name, str) and name:
        return name
    info = opt(contract, "info")
    return str(
        opt(contract, "dataset") or opt(info, "table_name") or slugify(str(opt(info, "title", "contract")))
    )


def _identity(contract: Any, key: str) -> str | None:
    value = getattr(contract, key, None) if not isinstance(contract, dict) else None
    if isinstance(value, str):
        return value
    return opt(opt(contract, "info"), key) or opt(opt(contract, "metadata"), key)


def _transforms(contract: Any, dataset: str, problems: PlanProblems) -> list[Transform]:
    from lakelogic.plan.ops import compile_transform

    compiled = (
        problems.attempt(partial(compile_transform, i, item, f"transformations[{i}]", dataset=dataset), None)
        for i, item in enumerate(as_list(opt(contract, "transformations")))
    )
    return [t for t in compiled if t is not None]


def _write_keys(contract: Any, strategy: str | None) -> tuple[tuple[str, ...], str]:
    """Key columns a merge/SCD2 write needs non-NULL (§6), and where they were declared."""
    if strategy == "merge":
        return tuple(as_list(opt(contract, "primary_key"))), "primary_key"
    if strategy == "scd2":
        business = as_list(opt(opt(opt(contract, "materialization"), "scd2"), "business_key"))
        if business:
            return tuple(business), "materialization.scd2.business_key"
        if as_list(opt(contract, "natural_key")):
            return tuple(as_list(opt(contract, "natural_key"))), "natural_key"
        return tuple(as_list(opt(contract, "primary_key"))), "primary_key"
    return (), "primary_key"


def _implied_unique(
    contract: Any, strategy: str | None, fields: tuple[FieldSpec, ...], transforms: Sequence[Transform]
) -> tuple[str, ...]:
    """Columns of the rule ``primary_key`` implies (§10.5): the key, plus the change time when a batch may
    hold several rows of one key: SCD2's ``timestamp_field``, else a CDC source's ``cdc_timestamp_field``
    (§3.5: a key's events apply in that order; two events of one key at one time are still duplicates)."""
    pk = tuple(str(c) for c in as_list(opt(contract, "primary_key")))
    if not pk:
        return ()
    ts = _change_time(contract, strategy, fields, transforms)
    if ts and ts not in pk:
        return (*pk, ts)
    return pk


def _change_time(
    contract: Any, strategy: str | None, fields: tuple[FieldSpec, ...], transforms: Sequence[Transform]
) -> str | None:
    """The column that orders several rows of one key in a batch, if the write applies them in order.

    ``cdc_timestamp_field`` counts only when it surely reaches the good frame (a model field or an op
    output): a merge/SCD2 write orders a key's events by it only then, and otherwise refuses them, as the
    key-only rule reports. SCD2 takes it as its change time when ``scd2.timestamp_field`` is unset."""
    if strategy == "scd2":
        ts = opt(opt(opt(contract, "materialization"), "scd2"), "timestamp_field")
        if ts:
            return str(ts)
    source = opt(contract, "source")
    cdc_ts = opt(source, "cdc_timestamp_field")
    if not cdc_ts or str(text(opt(source, "load_mode", "full"))).lower() != "cdc":
        return None
    available = {f.name for f in fields} | {c for t in transforms for c in t.creates}
    return str(cdc_ts) if cdc_ts in available else None


def _materialization_columns(
    contract: Any, strategy: str | None, transforms: Sequence[Transform]
) -> set[str]:
    """Columns only the write adds (SCD2 bookkeeping, surrogate key, soft-delete columns)."""
    mat = opt(contract, "materialization")
    cols: set[str] = set()
    if strategy == "scd2":
        scd2 = opt(mat, "scd2")
        cols |= {
            str(opt(scd2, "effective_from_field", "effective_from")),
            str(opt(scd2, "effective_to_field", "effective_to")),
            str(opt(scd2, "current_flag_field", "is_current")),
        }
        for key in ("version_column", "surrogate_key", "change_reason_column"):
            if opt(scd2, key):
                cols.add(str(opt(scd2, key)))
    for key in ("soft_delete_column", "soft_delete_time_column", "soft_delete_reason_column"):
        if opt(mat, key):
            cols.add(str(opt(mat, key)))
    created = {c for t in transforms for c in t.creates}
    return cols - created


def _known_columns(
    contract: Any,
    fields: tuple[FieldSpec, ...],
    transforms: Sequence[Transform],
    extracted: tuple[str, ...],
    preserve: Any,
) -> frozenset[str]:
    """Every column the contract declares or creates; empty when that cannot be known at plan time."""
    if opt(contract, "external_logic") is not None or any(t.op in _OPAQUE_OPS for t in transforms):
        return frozenset()
    known = {f.name for f in fields} | set(extracted) | set(shape_steps.preserved_columns(preserve))
    for t in transforms:
        known |= set(t.creates)
    return frozenset(known)


def _check_write_columns(
    contract: Any, origins: ColumnOrigins, lineage: AddLineage | None, written: set[str], warnings: list[str]
) -> None:
    """§13.4: ``partition_by``/``cluster_by`` columns must exist in the output."""
    if not origins.known:
        return
    available = set(origins.known) | written | set(lineage.columns if lineage else ())
    mat = opt(contract, "materialization")
    for key in ("partition_by", "cluster_by"):
        missing = [str(c) for c in as_list(opt(mat, key)) if c not in available]
        if not missing:
            continue
        message = f"{', '.join(missing)} not in the output (model fields, op outputs, lineage columns)"
        if not origins.source_may_add or shape_steps.schema_policy(contract)[0] == "drop":
            raise PlanError(message, yaml_path=f"materialization.{key}")
        warnings.append(f"materialization.{key}: {message}; it must come from the source")


def _check_key_columns(contract: Any, fields: tuple[FieldSpec, ...], transforms: Sequence[Transform]) -> None:
    """§6: key columns must be model fields or transformation outputs."""
    available = {f.name for f in fields} | {c for t in transforms for c in t.creates}
    if any(t.op in _OPAQUE_OPS for t in transforms):
        return
    problems = []
    for key in ("primary_key", "natural_key"):
        missing = [c for c in as_list(opt(contract, key)) if c not in available]
        if missing:
            problems.append(
                Problem(
                    file=str(getattr(contract, "source_file", None) or "<contract>"),
                    path=key,
                    message=f"key column(s) {', '.join(missing)} are not model fields nor created by an op",
                    allowed=", ".join(sorted(available)) or None,
                )
            )
    if problems:
        raise ContractError(problems)


__all__ = ["PlanError", "compile_contract"]
