"""Model behaviour: aliases, §1.5 deviations, identity, transformations, frozen models."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from lakelogic.contract.loader import load_contract
from lakelogic.contract.models import (
    Contract,
    DatasetRuleUnique,
    QualityRule,
    RowRuleNotNull,
    RowRuleReferentialIntegrity,
    RowRuleRegexMatch,
    TransformationDeduplicate,
    TransformationPivot,
    TransformationRename,
)
from lakelogic.errors import ContractError
from lakelogic.types import Phase, Severity


def doc(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": "1.0.0",
        "info": {"title": "Customer Orders!"},
        "model": {"fields": [{"name": "id", "type": "int"}, {"name": "email", "type": "string"}]},
    }
    base.update(extra)
    return base


def problems(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ContractError) as info:
        load_contract(data)
    return {p.path: p.message for p in info.value.problems}


# --- identity -------------------------------------------------------------------------------


def test_identity_defaults() -> None:
    contract = load_contract(doc())
    assert contract.table_name == "customer_orders"
    assert contract.contract_name == "customer_orders"
    assert contract.layer is None
    assert contract.source_file is None
    assert contract.materialization is None and contract.lineage is None
    assert contract.quality.enforce_required is True
    assert contract.quarantine.enabled is True


def test_identity_precedence_and_layer() -> None:
    contract = load_contract(doc(info={"title": "T", "table_name": "tbl", "target_layer": "Curated"}))
    assert (contract.contract_name, contract.table_name, contract.layer) == ("tbl", "tbl", "gold")
    contract = load_contract(doc(dataset="ds.orders", tier="staging"))
    assert contract.contract_name == "ds.orders" and contract.layer == "silver"


def test_info_dataset_and_upstream_are_root_aliases() -> None:
    contract = load_contract(
        doc(info={"title": "T", "dataset": "orders", "upstream": ["a", "b"]}, upstream=["b", "c"])
    )
    assert contract.dataset == "orders"
    assert contract.upstream == ["b", "c", "a"]
    found = problems(doc(info={"title": "T", "dataset": "orders"}, dataset="other"))
    assert "differs" in found[""] or any("differs" in m for m in found.values())


def test_contract_name_pattern() -> None:
    found = problems(doc(dataset="bad name"))
    assert any("[A-Za-z0-9_.-]+" in m for m in found.values())


def test_field_helpers() -> None:
    contract = load_contract(doc())
    assert contract.field_names == ["id", "email"]
    field = contract.model_field("email")
    assert field is not None and field.logical_type.kind == "string"
    assert contract.model_field("EMAIL") is None


def test_duplicate_field_names() -> None:
    data = doc(model={"fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]})
    assert any("duplicate field name" in m for m in problems(data).values())


def test_models_are_frozen() -> None:
    contract = load_contract(doc())
    with pytest.raises(ValidationError):
        contract.info.title = "x"  # type: ignore[misc]


# --- quality --------------------------------------------------------------------------------


def test_shorthand_options_inside_or_beside() -> None:
    inside = {"regex_match": {"field": "email", "pattern": "@", "name": "has_at", "severity": "warning"}}
    beside = {"regex_match": {"field": "email", "pattern": "@"}, "name": "has_at", "severity": "WARNING"}
    rules = [load_contract(doc(quality={"row_rules": [r]})).quality.row_rules[0] for r in (inside, beside)]
    assert rules[0] == rules[1]
    rule = rules[0]
    assert isinstance(rule, RowRuleRegexMatch)
    assert (rule.name, rule.severity, rule.regex_match.pattern) == ("has_at", Severity.WARNING, "@")


def test_same_option_inside_and_beside_is_an_error() -> None:
    rule = {"range": {"field": "id", "min": 0, "phase": "post"}, "phase": "pre"}
    found = problems(doc(quality={"row_rules": [rule]}))
    assert found == {
        "quality.row_rules[0]": "'phase' is written both inside 'range' and beside it; write it once"
    }


def test_dataset_shorthand_options() -> None:
    rules = [
        {"unique": {"fields": ["id", "email"], "severity": "warning"}, "name": "pk"},
        {"unique": "id", "description": "ids"},
        {"null_ratio": {"field": "email", "max": 0.1, "category": "Completeness"}},
        {"row_count_between": {"min": 1}},
        {"name": "n", "sql": "SELECT COUNT(*) FROM source", "must_be_greater_than": 0},
    ]
    parsed = load_contract(doc(quality={"dataset_rules": rules})).quality.dataset_rules
    assert isinstance(parsed[0], DatasetRuleUnique)
    assert (parsed[0].unique, parsed[0].name, parsed[0].severity) == (["id", "email"], "pk", Severity.WARNING)
    assert isinstance(parsed[1], DatasetRuleUnique) and parsed[1].unique == ["id"]
    assert parsed[2].category == "completeness"
    assert isinstance(parsed[4], QualityRule)
    bad = problems(doc(quality={"dataset_rules": [{"unique": "id", "phase": "pre"}]}))
    assert "quality.dataset_rules[0].phase" in bad


def test_not_null_forms() -> None:
    rules = [
        {"not_null": "id", "severity": "warning"},
        {"not_null": {"fields": ["id", "email"]}, "phase": "post"},
        {"not_null": ["id", {"field": "email", "severity": "info", "name": "email_present"}]},
    ]
    parsed = load_contract(doc(quality={"row_rules": rules})).quality.row_rules
    assert all(isinstance(r, RowRuleNotNull) for r in parsed)
    targets = [[(t.field, t.name, t.severity, t.phase) for t in r.targets()] for r in parsed]  # type: ignore[union-attr]
    assert targets == [
        [("id", None, Severity.WARNING, None)],
        [("id", None, Severity.ERROR, Phase.POST), ("email", None, Severity.ERROR, Phase.POST)],
        [("id", None, Severity.ERROR, None), ("email", "email_present", Severity.INFO, None)],
    ]


def test_name_on_multi_field_not_null_is_an_error() -> None:
    for rule in (
        {"not_null": ["id", "email"], "name": "x"},
        {"not_null": {"fields": ["id", "email"], "name": "x"}},
    ):
        found = problems(doc(quality={"row_rules": [rule]}))
        assert any("multi-field not_null" in m for m in found.values()), found


def test_referential_integrity_and_lifecycle_aliases() -> None:
    rules = [
        {"referential_integrity": {"column": "id", "reference": "customers"}},
        {
            "lifecycle_window": {
                "timestamp_field": "ts",
                "event_key": "id",
                "reference": "r",
                "start_field": "s",
            }
        },
        {"lifecycle_window": {"field": "ts", "window": "30d"}},
    ]
    parsed = load_contract(doc(quality={"row_rules": rules})).quality.row_rules
    ri = parsed[0]
    assert isinstance(ri, RowRuleReferentialIntegrity)
    assert (ri.referential_integrity.field, ri.referential_integrity.effective_key) == ("id", "id")
    assert parsed[1].lifecycle_window.event_ts == "ts"
    assert parsed[2].lifecycle_window.is_reference_form is False
    both = {"referential_integrity": {"column": "id", "field": "id", "reference": "c"}}
    assert any("alias" in m for m in problems(doc(quality={"row_rules": [both]})).values())


def test_duplicate_explicit_rule_names() -> None:
    rules = [{"name": "r", "sql": "id > 0"}, {"not_null": "id", "name": "r"}]
    assert any("duplicate row rule name" in m for m in problems(doc(quality={"row_rules": rules})).values())


def test_rule_defaults_and_category_lower_case() -> None:
    rule = load_contract(doc(quality={"row_rules": [{"name": "r", "sql": "id > 0", "category": "Validity"}]}))
    parsed = rule.quality.row_rules[0]
    assert isinstance(parsed, QualityRule)
    assert (parsed.severity, parsed.phase, parsed.category) == (Severity.ERROR, None, "validity")


# --- transformations ------------------------------------------------------------------------


def test_transformation_op_name_op_and_phase() -> None:
    ops = [
        {"trim": {"fields": ["email"]}},
        {"derive": {"field": "net", "sql": "id * 2"}, "phase": "pre"},
        {"sql": "SELECT * FROM source"},
        {"rename": {"from": "email", "to": "mail"}},
    ]
    contract = load_contract(doc(transformations=ops))
    summary = [(t.op_name, t.phase, t.effective_phase) for t in contract.transformations]
    assert summary == [
        ("trim", None, Phase.PRE),
        ("derive", Phase.PRE, Phase.PRE),
        ("sql", None, Phase.POST),
        ("rename", None, Phase.PRE),
    ]
    assert contract.transformations[2].op == "SELECT * FROM source"
    rename = contract.transformations[3].op
    assert isinstance(rename, TransformationRename) and rename.renames == {"email": "mail"}


def test_op_aliases() -> None:
    ops = [
        {"deduplicate": {"by": "id", "sort_by": ["email"], "order": "ASC"}},
        {"pivot": {"id_vars": ["id"], "pivot_col": "k", "value_col": "v", "pivot_values": ["a", "b"]}},
        {"unpivot": {"id_vars": ["id"], "value_cols": ["a", "b"]}},
    ]
    dedup, pivot, unpivot = (t.op for t in load_contract(doc(transformations=ops)).transformations)
    assert isinstance(dedup, TransformationDeduplicate) and (dedup.on, dedup.order) == (["id"], "asc")
    assert isinstance(pivot, TransformationPivot) and pivot.values == ["a", "b"]
    assert unpivot.value_vars == ["a", "b"]


def test_op_closed_values() -> None:
    ops = [
        {"join": {"reference": "r", "on": "id", "key": "id", "fields": ["x"], "type": "outer"}},
        {"date_diff": {"field": "d", "from_col": "a", "to_col": "b", "unit": "day"}},
        {"cast": {"columns": {"id": "bigintt"}}},
    ]
    found = problems(doc(transformations=ops))
    assert set(found) == {
        "transformations[0].join.type",
        "transformations[1].date_diff.unit",
        "transformations[2].cast.columns",
    }


def test_map_values_keys_become_text() -> None:
    contract = load_contract(
        doc(transformations=[{"map_values": {"field": "id", "mapping": {2: "a", False: "b"}}}])
    )
    assert contract.transformations[0].op.mapping == {"2": "a", "false": "b"}


# --- materialization, masking, notifications ------------------------------------------------


def test_scd2_aliases() -> None:
    mat = {
        "strategy": "scd2",
        "scd2": {
            "change_date_field": "changed_at",
            "start_date_field": "valid_from",
            "end_date": None,
            "current_flag": "cur",
            "hash_columns": ["price"],
            "default_effective_from": "2000-01-01",
        },
    }
    mat["scd2"].pop("end_date")
    contract = load_contract(doc(primary_key=["id"], materialization=mat))
    scd2 = contract.materialization.scd2  # type: ignore[union-attr]
    assert scd2 is not None
    assert (scd2.timestamp_field, scd2.effective_from_field, scd2.effective_to_field) == (
        "changed_at",
        "valid_from",
        "effective_to",
    )
    assert (scd2.current_flag_field, scd2.track_columns, scd2.effective_from_default) == (
        "cur",
        ["price"],
        "2000-01-01",
    )
    twice = {"strategy": "scd2", "scd2": {"effective_from": "a", "start_date_field": "b"}}
    assert any("alias" in m for m in problems(doc(primary_key=["id"], materialization=twice)).values())


def test_merge_and_scd2_need_keys() -> None:
    assert any("primary_key" in m for m in problems(doc(materialization={"strategy": "merge"})).values())
    assert any("business_key" in m for m in problems(doc(materialization={"strategy": "scd2"})).values())
    ok = load_contract(doc(materialization={"strategy": "scd2", "scd2": {"business_key": "id"}}))
    assert ok.materialization is not None and ok.materialization.scd2 is not None
    assert ok.materialization.scd2.business_key == ["id"]


def test_masking_and_event_aliases() -> None:
    data = doc(
        model={
            "fields": [
                {"name": "e", "type": "string", "masking": "tokenize"},
                {"name": "f", "type": "int", "masking": "null"},
            ]
        },
        quarantine={
            "notifications": [{"target": "env:HOOK", "on_events": ["quarantined", "sla_breach", "failure"]}]
        },
    )
    contract = load_contract(data)
    assert [f.masking for f in contract.model.fields] == ["encrypt", "nullify"]
    assert contract.quarantine.notifications[0].on_events == ["quarantine", "slo_breach", "failure"]
    default = load_contract(doc(quarantine={"notifications": [{"target": "x"}]}))
    assert default.quarantine.notifications[0].on_events == ["quarantine", "failure"]
    assert "model.fields[0].masking" in problems(
        doc(model={"fields": [{"name": "e", "type": "string", "masking": "scramble"}]})
    )


def test_free_form_regions_accept_anything() -> None:
    contract = load_contract(
        doc(
            metadata={"anything": {"goes": [1, 2]}},
            compliance={"retention": {"period": "30d"}},
            materialization={"table_properties": {"k": 1}, "compaction": {"x": True}},
            external_logic={"type": "python", "path": "x.py", "engine": "spark", "args": {"k": {"n": 1}}},
        )
    )
    assert contract.metadata["anything"] == {"goes": [1, 2]}
    assert contract.external_logic is not None and contract.external_logic.args == {"k": {"n": 1}}
    reserved = {"type": "python", "path": "x.py", "engine": "spark", "args": {"links": 1}}
    assert any("reserved" in m for m in problems(doc(external_logic=reserved)).values())


def test_contract_model_validate_directly() -> None:
    contract = Contract.model_validate(doc())
    assert contract.contract_name == "customer_orders"
    assert contract.contract_dir.is_absolute()


def test_dump_and_reload_round_trip(shared_dir: Any) -> None:
    path = shared_dir / "olc" / "conformance" / "cases" / "scd2-dimension" / "contract.olc.yaml"
    contract = load_contract(path)
    dumped = contract.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    again = load_contract(dumped)
    assert again.model_dump() == contract.model_dump()
    assert again.source_file is None and contract.source_file == path.resolve()
