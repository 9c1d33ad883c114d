"""WriteSpec resolution from contracts, SCD2 aliases, commit stamps — no Spark needed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import PlanError
from lakelogic.tables.spec import scd2_spec_from, write_spec_from_contract
from lakelogic.tables.stamp import CommitStamp


def _doc(**extra: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "version": "1.0.0",
        "info": {"title": "Dim Customer"},
        "model": {"fields": [{"name": "customer_id", "type": "int"}, {"name": "tier", "type": "string"}]},
    }
    doc.update(extra)
    return doc


def test_scd2_spec_from_contract_with_aliases_and_defaults() -> None:
    contract = load_contract(
        _doc(
            natural_key=["customer_id"],
            materialization={
                "strategy": "scd2",
                "scd2": {
                    "change_date_field": "updated_at",
                    "current_flag": "current",
                    "hash_columns": ["tier"],
                },
            },
            lineage={"enabled": True, "timestamp_column_name": "loaded_at"},
            schema_policy={"evolution": "compatible"},
        )
    )
    spec = write_spec_from_contract(contract)
    assert spec.strategy == "scd2"
    assert spec.scd2 is not None
    assert spec.scd2.business_key == ("customer_id",)
    assert spec.scd2.timestamp_field == "updated_at"
    assert spec.scd2.current_flag == "current"
    assert spec.scd2.track_columns == ("tier",)
    assert (spec.scd2.effective_from_default, spec.scd2.effective_to_default) == ("1900-01-01", "9999-12-31")
    assert "loaded_at" in spec.lineage_columns
    assert spec.evolution == "compatible"


def test_scd2_key_precedence_and_missing_key() -> None:
    spec = scd2_spec_from({"business_key": ["a", "b"]}, keys=("pk",))
    assert spec.business_key == ("a", "b")
    assert scd2_spec_from(None, keys=("pk",)).business_key == ("pk",)
    with pytest.raises(PlanError, match="needs a key"):
        scd2_spec_from({}, keys=())
    with pytest.raises(PlanError, match="aliases"):
        scd2_spec_from({"effective_from": "a", "start_date_field": "b"}, keys=("k",))
    with pytest.raises(PlanError, match="surrogate_key_strategy"):
        scd2_spec_from({"surrogate_key_strategy": "serial"}, keys=("k",))


def test_merge_needs_primary_key_and_reads_cdc_settings() -> None:
    with pytest.raises(PlanError, match="primary_key"):
        write_spec_from_contract(_doc(materialization={"strategy": "merge"}))  # plain mapping: not loaded
    contract = load_contract(
        _doc(
            primary_key=["customer_id"],
            source={
                "type": "landing",
                "path": "/in",
                "load_mode": "cdc",
                "cdc_op_field": "op",
                "cdc_delete_values": ["D"],
                "cdc_timestamp_field": "ts",
            },
            materialization={"strategy": "merge", "merge_dedup_guard": True, "soft_delete_column": "deleted"},
        )
    )
    spec = write_spec_from_contract(contract)
    assert spec.primary_key == ("customer_id",)
    assert (spec.cdc_op_field, spec.cdc_delete_values, spec.cdc_timestamp_field) == ("op", ("D",), "ts")
    assert spec.merge_dedup_guard is True
    assert spec.soft_delete_column == "deleted"
    assert "op" in spec.ignored_in_compare()


def test_stamp_matches_run_or_same_pipeline_window() -> None:
    start, end = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    stamp = CommitStamp("run-1", "orders", pipeline_run_id="p-1", window_start=start, window_end=end)
    props = stamp.properties()
    assert props["lakelogic.run_id"] == "run-1"
    assert props["lakelogic.window_start"] == start.isoformat()
    assert stamp.matches(props)
    retry = CommitStamp("run-2", "orders", pipeline_run_id="p-1", window_start=start, window_end=end)
    assert retry.matches(props), "same pipeline run + contract + window is the same commit"
    other_window = CommitStamp("run-3", "orders", pipeline_run_id="p-1", window_start=end, window_end=end)
    assert not other_window.matches(props)
    quarantine = CommitStamp("run-1", "orders", role="quarantine")
    assert not quarantine.matches(props), "target and quarantine commits are tracked separately"
    standalone = CommitStamp("run-9", "orders")
    assert standalone.window_key is None
    assert not standalone.matches(props)
