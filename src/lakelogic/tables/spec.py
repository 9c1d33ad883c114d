"""What a write needs to know, resolved once from the contract (SEMANTICS §13, §3.5, §7.1, §14).

``WriteSpec`` is plain data so the strategies can run on any DataFrame without a contract (benchmarks,
tests). :func:`write_spec_from_contract` reads the contract's blocks; aliases of the ``scd2`` keys are
resolved here because ``materialization.scd2`` may arrive as a plain mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.access import as_list, opt, plain

STRATEGIES = ("append", "overwrite", "merge", "scd2")

LINEAGE_DEFAULTS = {
    "source": "_lakelogic_source",
    "timestamp": "_lakelogic_processed_at",
    "run_id": "_lakelogic_run_id",
    "contract_name": "_lakelogic_contract_name",
    "domain": "_lakelogic_domain",
    "system": "_lakelogic_system",
    "created_at": "_lakelogic_created_at",
    "created_by": "_lakelogic_created_by",
}

ICEBERG_ROW_LEVEL_DEFAULTS = {
    # Row-level writes (merge, SCD2) touch few rows of large files; merge-on-read writes delete files
    # instead of rewriting whole data files (copy-on-write). Contract table_properties win.
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}

_SCD2_ALIASES: dict[str, tuple[str, ...]] = {
    "timestamp_field": ("timestamp_field", "change_date_field"),
    "effective_from_field": ("effective_from_field", "effective_from", "start_date_field"),
    "effective_to_field": ("effective_to_field", "effective_to", "end_date_field"),
    "current_flag_field": ("current_flag_field", "current_flag"),
    "version_column": ("version_column",),
    "track_columns": ("track_columns", "hash_columns"),
    "effective_from_default": ("effective_from_default", "start_date_default", "default_effective_from"),
    "effective_to_default": ("effective_to_default", "end_date_default"),
    "surrogate_key": ("surrogate_key",),
    "surrogate_key_strategy": ("surrogate_key_strategy",),
    "change_reason_column": ("change_reason_column",),
    "unknown_member": ("unknown_member",),
    "business_key": ("business_key",),
}


@dataclass(frozen=True)
class Scd2Spec:
    """SCD2 settings with defaults applied (SEMANTICS §13.3)."""

    business_key: tuple[str, ...]
    timestamp_field: str | None = None
    effective_from: str = "effective_from"
    effective_to: str = "effective_to"
    current_flag: str = "is_current"
    version_column: str | None = None
    track_columns: tuple[str, ...] = ()  # empty: every data column (resolved against the batch)
    effective_from_default: str = "1900-01-01"
    effective_to_default: str = "9999-12-31"
    surrogate_key: str | None = None
    surrogate_key_strategy: str = "hash"
    change_reason_column: str | None = None
    unknown_member: Mapping[str, Any] | None = None

    @property
    def scd_columns(self) -> tuple[str, ...]:
        cols = [self.effective_from, self.effective_to, self.current_flag]
        cols += [c for c in (self.version_column, self.surrogate_key, self.change_reason_column) if c]
        return tuple(cols)


def _soft_value_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, float):
        return "double"
    return "string"


@dataclass(frozen=True)
class WriteSpec:
    """Everything a strategy needs besides the frame and the target."""

    strategy: str = "append"
    primary_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    merge_dedup_guard: bool = False
    cdc_op_field: str | None = None
    cdc_delete_values: tuple[str, ...] = ()
    cdc_timestamp_field: str | None = None
    watermark_field: str | None = None
    soft_delete_column: str | None = None
    soft_delete_value: Any = True
    soft_delete_time_column: str | None = None
    soft_delete_reason_column: str | None = None
    evolution: str = "allow"
    table_properties: Mapping[str, str] = field(default_factory=dict)
    lineage_columns: tuple[str, ...] = tuple(LINEAGE_DEFAULTS.values())
    created_columns: tuple[str, ...] = (LINEAGE_DEFAULTS["created_at"], LINEAGE_DEFAULTS["created_by"])
    generated_columns: tuple[str, ...] = ()
    scd2: Scd2Spec | None = None
    as_of: datetime = field(default_factory=lambda: datetime.now(UTC))
    reprocess_date_column: str | None = None
    broadcast_keys_max_rows: int = 2_000_000  # batches up to this size probe the target with a broadcast
    # An Iceberg merge whose target rows in the batch's key range are estimated at most this many bytes
    # (Spark's estimate after file pruning) runs as one MERGE with a NOT MATCHED clause: one target scan,
    # both sides shuffled. Above it, update and insert run as two statements that broadcast the batch: no
    # shuffle of the target, but a second (key-only) scan of it. Docs: decisions.md "Session 16".
    one_statement_merge_max_bytes: int = 128 * 1024 * 1024
    # SCD2 keys with one change after their stored history skip the general version computation
    scd2_forward: bool = True
    # Row count of the frame handed to the write, when the caller knows it (a contract run has it from
    # its observations): a first SCD2 load then sizes its work without a counting job (writes into an
    # existing table count the batch in their key-range aggregation, tables/key_range.py). It only sizes
    # work (partitions, broadcasts); it never changes what is written.
    batch_rows: int | None = None
    # The caller proved that the frame holds at most one row per primary key (a contract run: a `unique`
    # dataset rule over key columns passed on the very frame it hands over). The merge then skips its own
    # duplicate-key check, one aggregation over the batch. Never set it on a guess: a duplicate key would
    # then be written twice.
    keys_unique: bool = False
    # materialization.unknown_member (SEMANTICS §13.6): the placeholder member a merge inserts once
    unknown_member: Mapping[str, Any] | None = None

    @property
    def cdc_enabled(self) -> bool:
        return bool(self.cdc_op_field)

    @property
    def soft_delete_columns(self) -> dict[str, str]:
        """The soft-delete columns this write keeps (SEMANTICS §13.6), name -> Spark SQL type; empty when
        ``soft_delete_column`` is not set (the time and reason columns only go with it)."""
        if not self.soft_delete_column:
            return {}
        wanted = {
            self.soft_delete_column: _soft_value_type(self.soft_delete_value),
            self.soft_delete_time_column: "timestamp",
            self.soft_delete_reason_column: "string",
        }
        return {name: dtype for name, dtype in wanted.items() if name}

    def table_properties_for(self, fmt: str) -> dict[str, str]:
        """Properties a new table gets: Iceberg row-level defaults for merge/SCD2, then the contract's.

        ``delta.*`` keys go only to Delta tables and every other key only to Iceberg (Delta rejects
        unknown properties), so one contract can target either format."""
        props: dict[str, str] = {}
        if fmt == "iceberg" and self.strategy in ("merge", "scd2"):
            props.update(ICEBERG_ROW_LEVEL_DEFAULTS)
        for key, value in self.table_properties.items():
            if (fmt == "delta") == key.startswith("delta.") and fmt in ("iceberg", "delta"):
                props[key] = value
        return props

    def ignored_in_compare(self) -> set[str]:
        """Columns whose differences never count as a change (lineage, CDC operation)."""
        ignored = set(self.lineage_columns) | set(self.created_columns)
        if self.cdc_op_field:
            ignored.add(self.cdc_op_field)
        return ignored


def _scd2_value(raw: Mapping[str, Any], canonical: str) -> Any:
    found = [(alias, raw[alias]) for alias in _SCD2_ALIASES[canonical] if raw.get(alias) is not None]
    if len(found) > 1:
        names = ", ".join(a for a, _ in found)
        raise PlanError(f"scd2 keys {names} are aliases; write only one", yaml_path="materialization.scd2")
    return found[0][1] if found else None


def scd2_spec_from(raw: Mapping[str, Any] | None, *, keys: tuple[str, ...]) -> Scd2Spec:
    """Build a :class:`Scd2Spec` from the contract's ``scd2`` block (aliases allowed) and the key."""
    data = plain(raw) if raw is not None else {}
    known = {alias for aliases in _SCD2_ALIASES.values() for alias in aliases}
    unknown = sorted(set(data) - known)
    if unknown:
        raise PlanError(
            f"unknown scd2 key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_SCD2_ALIASES))}",
            yaml_path="materialization.scd2",
        )
    business_key = tuple(as_list(_scd2_value(data, "business_key"))) or keys
    if not business_key:
        raise PlanError(
            "strategy scd2 needs a key: scd2.business_key, natural_key or primary_key",
            yaml_path="materialization.scd2",
        )
    values: dict[str, Any] = {}
    for canonical, target in (
        ("timestamp_field", "timestamp_field"),
        ("effective_from_field", "effective_from"),
        ("effective_to_field", "effective_to"),
        ("current_flag_field", "current_flag"),
        ("version_column", "version_column"),
        ("effective_from_default", "effective_from_default"),
        ("effective_to_default", "effective_to_default"),
        ("surrogate_key", "surrogate_key"),
        ("surrogate_key_strategy", "surrogate_key_strategy"),
        ("change_reason_column", "change_reason_column"),
        ("unknown_member", "unknown_member"),
    ):
        value = _scd2_value(data, canonical)
        if value is not None:
            values[target] = str(value) if not isinstance(value, Mapping) else value
    strategy = str(values.get("surrogate_key_strategy", "hash")).lower()
    if strategy not in ("hash", "uuid"):
        raise PlanError(
            f"scd2.surrogate_key_strategy {strategy!r}: allowed hash, uuid", yaml_path="materialization.scd2"
        )
    values["surrogate_key_strategy"] = strategy
    track = tuple(str(c) for c in as_list(_scd2_value(data, "track_columns")))
    return Scd2Spec(business_key=tuple(str(k) for k in business_key), track_columns=track, **values)


def _lineage_names(contract: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    lineage = opt(contract, "lineage")
    names = dict(LINEAGE_DEFAULTS)
    for key in names:
        custom = opt(lineage, f"{key}_column_name")
        if custom:
            names[key] = str(custom)
    return tuple(names.values()), (names["created_at"], names["created_by"])


def _evolution(contract: Any) -> str:
    server = opt(contract, "server")
    policy = opt(opt(server, "schema_policy"), "evolution") or opt(
        opt(contract, "schema_policy"), "evolution"
    )
    return str(getattr(policy, "value", policy) or "allow").lower()


def write_spec_from_contract(
    contract: Any, *, strategy: str | None = None, as_of: datetime | None = None
) -> WriteSpec:
    """Resolve the contract's materialization, keys, CDC, lineage and schema policy into a WriteSpec."""
    mat = opt(contract, "materialization")
    source = opt(contract, "source")
    chosen = str(strategy or opt(mat, "strategy", "append")).lower()
    if chosen not in STRATEGIES:
        raise PlanError(
            f"materialization.strategy {chosen!r}: allowed {', '.join(STRATEGIES)}",
            yaml_path="materialization.strategy",
        )
    primary_key = tuple(str(c) for c in as_list(opt(contract, "primary_key")))
    natural_key = tuple(str(c) for c in as_list(opt(contract, "natural_key")))
    if chosen == "merge" and not primary_key:
        raise PlanError("strategy merge needs primary_key", yaml_path="materialization.strategy")
    scd2 = None
    member = opt(mat, "unknown_member")
    member = plain(member) if member is not None else None
    if chosen == "scd2":
        scd2 = scd2_spec_from(opt(mat, "scd2"), keys=natural_key or primary_key)
        if scd2.unknown_member is None and member is not None:  # the block-level form (§13.6)
            scd2 = replace(scd2, unknown_member=member)
    lineage_columns, created_columns = _lineage_names(contract)
    model = opt(contract, "model")
    generated = tuple(
        str(opt(f, "name")) for f in as_list(opt(model, "fields")) if opt(f, "generated", False)
    )
    properties = {str(k): str(v) for k, v in (opt(mat, "table_properties") or {}).items()}
    return WriteSpec(
        strategy=chosen,
        primary_key=primary_key,
        partition_by=tuple(str(c) for c in as_list(opt(mat, "partition_by"))),
        cluster_by=tuple(str(c) for c in as_list(opt(mat, "cluster_by"))),
        merge_dedup_guard=bool(opt(mat, "merge_dedup_guard", False)),
        cdc_op_field=opt(source, "cdc_op_field"),
        cdc_delete_values=tuple(str(v) for v in as_list(opt(source, "cdc_delete_values"))),
        cdc_timestamp_field=opt(source, "cdc_timestamp_field"),
        watermark_field=opt(source, "watermark_field"),
        soft_delete_column=opt(mat, "soft_delete_column"),
        soft_delete_value=opt(mat, "soft_delete_value", True),
        soft_delete_time_column=opt(mat, "soft_delete_time_column"),
        soft_delete_reason_column=opt(mat, "soft_delete_reason_column"),
        evolution=_evolution(contract),
        table_properties=properties,
        lineage_columns=lineage_columns,
        created_columns=created_columns,
        generated_columns=generated,
        scd2=scd2,
        unknown_member=member if chosen == "merge" else None,
        as_of=as_of or datetime.now(UTC),
        reprocess_date_column=opt(mat, "reprocess_date_column")
        or (str(as_list(opt(mat, "partition_by"))[0]) if as_list(opt(mat, "partition_by")) else None),
    )
