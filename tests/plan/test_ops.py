"""compile_transform: phases, parameters (aliases/defaults), row effects, reads/creates, SQL, errors.

No Spark: these run on plain mappings and on the contract models.
"""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.errors import PlanError
from lakelogic.plan.ops import OP_NAMES, compile_transform, default_phase
from lakelogic.plan.steps import Transform
from lakelogic.types import Phase


def compile_one(item: dict[str, Any], index: int = 0, **kwargs: Any) -> Transform:
    return compile_transform(index, item, f"transformations[{index}]", **kwargs)


def test_every_op_of_the_semantics_table_is_known() -> None:
    expected = {
        "sql", "rename", "derive", "filter", "cast", "select", "drop", "trim", "lower", "upper", "coalesce",
        "map_values", "deduplicate", "deduplicate_by_latest", "split", "explode", "json_extract", "bucket",
        "date_diff", "date_range_explode", "lookup", "join", "rollup", "pivot", "unpivot",
    }  # fmt: skip
    assert set(OP_NAMES) == expected


@pytest.mark.parametrize(
    ("op", "phase"),
    [("trim", Phase.PRE), ("rename", Phase.PRE), ("explode", Phase.PRE), ("filter", Phase.PRE),
     ("derive", Phase.POST), ("lookup", Phase.POST), ("sql", Phase.POST), ("pivot", Phase.POST)],
)  # fmt: skip
def test_default_phases(op: str, phase: Phase) -> None:
    assert default_phase(op) == phase


def test_default_phases_agree_with_the_contract_models() -> None:
    from lakelogic.contract.models_transform import OP_DEFAULT_PHASE

    assert {op: default_phase(op) for op in OP_NAMES} == dict(OP_DEFAULT_PHASE)


def test_explicit_phase_wins_over_the_default() -> None:
    step = compile_one({"derive": {"field": "net", "sql": "gross - fee"}, "phase": "pre"})
    assert step.phase == Phase.PRE
    assert compile_one({"trim": {"fields": ["a"]}, "phase": "post"}).phase == Phase.POST
    assert compile_one({"trim": {"fields": ["a"]}}).phase == Phase.PRE


def test_derive_reads_columns_of_its_expression_and_creates_its_field() -> None:
    step = compile_one({"derive": {"field": "net", "sql": "gross - fee + transform(xs, x -> x + 1)[0]"}})
    assert step.op == "derive"
    assert step.creates == ("net",)
    assert set(step.reads) == {"gross", "fee", "xs"}
    assert step.row_effect == "none"
    assert "AS `net`" in step.sql and step.sql.startswith("SELECT *,")


def test_bad_sql_names_op_index_and_yaml_path() -> None:
    with pytest.raises(PlanError) as info:
        compile_one({"derive": {"field": "net", "sql": "gross -"}}, index=3)
    assert info.value.yaml_path == "transformations[3].derive.sql"
    assert "op #3" in str(info.value)
    with pytest.raises(PlanError) as info:
        compile_one({"filter": {"sql": "a >"}}, index=1)
    assert info.value.yaml_path == "transformations[1].filter.sql"
    with pytest.raises(PlanError) as info:
        compile_one({"sql": "DROP TABLE t"}, index=2)
    assert info.value.yaml_path == "transformations[2].sql"
    with pytest.raises(PlanError, match="statement"):
        compile_one({"derive": {"field": "x", "sql": "SELECT 1"}})
    with pytest.raises(PlanError) as info:
        compile_one({"rollup": {"group_by": ["g"], "aggregations": {"n": "sum(("}}})
    assert info.value.yaml_path == "transformations[0].rollup.aggregations.n"


def test_sql_op_lists_tables_and_replaces_the_frame() -> None:
    step = compile_one(
        {"sql": "WITH x AS (SELECT * FROM source) SELECT * FROM x JOIN regions r ON x.c = r.c"},
        dataset="orders",
    )
    assert step.row_effect == "any"
    assert set(step.params["tables"]) == {"source", "regions"}
    assert step.params["dataset"] == "orders"
    placeholder = compile_one({"sql": "SELECT * FROM {dataset}"})
    assert placeholder.params["tables"] == ("{dataset}",)


def test_rename_forms_and_clashes() -> None:
    assert compile_one({"rename": {"from": "a", "to": "b"}}).params == {"mappings": {"a": "b"}, "from": "a"}
    step = compile_one({"rename": {"mappings": {"a": "b", "b": "a"}}})
    assert step.params["mappings"] == {"a": "b", "b": "a"}
    assert step.reads == ("a", "b") and step.creates == ("b", "a")
    with pytest.raises(PlanError, match="several columns renamed to c"):
        compile_one({"rename": {"mappings": {"a": "c", "b": "c"}}})
    with pytest.raises(PlanError):
        compile_one({"rename": {"from": "a"}})


def test_deduplicate_alias_defaults_and_row_effect() -> None:
    step = compile_one({"deduplicate": {"by": ["id"], "sort_by": ["ts"]}})
    assert dict(step.params) == {"on": ("id",), "sort_by": ("ts",), "order": "desc"}
    assert step.row_effect == "dedup"
    assert "NULLS LAST" in step.sql
    latest = compile_one({"deduplicate_by_latest": {"key_columns": ["id"], "timestamp_column": "ts"}})
    assert latest.params["on"] == ("id",) and latest.params["sort_by"] == ("ts",)
    assert latest.params["order"] == "desc" and latest.row_effect == "dedup"
    with pytest.raises(PlanError) as info:
        compile_one({"deduplicate": {"on": ["id"], "order": "newest"}})
    assert info.value.yaml_path == "transformations[0].deduplicate.order"


def test_row_effects_of_row_changing_ops() -> None:
    effects = {
        "filter": {"sql": "v > 0"},
        "explode": {"field": "tags"},
        "date_range_explode": {"output": "d", "start_col": "s"},
        "join": {"reference": "r", "on": "k", "key": "k", "fields": ["x"]},
        "lookup": {"field": "f", "reference": "r", "on": "k", "key": "k", "value": "v"},
        "unpivot": {"id_vars": ["id"], "value_vars": ["a"]},
        "rollup": {"group_by": ["g"], "aggregations": {"n": "count(*)"}},
        "pivot": {"id_vars": ["id"], "pivot_col": "k", "value_col": "v", "values": ["a"]},
    }
    got = {op: compile_one({op: params}).row_effect for op, params in effects.items()}
    assert got == {
        "filter": "filter",
        "explode": "expand",
        "date_range_explode": "any",
        "join": "expand",
        "lookup": "none",
        "unpivot": "any",
        "rollup": "filter",
        "pivot": "filter",
    }
    inner = compile_one({"join": {"reference": "r", "on": "k", "key": "k", "fields": ["x"], "type": "inner"}})
    assert inner.row_effect == "any"
    assert compile_one({"rollup": {"aggregations": {"n": "count(*)"}}}).row_effect == "any"


def test_output_defaults_to_field() -> None:
    assert compile_one({"split": {"field": "s"}}).params == {"field": "s", "delimiter": ",", "output": "s"}
    assert compile_one({"explode": {"field": "tags", "output": "tag"}}).creates == ("tag",)
    coalesce = compile_one({"coalesce": {"field": "a", "default": 0}})
    assert coalesce.params["output"] == "a" and coalesce.reads == ("a",)
    assert "COALESCE(`a`, 0)" in coalesce.sql
    mapped = compile_one({"map_values": {"field": "s", "mapping": {2: "two", True: "yes"}}})
    assert mapped.params["mapping"] == {"2": "two", "true": "yes"}


def test_trim_rendering_escapes_whitespace_and_validates_side() -> None:
    step = compile_one({"trim": {"fields": ["a", "b"], "side": "left"}})
    assert step.params == {"fields": ("a", "b"), "side": "left"}
    assert "LEADING ' \\t\\n\\r\\u000C\\u000B' FROM `a`" in step.sql
    with pytest.raises(PlanError) as info:
        compile_one({"trim": {"fields": ["a"], "side": "middle"}})
    assert info.value.yaml_path == "transformations[0].trim.side"


def test_json_extract_paths() -> None:
    step = compile_one(
        {"json_extract": {"field": "f", "source": "j", "path": "$.a[2]['k.x'].b", "cast": "FLOAT"}}
    )
    assert step.params["segments"] == ("a", 2, "k.x", "b")
    assert step.params["cast"] == "float"
    assert "TRY_CAST" in step.sql
    for bad in ("a.b", "$.a[x]", "$..a"):
        with pytest.raises(PlanError) as info:
            compile_one({"json_extract": {"field": "f", "source": "j", "path": bad}})
        assert info.value.yaml_path == "transformations[0].json_extract.path"
    with pytest.raises(PlanError, match="did you mean"):
        compile_one({"json_extract": {"field": "f", "source": "j", "path": "$.a", "cast": "flaot"}})


def test_date_ops_parameters() -> None:
    diff = compile_one({"date_diff": {"field": "age", "from_col": "a", "to_col": "b"}})
    assert diff.params["unit"] == "days" and diff.reads == ("a", "b")
    with pytest.raises(PlanError):
        compile_one({"date_diff": {"field": "age", "from_col": "a", "to_col": "b", "unit": "fortnights"}})
    explode = compile_one(
        {"date_range_explode": {"output": "d", "start_col": "s", "end_col": "e", "interval": "3mo"}}
    )
    assert (explode.params["count"], explode.params["unit"]) == (3, "mo")
    assert "INTERVAL 3 MONTH" in explode.sql
    for bad in ("0d", "1y", "d"):
        with pytest.raises(PlanError):
            compile_one({"date_range_explode": {"output": "d", "start_col": "s", "interval": bad}})


def test_bucket_bins_and_rendering() -> None:
    step = compile_one(
        {"bucket": {"field": "band", "source": "p", "default": "big",
                    "bins": [{"label": "small", "lt": 10}, {"label": "mid", "gte": 10, "lt": 100}]}}
    )  # fmt: skip
    assert step.params["bins"][1] == {
        "label": "mid",
        "lt": 100,
        "lte": None,
        "gt": None,
        "gte": 10,
        "eq": None,
    }
    assert "WHEN `p` < 100 AND `p` >= 10 THEN 'mid'" in step.sql
    with pytest.raises(PlanError):
        compile_one({"bucket": {"field": "b", "source": "p", "bins": [{"lt": 1}]}})


def test_join_parameters() -> None:
    step = compile_one(
        {"join": {"reference": "seg", "on": "cid", "key": "id", "fields": ["segment"], "prefix": "s_",
                  "defaults": {"segment": "none"}}}
    )  # fmt: skip
    assert step.creates == ("s_segment",)
    assert step.params["type"] == "left"
    assert "COALESCE(r.`segment`, 'none') AS `s_segment`" in step.sql
    with pytest.raises(PlanError, match="not in `fields`"):
        compile_one(
            {"join": {"reference": "seg", "on": "c", "key": "c", "fields": ["a"], "defaults": {"b": 1}}}
        )


def test_rollup_outputs() -> None:
    step = compile_one(
        {"rollup": {"group_by": ["g"], "aggregations": {"total": "sum(v)"}, "keys": ["a", "b"]}}
    )
    assert step.creates == (
        "g",
        "total",
        "_lakelogic_rollup_keys",
        "_lakelogic_rollup_keys_count",
        "_upstream_lakelogic_run_ids",
    )
    assert set(step.reads) == {"g", "a", "b", "v"}
    assert "collect_set" in step.sql
    with pytest.raises(PlanError, match="both"):
        compile_one({"rollup": {"group_by": ["g"], "keys": ["a"], "key_expr": "a"}})


def test_pivot_names_and_aliases() -> None:
    step = compile_one(
        {"pivot": {"id_vars": ["id"], "pivot_col": "k", "value_cols": ["v", "w"], "pivot_values": ["a", 1],
                   "value_aliases": {"1": "one"}, "aggs": {"w": "sum"}}}
    )  # fmt: skip
    assert step.params["values"] == (("a",), (1,))
    assert step.creates == ("id", "v_a", "w_a", "v_one", "w_one")
    templated = compile_one(
        {"pivot": {"id_vars": ["id"], "pivot_col": "k", "value_col": "v", "values": ["a"],
                   "name_template": "{value_col}__{agg}__{pivot_value}", "agg": "max"}}
    )  # fmt: skip
    assert templated.creates == ("id", "v__max__a")
    with pytest.raises(PlanError) as info:
        compile_one({"pivot": {"pivot_col": "k", "value_col": "v", "values": ["a", None]}})
    assert info.value.yaml_path == "transformations[0].pivot.values[1]"
    with pytest.raises(PlanError, match="name_template"):
        compile_one(
            {"pivot": {"pivot_col": "k", "value_col": "v", "values": ["a"], "name_template": "{nope}"}}
        )
    with pytest.raises(PlanError, match="more than once"):
        compile_one({"pivot": {"id_vars": ["a"], "pivot_col": "k", "value_col": "v", "values": ["a"]}})


def test_unpivot_alias_and_defaults() -> None:
    step = compile_one({"unpivot": {"id_vars": ["id"], "value_cols": ["a", "b"]}})
    assert step.params["value_vars"] == ("a", "b")
    assert (step.params["key_field"], step.params["value_field"], step.params["include_nulls"]) == (
        "key",
        "value",
        False,
    )
    assert step.creates == ("id", "key", "value")
    with pytest.raises(PlanError, match="both id and value"):
        compile_one({"unpivot": {"id_vars": ["a"], "value_vars": ["a"]}})


def test_unknown_op_unknown_key_and_missing_parameter() -> None:
    with pytest.raises(PlanError, match="unknown transformation op"):
        compile_one({"frobnicate": {}})
    with pytest.raises(PlanError) as info:
        compile_one({"trim": {"fields": ["a"], "sides": "left"}}, index=4)
    assert info.value.yaml_path == "transformations[4].trim"
    with pytest.raises(PlanError) as info:
        compile_one({"lookup": {"field": "f", "reference": "r", "on": "k", "key": "k"}})
    assert info.value.yaml_path == "transformations[0].lookup.value"
    with pytest.raises(PlanError, match="exactly one op"):
        compile_one({"trim": {"fields": ["a"]}, "lower": {"fields": ["a"]}})


def test_compiles_contract_models(shared_dir: Any) -> None:
    """The real contract models (pydantic, aliases resolved by the loader) compile like mappings."""
    from lakelogic.contract.loader import load_contract

    contract = load_contract(
        {
            "version": "1.0.0",
            "info": {"title": "T"},
            "model": {"fields": [{"name": "id", "type": "int"}]},
            "transformations": [
                {"rename": {"from": "a", "to": "b"}},
                {"deduplicate": {"by": ["id"]}},
                {"bucket": {"field": "f", "source": "s", "bins": [{"label": "lo", "lt": 5}]}},
                {"sql": "SELECT * FROM source"},
                {"phase": "post", "trim": {"fields": ["b"]}},
            ],
        }
    )
    steps = [compile_transform(i, t, f"transformations[{i}]") for i, t in enumerate(contract.transformations)]
    assert [s.op for s in steps] == ["rename", "deduplicate", "bucket", "sql", "trim"]
    assert steps[0].params == {"mappings": {"a": "b"}, "from": "a"}
    assert steps[1].params["on"] == ("id",)
    assert steps[2].params["bins"][0]["label"] == "lo"
    assert steps[4].phase == Phase.POST
    # The conformance contracts with ops all compile.
    for case in sorted((shared_dir / "olc/conformance/cases").iterdir()):
        loaded = load_contract(case / "contract.olc.yaml")
        for i, item in enumerate(loaded.transformations or []):
            step = compile_transform(i, item, f"transformations[{i}]")
            assert step.yaml_path == f"transformations[{i}]"


def test_an_explicit_null_op_parameter_means_its_default() -> None:
    """The JSON Schema allows `null` for optional op parameters (`"default": …` beside `"null"`)."""
    from lakelogic.contract.loader import load_contract
    from lakelogic.plan.compiler import compile_contract

    doc = {
        "version": "1.0.0",
        "info": {"title": "T"},
        "model": {"fields": [{"name": "id", "type": "integer"}]},
        "links": [{"name": "r", "path": "r.parquet"}],
        "transformations": [
            {"join": {"reference": "r", "on": "id", "key": "id", "fields": ["v"], "prefix": None}},
            {"deduplicate": {"on": ["id"], "sort_by": None}},
            {"rollup": {"group_by": ["id"], "rollup_keys_column": None}},
        ],
    }
    steps = {s.op: s.params for s in compile_contract(load_contract(doc)).steps if hasattr(s, "op")}
    assert steps["join"]["prefix"] == "" and steps["deduplicate"]["sort_by"] == ()
    assert steps["rollup"]["rollup_keys_column"] == "_lakelogic_rollup_keys"
