"""``DataProcessor.forget`` / ``lakelogic forget`` and ``lakelogic retention apply`` (SEMANTICS §18):
check the request against the contract, resolve its tables, apply, record evidence."""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakelogic.errors import LakeLogicError
from lakelogic.plan.retention import RetentionPolicy, retention_policy
from lakelogic.tables.erasure import (
    ERASURE_STRATEGIES,
    ErasureRequest,
    TableOutcome,
    delete_older_than,
    erase_table,
)
from lakelogic.tables.target import contract_name_of, resolve_target
from lakelogic.types import parse_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakelogic.plan.steps import FieldSpec

_ALIASES = {"null": "nullify"}


class ErasureRequestError(LakeLogicError):
    """The erasure request does not fit the contract (unknown column or strategy, no ids)."""

    error_type = "erasure"


@dataclass
class ErasureResult:
    erasure_id: str
    strategy: str
    subject_column: str
    subject_count: int
    subject_ids_sha256: str
    columns: list[str]
    tables: list[TableOutcome]
    evidence_table: str | None = None
    evidence_error: str | None = None  # the erasure committed but its evidence row could not be written
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``failed`` when a table failed or the evidence is missing, else ``succeeded`` (absent tables
        are skipped, not failed)."""
        failed = self.evidence_error is not None or any(t.status == "failed" for t in self.tables)
        return "failed" if failed else "succeeded"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status
        return data


def _subject_ids(ids: Iterable[Any], *, text_column: bool) -> tuple[str, ...]:
    """The requested ids as text, exactly as given: `" bob"` and `"bob"` are two subjects of a string
    column (trimming them erased the wrong person's row). For other types, blank text is no value
    (§5.3 reads it as NULL), and spaces around a number are the strict cast's to accept, in
    :func:`typed_subject_ids`."""
    seen: dict[str, None] = {}
    for value in ids:
        if value is None:
            continue
        text = str(value)
        if text_column or text.strip():
            seen.setdefault(text, None)
    return tuple(seen)


def build_request(
    contract: Any,
    *,
    subject_column: str,
    subject_ids: Iterable[Any],
    strategy: str,
    columns: Iterable[str] | None,
    reason: str | None,
    requested_by: str | None,
) -> ErasureRequest:
    chosen = _ALIASES.get(strategy.lower(), strategy.lower())
    if chosen not in ERASURE_STRATEGIES:
        raise ErasureRequestError(
            f"unknown erasure strategy {strategy!r}", hint=f"one of: {', '.join(ERASURE_STRATEGIES)}"
        )
    fields = {f.name: f for f in contract.model.fields}
    if subject_column not in fields:
        raise ErasureRequestError(
            f"subject column {subject_column!r} is not a field of the contract",
            hint=f"one of: {', '.join(fields)}",
        )
    if columns is None:
        picked = [name for name, f in fields.items() if f.pii or f.phi]
    else:
        picked = list(dict.fromkeys(columns))
        unknown = [c for c in picked if c not in fields]
        if unknown:
            raise ErasureRequestError(
                f"column(s) {', '.join(unknown)} are not fields of the contract",
                hint=f"one of: {', '.join(fields)}",
            )
    if chosen != "delete" and not picked:
        raise ErasureRequestError(
            f"strategy {chosen} has no columns to rewrite: no field is marked pii or phi",
            hint="pass columns, mark the fields pii/phi, or use strategy delete",
        )
    masking = _subject_masking(contract, subject_column)
    if masking is not None and masking not in _MATCHABLE_MASKINGS:
        raise ErasureRequestError(
            f"subject column {subject_column!r} is stored masked ({masking}): its stored values cannot "
            "identify a subject",
            hint="name an unmasked column that identifies the subject (the primary key, say), or one "
            "masked with hash or encrypt, whose stored form the ids are matched in",
        )
    text_column = parse_type(str(fields[subject_column].type)).kind == "string"
    ids = _subject_ids(subject_ids, text_column=text_column)
    if not ids:
        raise ErasureRequestError("no subject ids were given")
    return ErasureRequest(
        contract=contract_name_of(contract),
        subject_column=subject_column,
        subject_ids=ids,
        strategy=chosen,
        columns=tuple(picked) if chosen != "delete" else (),
        reason=reason,
        requested_by=requested_by or _current_user(),
    )


# deterministic maskings: an id masked as the run masks it is the stored value
_MATCHABLE_MASKINGS = ("hash", "encrypt")


def _subject_spec(contract: Any, subject_column: str) -> FieldSpec | None:
    from lakelogic.plan.fields import resolve_fields

    return next((f for f in resolve_fields(contract) if f.name == subject_column), None)


def _subject_masking(contract: Any, subject_column: str) -> str | None:
    spec = _subject_spec(contract, subject_column)
    return spec.masking if spec is not None else None


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry / no login name in a container
        return None


def typed_subject_ids(spark: SparkSession, contract: Any, request: ErasureRequest) -> ErasureRequest:
    """The request with its ids converted to the subject column's type by the runtime's strict casts
    (§5.3: ``7.9`` is no integer, ``12.504`` no ``decimal(10,2)``): ids that do not convert are refused
    before any table is touched, and ids naming the same value (``7``, ``007``) are one subject."""
    from dataclasses import replace as with_values

    from pyspark.sql.types import StringType

    from lakelogic.engines.spark.casting import strict_cast_sql
    from lakelogic.engines.spark.masking import masking_sql
    from lakelogic.plan.sqlutil import quote_ident

    field = next(f for f in contract.model.fields if f.name == request.subject_column)
    logical = parse_type(str(field.type))
    typed = strict_cast_sql("raw", StringType(), logical)
    kind = logical.kind
    exact = f"unix_micros({typed})" if kind in ("timestamp", "timestamp_ntz") else f"CAST({typed} AS STRING)"
    masked = "CAST(NULL AS STRING)"
    spec = _subject_spec(contract, request.subject_column)
    if spec is not None and spec.masking is not None:
        # a hash- or encrypt-masked column stores the masked text: the id, masked as the run masks it
        masked = masking_sql(spec, warnings=[])
    # the request's own ids (handed in by the caller), not table data
    rows = (
        spark.createDataFrame([(i,) for i in request.subject_ids], "raw string")
        .selectExpr("raw", f"{exact} AS value", f"{typed} AS {quote_ident(field.name)}")
        .selectExpr("raw", "value", f"{masked} AS masked")
        .collect()
    )
    refused = [str(r["raw"]) for r in rows if r["value"] is None]
    if refused:
        raise ErasureRequestError(
            f"subject id(s) {', '.join(repr(r) for r in refused[:5])}"
            f"{' …' if len(refused) > 5 else ''} are not values of {request.subject_column} ({field.type})",
            hint="give ids exactly as the column's type reads them",
        )
    values: dict[str, Any] = {}
    for row in rows:
        value = _python_value(kind, row["value"])
        stored = value if row["masked"] is None else row["masked"]
        values.setdefault(value.isoformat() if hasattr(value, "isoformat") else str(value), stored)
    return with_values(request, subject_ids=tuple(values), subject_values=tuple(values.values()))


def _python_value(kind: str, text: Any) -> Any:
    from datetime import date, timedelta
    from decimal import Decimal

    if kind in ("timestamp", "timestamp_ntz"):
        instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(text))
        return instant if kind == "timestamp" else instant.replace(tzinfo=None)
    converters: dict[str, Any] = {
        "integer": int,
        "bigint": int,
        "double": float,
        "float": float,
        "decimal": Decimal,
        "date": date.fromisoformat,
        "boolean": lambda t: t == "true",
    }
    return converters.get(kind, str)(text)


def forget_subjects(
    spark: SparkSession,
    contract: Any,
    request: ErasureRequest,
    *,
    target: str | None = None,
    env: str | None = None,
) -> ErasureResult:
    """Erase in the target (every SCD2 version) and its quarantine table, one commit each, then append
    one evidence row per table. A failing table does not stop the other; the evidence records both."""
    from lakelogic.engines.spark.masking import pii_salt
    from lakelogic.tables.erasure_evidence import write_evidence

    warnings: list[str] = []
    request = typed_subject_ids(spark, contract, request)
    salt = pii_salt(warnings=warnings) if request.strategy == "hash" else ""
    resolved = resolve_target(contract, target=target, env=env)
    sinks = [(resolved, "target")] + ([(resolved.quarantine, "quarantine")] if resolved.quarantine else [])
    outcomes = [erase_table(spark, sink, request, role=role, salt=salt) for sink, role in sinks]
    evidence: str | None = None
    evidence_error: str | None = None
    try:
        evidence = write_evidence(spark, resolved, request, outcomes)
    except Exception as exc:  # noqa: BLE001 - the commits stand; the missing evidence is the result's failure
        evidence_error = f"{type(exc).__name__}: {exc}"
    return ErasureResult(
        erasure_id=request.erasure_id,
        strategy=request.strategy,
        subject_column=request.subject_column,
        subject_count=len(request.subject_ids),
        subject_ids_sha256=request.subject_ids_sha256,
        columns=list(request.columns),
        tables=outcomes,
        evidence_table=evidence,
        evidence_error=evidence_error,
        warnings=warnings,
    )


@dataclass
class RetentionResult:
    table: str
    column: str
    period: str
    cutoff: datetime
    rows_deleted: int
    dry_run: bool
    status: str
    snapshot: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def apply_retention(
    spark: SparkSession,
    contract: Any,
    *,
    dry_run: bool = False,
    as_of: datetime | None = None,
    target: str | None = None,
    env: str | None = None,
    policy: RetentionPolicy | None = None,
) -> RetentionResult:
    """Delete the target rows older than ``compliance.retention.period`` by its ``column`` (one commit)."""
    policy = policy or retention_policy(contract)
    if policy is None:
        raise ErasureRequestError(
            "the contract has no compliance.retention",
            hint="add compliance: {retention: {period: P90D, column: ...}}",
        )
    cutoff = policy.cutoff(as_of or datetime.now(UTC))
    resolved = resolve_target(contract, target=target, env=env)
    try:
        outcome = delete_older_than(
            spark,
            resolved,
            column=policy.column,
            cutoff=cutoff,
            contract=contract_name_of(contract),
            dry_run=dry_run,
        )
    except Exception as exc:  # noqa: BLE001 - a failed result (exit 1), as erasure reports its tables
        outcome = TableOutcome(
            table=resolved.name, role="target", status="failed", error=f"{type(exc).__name__}: {exc}"
        )
    return RetentionResult(
        table=outcome.table,
        column=policy.column,
        period=policy.period,
        cutoff=cutoff,
        rows_deleted=outcome.rows_affected,
        dry_run=dry_run,
        status=outcome.status,
        snapshot=outcome.snapshot,
        error=outcome.error,
    )
