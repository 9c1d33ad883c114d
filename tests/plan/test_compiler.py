"""compile_contract: step order (SEMANTICS §8), step contents, plan identity, conformance contracts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import ContractError, PlanError, PlanErrors
from lakelogic.plan.compiler import compile_contract
from lakelogic.plan.steps import (
    AddLineage,
    EnforceSchema,
    ExternalLogic,
    Extract,
    FinalProjection,
    LoadLink,
    Mask,
    Materialize,
    PreserveUpstream,
    ReadSource,
    Split,
    Transform,
    ValidateRows,
)
from lakelogic.types import Phase
from tests.plan.builders import BASE, compile_doc, contract_doc

FULL: dict[str, Any] = contract_doc(
    info={
        "title": "Orders Silver",
        "version": "2.3.0",
        "domain": "sales",
        "system": "shop",
        "target_layer": "staging",
    },
    model={
        "fields": [
            *BASE["model"]["fields"],
            {"name": "region", "type": "string"},
            {"name": "card", "type": "string", "masking": "tokenize"},
        ]
    },
    source={
        "type": "landing",
        "path": "landing/orders/*.csv",
        "options": {"delimiter": ";", "date_formats": ["dd.MM.yyyy"]},
    },
    links=[
        {
            "name": "regions",
            "path": "ref/regions.csv",
            "columns": ["code", "region"],
            "filter": "active = true",
        }
    ],
    extraction={"provider": "regex", "text_column": "email", "patterns": {"domain": "@(.+)$"}},
    transformations=[
        {"trim": {"fields": ["status"]}},
        {
            "lookup": {
                "field": "region",
                "reference": "regions",
                "on": "status",
                "key": "code",
                "value": "region",
            }
        },
        {"filter": {"sql": "amount > 0"}, "phase": "post"},
    ],
    quality={
        "row_rules": [{"name": "amount_pos", "sql": "amount > 0"}, {"not_null": "region"}],
        "dataset_rules": [{"unique": "id"}],
        "fail_pipeline_on_dataset_error": True,
    },
    quarantine={"include_error_reason": False, "target": "q.orders"},
    schema_policy={"unknown_fields": "drop", "evolution": "append"},
    server={"path": "/lake/orders", "format": "delta", "schema_policy": {"evolution": "strict"}},
    lineage={
        "enabled": True,
        "capture_created_by": False,
        "run_id_column_name": "rid",
        "run_id_source": "pipeline_run_id",
        "preserve_upstream": ["_lakelogic_run_id"],
    },
    materialization={"strategy": "merge", "partition_by": ["region"]},
    primary_key=["id"],
)


def test_steps_follow_the_execution_order() -> None:
    plan = compile_doc(FULL)
    kinds = [(s.kind, getattr(s, "phase", None)) for s in plan.steps]
    assert kinds == [
        ("ReadSource", None),
        ("LoadLink", None),
        ("PreserveUpstream", None),
        ("Extract", None),
        ("Transform", Phase.PRE),
        ("EnforceSchema", None),
        ("ValidateRows", Phase.PRE),
        ("Split", None),
        ("Transform", Phase.POST),
        ("Transform", Phase.POST),
        ("ValidateRows", Phase.POST),
        ("FinalProjection", None),
        ("CheckDataset", None),
        ("Mask", None),
        ("AddLineage", None),
        ("Materialize", None),
    ]
    ops = [s.op for s in plan.steps if isinstance(s, Transform)]
    assert ops == ["trim", "lookup", "filter"]


def test_identity_and_step_contents() -> None:
    plan = compile_doc(FULL)
    assert (plan.contract_name, plan.title, plan.version, plan.layer) == (
        "orders_silver",
        "Orders Silver",
        "2.3.0",
        "silver",
    )
    assert (plan.domain, plan.system, plan.primary_key) == ("sales", "shop", ("id",))
    step = {type(s): s for s in plan.steps}

    read = step[ReadSource]
    assert isinstance(read, ReadSource)
    assert (
        read.path is not None and read.path.endswith("landing/orders/*.csv") and Path(read.path).is_absolute()
    )
    assert (read.format, read.load_mode, read.empty_behavior) == ("csv", "full", "fail")
    assert read.options["delimiter"] == ";"

    link = step[LoadLink]
    assert isinstance(link, LoadLink) and plan.links == (link,)
    assert (link.name, link.type, link.columns, link.filter) == (
        "regions",
        "csv",
        ("code", "region"),
        "active = true",
    )

    assert isinstance(step[PreserveUpstream], PreserveUpstream)
    extract = step[Extract]
    assert isinstance(extract, Extract) and extract.patterns == {"domain": "@(.+)$"}

    schema = step[EnforceSchema]
    assert isinstance(schema, EnforceSchema)
    # server.schema_policy overrides per key: evolution from server, unknown_fields from the top level
    assert (schema.unknown_fields, schema.evolution) == ("drop", "strict")
    assert schema.post_created == ("region",)
    assert schema.date_formats == ("dd.MM.yyyy",)
    assert [f.name for f in schema.fields] == ["id", "status", "amount", "email", "region", "card"]
    assert schema.fields[0].required and str(schema.fields[2].type) == "double"
    final = step[FinalProjection]
    assert isinstance(final, FinalProjection) and final.unknown_fields == "drop"

    split = step[Split]
    assert isinstance(split, Split) and split.include_error_reason is False and split.quarantine_enabled

    masked = step[Mask]
    assert isinstance(masked, Mask) and [(f.name, f.masking) for f in masked.fields] == [("card", "encrypt")]

    lineage = step[AddLineage]
    assert isinstance(lineage, AddLineage)
    assert lineage.columns == {
        "_lakelogic_source": "source_path",
        "_lakelogic_processed_at": "processed_at",
        "rid": "pipeline_run_id",
        "_lakelogic_contract_name": "contract_name",
        "_lakelogic_domain": "domain",
        "_lakelogic_system": "system",
        "_lakelogic_created_at": "created_at",
    }
    assert lineage.values == {"contract_name": "orders_silver (v2.3.0)", "domain": "sales", "system": "shop"}

    write = step[Materialize]
    assert isinstance(write, Materialize)
    assert (write.strategy, write.target, write.format, write.quarantine_target) == (
        "merge",
        "/lake/orders",
        "delta",
        "q.orders",
    )
    assert write.settings["partition_by"] == ["region"]


def test_rules_split_by_phase() -> None:
    plan = compile_doc(FULL)
    validate = [s for s in plan.steps if isinstance(s, ValidateRows)]
    assert [r.name for r in validate[0].rules] == ["id_required", "amount_pos"]
    assert [r.name for r in validate[1].rules] == ["region_not_null"]
    assert plan.row_rules == (*validate[0].rules, *validate[1].rules)


def test_minimal_contract_has_no_optional_steps() -> None:
    kinds = [s.kind for s in compile_doc().steps]
    assert kinds == [
        "EnforceSchema",
        "ValidateRows",
        "Split",
        "ValidateRows",
        "FinalProjection",
        "CheckDataset",
    ]


def test_a_deprecated_contract_runs_with_a_warning() -> None:
    """SEMANTICS §2: `info.status: deprecated` runs with a report warning (the plan's warnings go there)."""
    deprecated = contract_doc(info={"title": "Orders", "table_name": "orders", "status": "deprecated"})
    assert [w for w in compile_doc(deprecated).warnings if w.startswith("contract_deprecated")] == [
        "contract_deprecated: info.status: contract 'orders' is deprecated"
    ]
    active = contract_doc(info={"title": "Orders", "table_name": "orders", "status": "active"})
    assert not [w for w in compile_doc(active).warnings if "deprecated" in w]


def test_incremental_sources_skip_when_empty() -> None:
    doc = contract_doc(
        source={"type": "landing", "path": "/data/in", "format": "parquet", "load_mode": "incremental"}
    )
    read = compile_doc(doc).steps[0]
    assert isinstance(read, ReadSource) and read.empty_behavior == "skip" and read.path == "/data/in"


def _external(tmp_path: Path, engine: str) -> dict[str, Any]:
    (tmp_path / "enrich.py").write_text("def run(frame, links, engine):\n    return frame\n")
    doc = contract_doc(
        external_logic={"type": "python", "path": "enrich.py", "engine": engine, "args": {"k": 1}}
    )
    path = tmp_path / "c.yaml"
    import yaml

    path.write_text(yaml.safe_dump(doc))
    return {"path": path}


def test_external_logic_engine_must_match_unless_overridden(tmp_path: Path) -> None:
    contract = load_contract(_external(tmp_path, "polars")["path"])
    with pytest.raises(PlanError) as info:
        compile_contract(contract, engine="spark")
    assert info.value.yaml_path == "external_logic.engine"
    plan = compile_contract(contract, engine="spark", external_logic_engine_override=True)
    (step,) = plan.of_kind(ExternalLogic)
    assert isinstance(step, ExternalLogic)
    assert step.engine == "spark"
    assert step.path == str((tmp_path / "enrich.py").resolve())
    assert step.args == {"k": 1}


def test_external_logic_reserved_args() -> None:
    doc = contract_doc(
        external_logic={"type": "python", "path": "x.py", "engine": "spark", "args": {"links": 1}}
    )
    # the loader may reject it first; either way it never reaches a run
    with pytest.raises((ContractError, PlanError), match="links"):
        compile_doc(doc)


def test_key_columns_must_exist() -> None:
    with pytest.raises(ContractError, match="nope"):
        compile_doc(contract_doc(primary_key=["nope"]))
    # a key created by an op is fine
    doc = contract_doc(primary_key=["k"], transformations=[{"derive": {"field": "k", "sql": "id * 10"}}])
    assert compile_doc(doc).primary_key == ("k",)


def test_link_filter_sql_is_checked() -> None:
    doc = contract_doc(links=[{"name": "r", "path": "r.parquet", "filter": "active = = 1"}])
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "links[0].filter"


def test_every_conformance_contract_compiles(shared_dir: Path) -> None:
    cases = sorted((shared_dir / "olc" / "conformance" / "cases").glob("*/contract.olc.yaml"))
    assert cases
    for path in cases:
        plan = compile_contract(load_contract(path), engine="spark", external_logic_engine_override=True)
        assert plan.steps, path
        assert any(isinstance(s, EnforceSchema) for s in plan.steps)


def test_conformance_execution_order_and_regex(shared_dir: Path) -> None:
    cases = shared_dir / "olc" / "conformance" / "cases"
    plan = compile_contract(load_contract(cases / "execution-order-pre" / "contract.olc.yaml"))
    kinds = [s.kind for s in plan.steps]
    assert kinds.index("Transform") < kinds.index("EnforceSchema")
    (rule,) = [r for r in plan.row_rules if r.name == "net_nonneg"]
    assert (rule.phase, rule.predicate) == (Phase.PRE, "net >= 0")

    plan = compile_contract(load_contract(cases / "regex-match" / "contract.olc.yaml"))
    (rule,) = [r for r in plan.row_rules if r.name == "name_is_lower"]
    assert rule.predicate == "name IS NULL OR name RLIKE '^[a-z]+$'"


def test_accumulating_snapshot_adds_milestone_order_rule() -> None:
    model = {
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "ordered_at", "type": "date"},
            {"name": "shipped_at", "type": "date"},
            {"name": "delivered_at", "type": "date"},
        ]
    }
    fact = {"type": "accumulating_snapshot", "milestone_dates": ["ordered_at", "shipped_at", "delivered_at"]}
    plan = compile_doc(contract_doc(model=model, materialization={"strategy": "append", "fact": fact}))
    (rule,) = [r for r in plan.row_rules if r.name == "milestone_dates_ordered"]
    assert rule.predicate == (
        "(ordered_at IS NULL OR shipped_at IS NULL OR ordered_at <= shipped_at) AND "
        "(shipped_at IS NULL OR delivered_at IS NULL OR shipped_at <= delivered_at)"
    )
    assert (rule.category, rule.origin) == ("consistency", "implied")


def test_partition_columns_must_exist_in_the_output() -> None:
    doc = contract_doc(materialization={"partition_by": ["region"]}, schema_policy={"unknown_fields": "drop"})
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "materialization.partition_by"
    # with pass-through columns allowed the source may still bring it
    plan = compile_doc(contract_doc(materialization={"cluster_by": ["region"]}))
    assert any("cluster_by" in w for w in plan.warnings)
    # lineage columns count as output
    doc = contract_doc(
        lineage={"enabled": True}, materialization={"partition_by": ["_lakelogic_processed_at"]}
    )
    assert compile_doc(doc).warnings == ()


def test_every_independent_plan_problem_is_reported_once() -> None:
    """Each op and rule is compiled even after another failed; a rule reading the output of a failed
    op is not reported as reading an unknown column (that would be a second report of one mistake)."""
    doc = contract_doc(
        schema_policy={"unknown_fields": "quarantine"},
        transformations=[
            {"derive": {"field": "net", "sql": "amount +* 2"}},
            {"lower": {"fields": ["status"]}},
        ],
        quality={
            "row_rules": [
                {"name": "net_positive", "sql": "net > 0"},
                {"name": "broken", "sql": "status IN ("},
            ],
            "dataset_rules": [{"name": "bad_agg", "sql": "SELECT MAX( FROM source"}],
        },
    )
    with pytest.raises(PlanErrors) as caught:
        compile_doc(doc)
    assert [e.yaml_path for e in caught.value.errors] == [
        "transformations[0].derive.sql",
        "quality.row_rules[1].sql",
        "quality.dataset_rules[0].sql",
    ]
    assert "3 plan problems" in str(caught.value)
    # one problem stays a plain PlanError, as before
    doc["quality"] = {"row_rules": [{"name": "net_positive", "sql": "net > 0"}]}
    with pytest.raises(PlanError) as single:
        compile_doc(doc)
    assert not isinstance(single.value, PlanErrors)
    assert single.value.yaml_path == "transformations[0].derive.sql"
