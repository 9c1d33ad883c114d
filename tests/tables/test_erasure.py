"""§18 erasure (``DataProcessor.forget``, ``lakelogic forget``) and retention deletes, read back
independently of the code under test."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakelogic.api import DataProcessor
from lakelogic.cli.main import app
from lakelogic.tables.forget import ErasureRequestError
from tests.tables.conftest import read_back

FIELDS = [
    {"name": "customer_id", "type": "integer", "required": True},
    {"name": "email", "type": "string", "pii": True},
    {"name": "segment", "type": "string"},
    {"name": "updated_at", "type": "timestamp"},
]
SCHEMA = "customer_id int, email string, segment string, updated_at string"


def _doc(materialization: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Customers"},
        "dataset": f"customers_{uuid.uuid4().hex[:8]}",
        "model": {"fields": FIELDS},
        "primary_key": ["customer_id"],
        "quality": {"row_rules": [{"regex_match": {"field": "email", "pattern": "^[^@]+@[^@]+$"}}]},
        "materialization": materialization,
        **extra,
    }


def _sha(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


@pytest.mark.spark
def test_forget_nullifies_every_scd2_version_and_the_quarantine_then_delete_removes_rows(spark: Any) -> None:
    table = f"lakelogic.tests.customers_{uuid.uuid4().hex[:8]}"
    doc = _doc(
        {
            "strategy": "scd2",
            "format": "iceberg",
            "target_path": table,
            "scd2": {"timestamp_field": "updated_at", "track_columns": ["segment"]},
        }
    )
    doc["natural_key"] = ["customer_id"]
    processor = DataProcessor(doc, spark=spark)
    first = [
        (1, "one@x", "retail", "2026-01-01T00:00:00Z"),
        (2, "two@x", "retail", "2026-01-01T00:00:00Z"),
        (1, "not-an-email", "retail", "2026-01-01T00:00:00Z"),  # quarantined: keeps customer 1's bad value
    ]
    second = [(1, "one@x", "business", "2026-02-01T00:00:00Z")]  # a new version of customer 1
    for rows in (first, second):
        result = processor.run(spark.createDataFrame(rows, SCHEMA), materialize=True)
        assert result.report.error is None, result.report.error
    quarantine = result.report.materialization.quarantine_target
    assert quarantine

    erased = processor.forget(
        "customer_id", ["1", " 1 "], reason="GDPR art. 17 request 42", requested_by="dpo"
    )
    assert erased.status == "succeeded", erased.tables
    assert [(t.role, t.status, t.rows_affected) for t in erased.tables] == [
        ("target", "succeeded", 2),
        ("quarantine", "succeeded", 1),
    ]
    rows = spark.table(table).orderBy("customer_id", "effective_from").collect()
    assert [(r["customer_id"], r["email"], r["segment"]) for r in rows] == [
        (1, None, "retail"),
        (1, None, "business"),
        (2, "two@x", "retail"),  # another subject is untouched
    ]
    assert [r["email"] for r in spark.table(quarantine).where("customer_id = 1").collect()] == [None]
    summary = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
    assert summary is not None and summary["summary"]["lakelogic.role"] == "erasure"

    evidence = spark.table(erased.evidence_table).where(f"erasure_id = '{erased.erasure_id}'").collect()
    assert sorted((r["table"], r["rows_affected"], r["status"]) for r in evidence) == sorted(
        [(table, 2, "succeeded"), (quarantine, 1, "succeeded")]
    )
    first_row = evidence[0].asDict()
    assert first_row["subject_ids_sha256"] == _sha(["1"]) and first_row["subject_count"] == 1
    assert first_row["columns"] == ["email"] and first_row["strategy"] == "nullify"
    assert first_row["reason"] == "GDPR art. 17 request 42" and first_row["requested_by"] == "dpo"

    deleted = processor.forget("customer_id", [2], strategy="delete")
    assert [t.rows_affected for t in deleted.tables] == [1, 0]
    assert [r["customer_id"] for r in spark.table(table).collect()] == [1, 1]
    assert spark.table(erased.evidence_table).count() == 4  # append-only: both erasures are kept


@pytest.mark.spark
def test_forget_hashes_and_deletes_in_a_delta_table_and_refuses_plain_parquet(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKELOGIC_PII_SALT", "pepper")
    target = str(tmp_path / "silver" / "customers")
    doc = _doc({"strategy": "merge", "format": "delta"}, quarantine={"location": str(tmp_path / "q")})
    processor = DataProcessor(doc, spark=spark)
    rows = [(1, "one@x", "a", "2026-01-01T00:00:00Z"), (2, "two@x", "b", "2026-01-01T00:00:00Z")]
    assert (
        processor.run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=target).report.error
        is None
    )

    hashed = processor.forget("customer_id", ["1"], strategy="hash", target=target)
    assert hashed.status == "succeeded" and hashed.tables[0].rows_affected == 1
    from deltalake import DeltaTable

    back = {r["customer_id"]: r["email"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()}
    assert back == {1: hashlib.sha256(b"pepperone@x").hexdigest(), 2: "two@x"}
    again = processor.forget("customer_id", ["1"], strategy="hash", target=target)  # a digest is kept
    assert again.tables[0].rows_affected == 1
    assert {r["customer_id"]: r["email"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()} == back
    assert (
        processor.forget("customer_id", ["2"], strategy="delete", target=target).tables[0].rows_affected == 1
    )
    assert [r["customer_id"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()] == [1]
    evidence = (
        DeltaTable(str(tmp_path / "silver" / "_lakelogic_erasure_evidence")).to_pyarrow_table().to_pylist()
    )
    mine = sorted((e for e in evidence if e["table"] == target), key=lambda e: e["executed_at"])
    assert [(e["strategy"], e["status"], e["rows_affected"]) for e in mine] == [
        ("hash", "succeeded", 1),
        ("hash", "succeeded", 1),
        ("delete", "succeeded", 1),
    ]
    assert [e["subject_ids_sha256"] for e in mine] == [_sha(["1"]), _sha(["1"]), _sha(["2"])]

    parquet = str(tmp_path / "plain")
    plain = DataProcessor(_doc({"strategy": "append", "format": "parquet"}), spark=spark)
    assert (
        plain.run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=parquet).report.error is None
    )
    refused = plain.forget("customer_id", ["1"], target=parquet)
    assert refused.status == "failed"
    assert "row-level commits" in (refused.tables[0].error or "")
    assert (
        len(read_back(spark, type(refused).__annotations__ and _path_target(parquet))) == 2
    )  # nothing changed


def _path_target(path: str) -> Any:
    from lakelogic.tables.target import ResolvedTarget

    return ResolvedTarget("path", path, "parquet")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"subject_column": "nope", "subject_ids": ["1"]}, "not a field"),
        (
            {"subject_column": "customer_id", "subject_ids": ["1"], "strategy": "shred"},
            "unknown erasure strategy",
        ),
        ({"subject_column": "customer_id", "subject_ids": ["1"], "columns": ["ghost"]}, "not fields"),
        ({"subject_column": "customer_id", "subject_ids": [" ", None]}, "no subject ids"),
        ({"subject_column": "customer_id", "subject_ids": ["1"], "columns": []}, "no columns to rewrite"),
    ],
)
def test_requests_that_do_not_fit_the_contract_are_refused_before_any_table_is_touched(
    kwargs: dict[str, Any], message: str
) -> None:
    processor = DataProcessor(_doc({"strategy": "append", "format": "iceberg"}), spark=object())  # type: ignore[arg-type]
    with pytest.raises(ErasureRequestError, match=message):
        processor.forget(**kwargs)


@pytest.mark.spark
def test_retention_deletes_rows_older_than_the_period_and_dry_run_only_counts(spark: Any) -> None:
    table = f"lakelogic.tests.retained_{uuid.uuid4().hex[:8]}"
    doc = _doc(
        {"strategy": "append", "format": "iceberg"},
        compliance={"retention": {"period": "P30D", "column": "updated_at"}},
    )
    processor = DataProcessor(doc, spark=spark)
    now = datetime.now(UTC)
    old = now.replace(microsecond=0).timestamp() - 40 * 86_400
    rows = [
        (1, "a@x", "s", datetime.fromtimestamp(old, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
        (2, "b@x", "s", now.strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]
    assert (
        processor.run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=table).report.error
        is None
    )
    dry = processor.apply_retention(dry_run=True, target=table)
    assert (dry.rows_deleted, dry.status) == (1, "succeeded") and spark.table(table).count() == 2
    done = processor.apply_retention(target=table)
    assert done.rows_deleted == 1
    assert [r["customer_id"] for r in spark.table(table).collect()] == [2]


@pytest.mark.spark
def test_cli_forget_reads_ids_from_a_file_and_prints_json(spark: Any, tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    table = f"lakelogic.tests.cli_forget_{uuid.uuid4().hex[:8]}"
    doc = _doc({"strategy": "append", "format": "iceberg", "target_path": table})
    contract = tmp_path / "customers.yaml"
    YAML().dump(doc, contract)
    rows = [(1, "a@x", "s", "2026-01-01T00:00:00Z"), (2, "b@x", "s", "2026-01-01T00:00:00Z")]
    assert (
        DataProcessor(contract, spark=spark)
        .run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=table)
        .report.error
        is None
    )
    ids = tmp_path / "ids.txt"
    ids.write_text("# subjects of request 7\n2\n\n")
    result = CliRunner().invoke(
        app,
        [
            "forget",
            str(contract),
            "--subject-column",
            "customer_id",
            "--ids",
            str(ids),
            "--strategy",
            "redact",
            "--target",
            table,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["status"] == "succeeded" and printed["tables"][0]["rows_affected"] == 1
    assert {r["customer_id"]: r["email"] for r in spark.table(table).collect()} == {
        1: "a@x",
        2: "***REDACTED***",
    }


@pytest.mark.spark
def test_runs_carry_compliance_and_warn_when_the_region_is_outside_data_residency(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _doc(
        {"strategy": "append", "format": "iceberg"}, compliance={"data_residency": ["eu"], "gdpr": True}
    )
    del doc["materialization"]
    frame = spark.createDataFrame([(1, "a@x", "s", "2026-01-01T00:00:00Z")], SCHEMA)
    monkeypatch.setenv("LAKELOGIC_REGION", "us-east-1")
    report = DataProcessor(doc, spark=spark).run(frame).report
    assert report.compliance == {"data_residency": ["eu"], "gdpr": True}
    assert any("us-east-1" in w and "data_residency" in w for w in report.warnings), report.warnings
    monkeypatch.setenv("LAKELOGIC_REGION", "EU-west-1")
    report = DataProcessor(doc, spark=spark).run(frame).report
    assert not any("data_residency" in w for w in report.warnings), report.warnings


@pytest.mark.spark
def test_ids_are_typed_strictly_and_delta_matches_every_column_type(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review findings: ids convert with the runtime's strict casts (7.9 is no integer; 7 and 007 are one
    subject), delta-rs matches decimal/double/timestamp subjects, and its hash equals run-time masking
    even for a salt with a quote and a backslash."""
    monkeypatch.setenv("LAKELOGIC_PII_SALT", "it's\\pep")
    fields = [
        {"name": "k", "type": "bigint", "required": True},
        {"name": "d", "type": "decimal(10,2)"},
        {"name": "f", "type": "double"},
        {"name": "ts", "type": "timestamp"},
        {"name": "email", "type": "string", "pii": True},
        {"name": "email2", "type": "string", "masking": "hash"},
    ]
    doc = {
        "version": "1.0.0",
        "info": {"title": "Typed"},
        "dataset": f"typed_{uuid.uuid4().hex[:8]}",
        "model": {"fields": fields},
        "materialization": {"strategy": "append", "format": "delta"},
        "quarantine": {"location": str(tmp_path / "q")},
    }
    target = str(tmp_path / "typed")
    processor = DataProcessor(doc, spark=spark)
    frame = spark.createDataFrame(
        [
            (7, "12.50", 1.0, "2024-01-02T03:04:05Z", "x@y", "x@y"),
            (8, "3.00", 2.5, "2024-01-03T00:00:00Z", "z@y", "z@y"),
        ],
        "k bigint, d string, f double, ts string, email string, email2 string",
    )
    assert processor.run(frame, materialize=True, target=target).report.error is None
    from deltalake import DeltaTable

    def rows() -> dict[int, dict[str, Any]]:
        return {r["k"]: r for r in DeltaTable(target).to_pyarrow_table().to_pylist()}

    with pytest.raises(ErasureRequestError, match=r"7\.9"):
        processor.forget("k", ["7.9"], target=target)
    hashed = processor.forget("k", ["7", "007"], strategy="hash", target=target)
    assert hashed.subject_count == 1 and hashed.tables[0].rows_affected == 1, hashed.tables
    assert rows()[7]["email"] == rows()[7]["email2"]  # erasure's hash = run-time masking's hash
    assert rows()[8]["email"] == "z@y"
    for column, ident in (("d", "12.5"), ("f", "1"), ("ts", "2024-01-02T03:04:05Z")):
        result = processor.forget(column, [ident], strategy="redact", target=target)
        assert result.tables[0].rows_affected == 1, (column, result.tables)
    assert rows()[7]["email"] == "***REDACTED***" and rows()[8]["email"] == "z@y"


@pytest.mark.spark
def test_retention_on_delta_and_independent_of_the_session_time_zone(spark: Any, tmp_path: Path) -> None:
    from datetime import timedelta

    now = datetime.now(UTC).replace(microsecond=0)
    doc = _doc(
        {"strategy": "append", "format": "delta"},
        compliance={"retention": {"period": "P10D", "column": "updated_at"}},
        quarantine={"location": str(tmp_path / "q")},
    )
    target = str(tmp_path / "kept")
    stamps = [now - timedelta(days=10, hours=3), now - timedelta(days=10) + timedelta(hours=3)]
    rows = [(i, "a@x", "s", t.strftime("%Y-%m-%dT%H:%M:%SZ")) for i, t in enumerate(stamps)]
    processor = DataProcessor(doc, spark=spark)
    assert (
        processor.run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=target).report.error
        is None
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        for other in ("America/Los_Angeles", "Asia/Tokyo"):
            spark.conf.set("spark.sql.session.timeZone", other)
            assert processor.apply_retention(dry_run=True, target=target).rows_deleted == 1, other
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    done = processor.apply_retention(target=target)
    assert (done.status, done.rows_deleted) == ("succeeded", 1)
    from deltalake import DeltaTable

    assert [r["customer_id"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()] == [1]


@pytest.mark.spark
def test_a_retention_that_cannot_run_is_a_failed_result_not_a_crash(spark: Any, tmp_path: Path) -> None:
    target = str(tmp_path / "plain")
    doc = _doc(
        {"strategy": "append", "format": "parquet"},
        compliance={"retention": {"period": "P30D", "column": "updated_at"}},
    )
    processor = DataProcessor(doc, spark=spark)
    rows = [(1, "a@x", "s", "2020-01-01T00:00:00Z")]
    assert (
        processor.run(spark.createDataFrame(rows, SCHEMA), materialize=True, target=target).report.error
        is None
    )
    result = processor.apply_retention(target=target)
    assert result.status == "failed" and "row-level commits" in (result.error or "")


@pytest.mark.spark
def test_forget_matches_a_text_subject_id_exactly_as_given(spark: Any, tmp_path: Path) -> None:
    """`" bob"` and `"bob"` are two subjects of a string column: forgetting one leaves the other."""
    fields = [{"name": "user", "type": "string"}, {"name": "email", "type": "string", "pii": True}]
    doc = {
        "version": "1.0.0",
        "info": {"title": "Users"},
        "model": {"fields": fields},
        "materialization": {"strategy": "append", "format": "delta", "target_path": str(tmp_path / "users")},
    }
    processor = DataProcessor(doc, spark=spark)
    rows = [("bob", "bob@x"), (" bob", "spacebob@x")]
    result = processor.run(spark.createDataFrame(rows, "user string, email string"), materialize=True)
    assert result.report.error is None, result.report.error
    erased = processor.forget("user", [" bob"], reason="request 7")
    assert [(t.role, t.rows_affected) for t in erased.tables if t.role == "target"] == [("target", 1)]
    from deltalake import DeltaTable

    stored = sorted(
        (r["user"], r["email"]) for r in DeltaTable(str(tmp_path / "users")).to_pyarrow_table().to_pylist()
    )
    assert stored == [(" bob", None), ("bob", "bob@x")]


def test_cli_forget_reads_each_id_exactly_as_written(tmp_path: Path) -> None:
    from lakelogic.cli.forget_cmd import _read_ids

    ids = tmp_path / "ids.txt"
    ids.write_text(" bob\r\nbob\n   \n  # a comment\nann \n")
    assert _read_ids(ids) == [" bob", "bob", "ann "]


@pytest.mark.spark
def test_forget_finds_subjects_of_a_hash_or_encrypt_masked_column_and_refuses_other_maskings(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A masked subject column stores the masked text: the ids are masked as the run masks them, so
    `cid = 1` finds the row stored as the salted hash of "1" (it matched nothing and reported success)."""
    import base64

    from deltalake import DeltaTable

    monkeypatch.setenv("LAKELOGIC_PII_SALT", "pepper")
    monkeypatch.setenv("LAKELOGIC_PII_KEY", base64.b64encode(bytes(range(32))).decode())
    for masking in ("hash", "encrypt"):
        path = str(tmp_path / masking)
        fields = [
            {"name": "cid", "type": "integer", "masking": masking},
            {"name": "name", "type": "string", "pii": True},
        ]
        doc = {
            "version": "1.0.0",
            "info": {"title": "Users"},
            "model": {"fields": fields},
            "materialization": {"strategy": "append", "format": "delta", "target_path": path},
        }
        processor = DataProcessor(doc, spark=spark)
        frame = spark.createDataFrame([(1, "ann"), (2, "bob")], "cid int, name string")
        assert processor.run(frame, materialize=True).report.error is None
        erased = processor.forget("cid", ["1"], reason="request 9")
        assert [(t.role, t.rows_affected) for t in erased.tables if t.role == "target"] == [("target", 1)]
        names = sorted(str(r["name"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist())
        assert names == ["None", "bob"], masking
    redacted = {
        "version": "1.0.0",
        "info": {"title": "Users"},
        "model": {"fields": [{"name": "cid", "type": "integer", "masking": "redact"}]},
        "materialization": {"strategy": "append", "format": "delta", "target_path": str(tmp_path / "r")},
    }
    with pytest.raises(ErasureRequestError, match="stored masked"):
        DataProcessor(redacted, spark=spark).forget("cid", ["1"], strategy="delete")


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_forget_rewrites_the_raw_value_a_quarantine_message_quotes(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    """A cast failure's message quotes the raw value (§5.3): erasing the column in the quarantine table
    rewrites the quote too, or `"1990-13-45"` outlived the erasure."""
    fields = [
        {"name": "cid", "type": "integer"},
        {"name": "dob", "type": "date", "pii": True},
        {"name": "email", "type": "string", "pii": True},
    ]
    target = (
        f"lakelogic.tests.dob_{uuid.uuid4().hex[:8]}"
        if fmt == "iceberg"
        else str(tmp_path / "silver" / "dob")
    )
    doc = {
        "version": "1.0.0",
        "info": {"title": "People"},
        "dataset": f"people_{uuid.uuid4().hex[:8]}",
        "model": {"fields": fields},
        "quality": {"row_rules": [{"name": "email_has_at", "sql": "email LIKE '%@%'"}]},
        "materialization": {"strategy": "append", "format": fmt, "target_path": target},
    }
    if fmt == "delta":
        doc["quarantine"] = {"location": str(tmp_path / "q")}
    processor = DataProcessor(doc, spark=spark)
    rows = [(1, "1990-13-45", "ann@x"), (2, "1991-14-01", "bob"), (3, "1980-01-01", "cy@x")]
    frame = spark.createDataFrame(rows, "cid int, dob string, email string")
    assert processor.run(frame, materialize=True).report.error is None
    erased = processor.forget("cid", ["1", "2"], strategy="redact", columns=["email"], reason="r")
    assert erased.status == "succeeded"
    erased = processor.forget("cid", ["1"], reason="r")  # nullify the pii fields
    assert erased.status == "succeeded", erased.tables
    [quarantine] = [t.table for t in erased.tables if t.role == "quarantine"]
    if fmt == "iceberg":
        stored = [r.asDict() for r in spark.table(quarantine).collect()]
    else:
        from deltalake import DeltaTable

        stored = DeltaTable(quarantine).to_pyarrow_table().to_pylist()
    messages = {r["cid"]: list(r["_lakelogic_errors"]) for r in stored}
    assert messages[1] == ["Rule failed: dob_type (cannot cast null to date)"]
    assert sorted(messages[2])[0] == 'Rule failed: dob_type (cannot cast "1991-14-01" to date)'  # kept
    assert sorted(messages[2])[1].startswith("Rule failed: email_has_at")
