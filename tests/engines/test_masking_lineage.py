"""Masking (SEMANTICS §5.4) on good and quarantined rows, and lineage columns (§14)."""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark

KEY = base64.b64encode(bytes(range(32))).decode()


def test_masking_strategies(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_PII_SALT", "pepper")
    monkeypatch.setenv("LAKELOGIC_PII_KEY", KEY)
    fields = [
        {"name": "id", "type": "integer"},
        {"name": "email", "type": "string", "masking": "partial"},
        {"name": "phone", "type": "string", "masking": "partial"},
        {"name": "ssn", "type": "string", "masking": "hash"},
        {"name": "note", "type": "string", "masking": "redact"},
        {"name": "age", "type": "integer", "masking": "nullify"},
        {"name": "card", "type": "string", "masking": "encrypt"},
    ]
    doc = contract(fields, quality={"row_rules": [{"name": "id_small", "sql": "id < 2"}]})
    rows = [
        {
            "id": 1,
            "email": "alice@example.com",
            "phone": "+1 555 123 4567",
            "ssn": "123-45-6789",
            "note": "secret",
            "age": 40,
            "card": "4111",
        },
        {"id": 2, "email": "bob@x.org", "phone": None, "ssn": "999", "note": None, "age": 3, "card": "1"},
    ]
    result = run(spark, doc, rows)
    good, bad = result
    g = good.collect()[0]
    assert g["email"] == "a***@example.com"
    assert g["phone"] == "***-***-4567"
    assert g["ssn"] == hashlib.sha256(b"pepper123-45-6789").hexdigest()
    assert g["note"] == "***REDACTED***"
    assert g["age"] is None
    assert g["card"].startswith("enc:")
    raw = base64.urlsafe_b64decode(g["card"][4:])
    cipher = base64.b64encode(raw).decode()
    decrypted = spark.sql(
        f"SELECT CAST(aes_decrypt(unbase64('{cipher}'), unbase64('{KEY}'), 'GCM') AS STRING) d"
    ).first()["d"]
    assert decrypted == "4111"
    from typer.testing import CliRunner

    from lakelogic.cli.main import app

    cli = CliRunner().invoke(app, ["decrypt", g["card"], "enc:AAAA", "plain"])  # §5.4 `lakelogic decrypt`
    assert cli.exit_code == 1
    assert cli.stdout.splitlines() == ["4111"]
    assert "'enc:AAAA' is too short" in cli.stderr and "'plain' is not an encrypted value" in cli.stderr
    b = bad.collect()[0]  # quarantined rows are masked too
    assert b["email"] == "b***@x.org" and b["phone"] is None and b["note"] is None
    assert b["ssn"] == hashlib.sha256(b"pepper999").hexdigest()


def test_encrypt_without_key_fails_before_writing(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKELOGIC_PII_KEY", raising=False)
    doc = contract([{"name": "card", "type": "string", "masking": "encrypt"}])
    result = run(spark, doc, [{"card": "4111"}])
    assert result.report.status == "failed"
    assert result.report.error is not None and "LAKELOGIC_PII_KEY" in result.report.error.message


def test_encrypt_is_deterministic_unchunked_and_decrypts(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Equal values encrypt equally (a merge or SCD2 over an encrypted column must see no change in an
    unchanged row), long values carry no base64 line breaks, and the CLI decrypts them from stdin."""
    monkeypatch.setenv("LAKELOGIC_PII_KEY", KEY)
    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "note", "type": "string", "masking": "encrypt"}]
    )
    values = ["A" * 60, "B" * 100, "A" * 60, "A" * 61]
    rows = [{"id": i, "note": v} for i, v in enumerate(values)]
    first = dict(rows_of(run(spark, doc, rows).good, "id", "note"))
    second = dict(rows_of(run(spark, doc, rows).good, "id", "note"))
    assert first == second  # across runs
    assert first[0] == first[2] and len({first[0], first[1], first[3]}) == 3  # equal iff the values are
    assert all(v.startswith("enc:") and "\r" not in v and "\n" not in v for v in first.values())
    from typer.testing import CliRunner

    from lakelogic.cli.main import app

    stdin = "".join(first[i] + "\n" for i in range(4))
    cli = CliRunner().invoke(app, ["decrypt", "-"], input=stdin)
    assert cli.exit_code == 0, cli.stderr
    assert cli.stdout.splitlines() == values


def test_an_encrypted_merge_key_keeps_a_rerun_idempotent(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("LAKELOGIC_PII_KEY", KEY)
    doc = contract(
        [{"name": "email", "type": "string", "masking": "encrypt"}, {"name": "seg", "type": "string"}],
        primary_key=["email"],
        materialization={"strategy": "merge", "format": "delta"},
    )
    target = str(tmp_path / "t")
    batch = [{"email": "a@x.org", "seg": "retail"}, {"email": "b@x.org", "seg": "b2b"}]
    run(spark, doc, batch, materialize=True, target=target)
    again = run(spark, doc, batch, materialize=True, target=target).report.materialization
    assert again is not None and (again.rows_inserted, again.rows_updated) == (0, 0)
    from deltalake import DeltaTable

    assert DeltaTable(target).to_pyarrow_table().num_rows == 2


def test_partial_domain_token_of_a_value_without_at_sign_shows_no_domain(spark: Any) -> None:
    doc = contract([{"name": "e", "type": "string", "masking": "partial", "masking_format": "email"}])
    good = run(spark, doc, [{"e": "notanemail"}, {"e": "ann@example.com"}]).good
    assert sorted(v for (v,) in rows_of(good, "e")) == ["a***@example.com", "n***@"]


def test_lineage_columns_on_good_and_bad(spark: Any) -> None:
    fields = [{"name": "id", "type": "integer"}]
    doc = contract(
        fields,
        info={"title": "Lin", "table_name": "lin", "version": "2.1.0", "domain": "sales"},
        lineage={"enabled": True, "created_by_override": "tester"},
        quality={"row_rules": [{"name": "small", "sql": "id < 2"}]},
    )
    result = run(spark, doc, [{"id": 1}, {"id": 2}], pipeline_run_id=None)
    good, bad = result
    row = good.collect()[0]
    assert row["_lakelogic_run_id"] == result.report.run_id
    assert row["_lakelogic_contract_name"] == "lin (v2.1.0)"
    assert row["_lakelogic_domain"] == "sales"
    assert row["_lakelogic_created_by"] == "tester"
    assert row["_lakelogic_source"] is None  # in-memory input
    assert row["_lakelogic_processed_at"] is not None
    assert rows_of(bad, "_lakelogic_contract_name") == [("lin (v2.1.0)",)]
    assert "_lakelogic_source_file" not in good.columns


def test_hash_keeps_existing_digest(spark: Any) -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    os.environ.pop("LAKELOGIC_PII_SALT", None)
    result = run(spark, contract([{"name": "h", "type": "string", "masking": "hash"}]), [{"h": digest}])
    assert rows_of(result.good, "h") == [(digest,)]
    assert any("LAKELOGIC_PII_SALT" in w for w in result.report.warnings)


@pytest.mark.parametrize("outputs", ["memory", "files"])
def test_dataset_rules_see_real_values_before_masking(spark: Any, tmp_path: Any, outputs: str) -> None:
    """Masking is step 12, after the dataset rules of step 11 (SEMANTICS §5.4, §8): a redacted key stays
    unique and a nullified column has no NULLs for the rules, while the output is masked."""
    fields = [
        {"name": "email", "type": "string", "masking": "redact"},
        {"name": "phone", "type": "string", "masking": "nullify"},
        {"name": "city", "type": "string"},
    ]
    doc = contract(
        fields,
        primary_key=["email"],
        quality={
            "dataset_rules": [
                {"null_ratio": {"field": "phone", "max": 0.0}},
                {"null_ratio": {"field": "city", "max": 0.5}},
                {"name": "two_phones", "sql": "SELECT count(DISTINCT phone) = 2 FROM source"},
            ]
        },
    )
    rows = [
        {"email": "a@x.com", "phone": "1", "city": "Oslo"},
        {"email": "b@x.com", "phone": "2", "city": None},
    ]
    kwargs = {} if outputs == "memory" else {"output_good": str(tmp_path / "good")}
    result = run(spark, doc, rows, **kwargs)
    observed = {r.name: (r.passed, r.observed) for r in result.report.dataset_rules}
    assert observed == {
        "email_unique": (True, 0),
        "phone_null_ratio": (True, 0.0),
        "city_null_ratio": (True, 0.5),
        "two_phones": (True, True),
    }
    assert result.report.status == "succeeded"
    good = result.good if outputs == "memory" else spark.read.parquet(str(tmp_path / "good"))
    assert set(rows_of(good, "email", "phone")) == {("***REDACTED***", None)}


@pytest.mark.parametrize("policy", ["allow", "drop", "quarantine"])
def test_preserved_upstream_lineage_survives_every_unknown_fields_policy(spark: Any, policy: str) -> None:
    """§7.1: columns the contract creates are never unknown; the preserve_upstream copy is lineage (§14)."""
    doc = contract(
        [{"name": "id", "type": "integer"}],
        lineage={"enabled": True, "preserve_upstream": ["_lakelogic_run_id"]},
        schema_policy={"unknown_fields": policy},
    )
    result = run(spark, doc, [{"id": 1, "_lakelogic_run_id": "up-1"}])
    assert rows_of(result.good, "id", "_upstream_lakelogic_run_id") == [(1, "up-1")]


def test_a_table_source_names_itself_in_the_source_lineage_column(spark: Any) -> None:
    """§14: `_lakelogic_source` is the row's source file, or the table name for a table source."""
    from lakelogic import DataProcessor

    name = "default.lineage_source_probe"
    spark.createDataFrame([(1,)], "id int").write.mode("overwrite").saveAsTable(name)
    try:
        doc = contract(
            [{"name": "id", "type": "integer"}],
            source={"type": "table", "path": name},
            lineage={"enabled": True},
        )
        result = DataProcessor(doc, spark=spark).run()
        assert rows_of(result.good, "id", "_lakelogic_source") == [(1, name)], result.report.error
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_source_lineage_after_an_op_that_drops_the_row_file(spark: Any, tmp_path: Any) -> None:
    """§14: a `sql` op that selects its own columns (or aggregates) cannot carry each row's file;
    such rows name the source location that was read instead of NULL (docs/decisions.md)."""
    from lakelogic import DataProcessor

    folder = tmp_path / "landing"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    (folder / "b.jsonl").write_text('{"id": 3}\n')
    fields = [{"name": "id", "type": "integer"}, {"name": "n", "type": "bigint"}]
    plain = DataProcessor(
        contract(
            fields[:1],
            source={"type": "landing", "path": str(folder), "format": "json"},
            lineage={"enabled": True},
        ),
        spark=spark,
    ).run()
    per_row = dict(rows_of(plain.good, "id", "_lakelogic_source"))
    assert per_row[1].endswith("a.jsonl") and per_row[3].endswith("b.jsonl"), per_row
    aggregated = DataProcessor(
        contract(
            fields,
            source={"type": "landing", "path": str(folder), "format": "json"},
            lineage={"enabled": True},
            transformations=[{"sql": "SELECT MAX(id) AS id, COUNT(*) AS n FROM source"}],
        ),
        spark=spark,
    ).run()
    assert rows_of(aggregated.good, "id", "n", "_lakelogic_source") == [(3, 3, f"file:{folder}")]
    one_file = DataProcessor(
        contract(
            fields[:1],
            source={"type": "landing", "path": str(folder / "a.jsonl"), "format": "json"},
            lineage={"enabled": True},
            transformations=[{"sql": "SELECT id FROM source WHERE id > 1"}],
        ),
        spark=spark,
    ).run()
    assert rows_of(one_file.good, "id", "_lakelogic_source") == [(2, per_row[1])]
