"""DAG building: resolution order, errors, cycles, dims-first, generations (no Spark)."""

from __future__ import annotations

import pytest

from lakelogic.driver.dag import build_dag
from lakelogic.errors import DagError, RegistryError
from tests.driver.helpers import node


def test_edges_from_contract_and_entry_and_generations() -> None:
    dag = build_dag(
        [
            node("bronze_orders", "bronze"),
            node("silver_orders", "silver", upstream=("bronze_orders",)),
            node("silver_customers", "silver", entry_upstream=("bronze.bronze_orders",)),
            node("silver_orders_enriched", "silver", upstream=("silver_orders", "silver_customers")),
        ]
    )
    assert dag.upstreams("silver.silver_orders") == ["bronze.bronze_orders"]
    assert dag.upstreams("silver.silver_customers") == ["bronze.bronze_orders"]
    assert dag.generations("silver") == [
        ["silver.silver_customers", "silver.silver_orders"],
        ["silver.silver_orders_enriched"],
    ]
    assert dag.layers() == ["bronze", "silver"]


def test_resolution_by_table_name_and_entity() -> None:
    bronze = node(
        "b1",
        "bronze",
        entity="orders",
        extra={"info": {"title": "B1", "table_name": "raw_orders", "target_layer": "bronze"}},
    )
    dag = build_dag(
        [bronze, node("s1", "silver", upstream=("raw_orders",)), node("s2", "silver", upstream=("orders",))]
    )
    assert dag.upstreams("silver.s1") == [bronze.id]
    assert dag.upstreams("silver.s2") == [bronze.id]


def test_unknown_upstreams_are_all_reported_with_yaml_path() -> None:
    with pytest.raises(DagError) as info:
        build_dag([node("s", "silver", upstream=("nope", "also_nope"))])
    text = str(info.value)
    assert "/contracts/s.yaml: upstream[0]: unknown upstream 'nope'" in text
    assert "upstream[1]: unknown upstream 'also_nope'" in text


def test_ambiguous_upstream_lists_candidates() -> None:
    with pytest.raises(DagError, match=r"ambiguous: bronze\.orders, silver\.orders"):
        build_dag(
            [node("orders", "bronze"), node("orders", "silver"), node("g", "gold", upstream=("orders",))]
        )


def test_node_id_resolves_the_ambiguity() -> None:
    dag = build_dag(
        [node("orders", "bronze"), node("orders", "silver"), node("g", "gold", upstream=("silver.orders",))]
    )
    assert dag.upstreams("gold.g") == ["silver.orders"]


def test_edge_to_a_later_layer_is_an_error() -> None:
    with pytest.raises(DagError, match="later layer"):
        build_dag([node("s", "silver", upstream=("g",)), node("g", "gold")])


def test_cycle_is_printed() -> None:
    with pytest.raises(DagError) as info:
        build_dag(
            [
                node("a", "silver", upstream=("c",)),
                node("b", "silver", upstream=("a",)),
                node("c", "silver", upstream=("b",)),
            ]
        )
    assert "dependency cycle:" in str(info.value)
    cycle = str(info.value).split("dependency cycle: ")[1].strip()
    parts = cycle.split(" -> ")
    assert parts[0] == parts[-1] and set(parts) == {"silver.a", "silver.b", "silver.c"}


def test_duplicate_node_id_names_both_files() -> None:
    with pytest.raises(DagError, match=r"duplicate node id silver\.x"):
        build_dag([node("x", "silver"), node("x", "silver")])


def test_an_entity_twice_in_one_layer_is_an_error_whoever_states_the_layer() -> None:
    """§3: entities are unique per layer, also when the layer comes from the contracts, not the entries."""
    with pytest.raises(DagError, match=r"entity 'x' appears twice in layer silver"):
        build_dag([node("a", "silver", entity="x"), node("b", "silver", entity="x")])
    build_dag([node("a", "bronze", entity="x"), node("b", "silver", entity="x")])  # other layers: fine


def test_gold_dims_before_facts_and_opt_out() -> None:
    nodes = [
        node("gold_dim_customer", "gold"),
        node("gold_fact_sales", "gold"),
        node("scd_thing", "gold", extra={"materialization": {"strategy": "scd2"}}),
        node("agg", "gold", kind="fact"),
        node("other", "gold"),
    ]
    dag = build_dag(nodes)
    assert dag.upstreams("gold.gold_fact_sales") == ["gold.gold_dim_customer", "gold.scd_thing"]
    assert dag.upstreams("gold.agg") == ["gold.gold_dim_customer", "gold.scd_thing"]
    assert dag.upstreams("gold.other") == []
    assert dag.generations("gold")[0] == ["gold.gold_dim_customer", "gold.other", "gold.scd_thing"]
    assert build_dag(nodes, dims_first=False).upstreams("gold.gold_fact_sales") == []


def test_layer_disagreement_is_an_error() -> None:
    from pathlib import Path

    from lakelogic.driver.nodes import build_node
    from lakelogic.driver.registry import RegistryEntry

    entry = RegistryEntry(
        contract_path=Path("/c.yaml"), registry_file=Path("/r.yaml"), index=3, entity="e", layer="gold"
    )
    with pytest.raises(RegistryError, match=r"entries\[3\] \(e\): layer 'gold' disagrees"):
        build_node(entry, {"info": {"title": "x", "target_layer": "silver"}})


def test_external_source_satisfies_upstream() -> None:
    dag = build_dag([node("b", "bronze", upstream=("erp_feed",))], external_sources=["erp_feed"])
    assert dag.upstreams("bronze.b") == []
    assert dag.external["bronze.b"] == {"erp_feed"}
