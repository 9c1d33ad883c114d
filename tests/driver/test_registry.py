"""Registry formats and strict validation (DRIVER §3), plus pipeline loading from files."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from lakelogic.driver.load import ConfigurationError, load_pipeline
from lakelogic.driver.registry import discover, load_registry_file
from lakelogic.errors import RegistryError

CONTRACT = """\
version: 1.0.0
info: {{title: {name}, table_name: {name}, target_layer: {layer}}}
dataset: {name}
model:
  fields:
    - {{name: id, type: string}}
{extra}"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text), encoding="utf-8")
    return path


def contract(root: Path, rel: str, name: str, layer: str, extra: str = "") -> Path:
    return write(root / rel, CONTRACT.format(name=name, layer=layer, extra=extra))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    contract(tmp_path, "sys/bronze/b.yaml", "bronze_orders", "bronze")
    contract(tmp_path, "sys/silver/s.yaml", "silver_orders", "silver", "upstream: [bronze_orders]\n")
    contract(tmp_path, "gold/g.yaml", "gold_fact_orders", "gold")
    return tmp_path


def test_contracts_map_expands_and_defaults_apply(project: Path) -> None:
    reg = write(
        project / "sys" / "_registry.yaml",
        """\
        version: 1
        defaults: {retries: 2, max_quarantine_ratio: 0.2}
        entries:
          - entity: orders
            contracts: {bronze: bronze/b.yaml, silver: silver/s.yaml}
            depends_on: [{name: x, critical: false}]
        """,
    )
    entries = load_registry_file(reg)
    assert [(e.entity, e.layer, e.contract_path.name) for e in entries] == [
        ("orders", "bronze", "b.yaml"),
        ("orders", "silver", "s.yaml"),
    ]
    assert entries[0].retries == 2 and entries[0].max_quarantine_ratio == 0.2
    assert entries[0].upstream[0].name == "x" and entries[0].upstream[0].critical is False


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{entity: e, contract_path: bronze/b.yaml, bogus: 1}", r"entries\[0\] \(e\): bogus: unknown key"),
        ("{entity: e}", r"entries\[0\] \(e\): exactly one of 'contract_path'"),
        (
            "{entity: e, contract_path: missing.yaml}",
            r"entries\[0\] \(e\): contract file not found: missing.yaml",
        ),
        ("{entity: e, contract_path: bronze/b.yaml, kind: cube}", r"kind: Value error, must be one of"),
        ("{entity: e, contract_path: bronze/b.yaml, layer: platinum}", r"layer: Value error, unknown layer"),
        ("{contract_path: bronze/b.yaml}", r"entries\[0\]: entity: required"),
    ],
)
def test_invalid_entries_name_file_entry_and_key(project: Path, entry: str, message: str) -> None:
    reg = write(project / "sys" / "_registry.yaml", f"version: 1\nentries:\n  - {entry}\n")
    with pytest.raises(RegistryError, match=message) as info:
        load_registry_file(reg)
    assert str(reg) in str(info.value)


def test_unknown_top_level_key(project: Path) -> None:
    reg = write(project / "sys" / "_registry.yaml", "version: 1\nentries: []\nentrys: []\n")
    with pytest.raises(RegistryError, match="unknown top-level key"):
        load_registry_file(reg)


def test_system_contracts_and_gold_default_layer(project: Path) -> None:
    write(
        project / "sys" / "_system.yaml",
        "system: sys\ncontracts:\n  - {path: bronze/b.yaml}\n  - {path: silver/s.yaml}\n",
    )
    assert [e.contract_path.name for e in discover(project / "sys")] == ["b.yaml", "s.yaml"]
    gold = discover(project / "gold", default_layer="gold")  # no registries: every contract file
    assert [(e.contract_path.name, e.layer) for e in gold] == [("g.yaml", "gold")]


def test_load_pipeline_builds_dag_and_selects(project: Path) -> None:
    write(
        project / "sys" / "_system.yaml",
        "system: sys\ncontracts:\n  - {path: bronze/b.yaml}\n  - {path: silver/s.yaml}\n",
    )
    pipeline = load_pipeline([project / "sys"], gold=[project / "gold"], layers=["silver", "gold"])
    assert set(pipeline.dag.nodes) == {
        "bronze.bronze_orders",
        "silver.silver_orders",
        "gold.gold_fact_orders",
    }
    assert pipeline.selected == {"silver.silver_orders", "gold.gold_fact_orders"}
    assert pipeline.dag.upstreams("silver.silver_orders") == ["bronze.bronze_orders"]
    node = pipeline.dag.nodes["silver.silver_orders"]
    assert node.effective is not None and node.effective.data["info"]["system"] == "sys"


def test_load_pipeline_reports_every_problem(project: Path) -> None:
    contract(project, "sys/silver/bad.yaml", "silver_bad", "silver", "upstream: [nowhere]\n")
    contract(
        project, "sys/silver/worse.yaml", "silver_worse", "silver", "materialization: {strategy: sideways}\n"
    )
    with pytest.raises(ConfigurationError) as info:
        load_pipeline([project / "sys"])
    text = str(info.value)
    assert "worse.yaml" in text and "sideways" in text
    # the DAG is only built when every contract loads, so fix one and see the next
    (project / "sys/silver/worse.yaml").unlink()
    with pytest.raises(ConfigurationError, match=r"bad\.yaml: upstream\[0\]: unknown upstream 'nowhere'"):
        load_pipeline([project / "sys"])


def test_set_applies_to_selected_contracts(project: Path) -> None:
    pipeline = load_pipeline(
        [project / "sys"], layers=["silver"], overrides={"metadata.max_quarantine_ratio": "0.3"}
    )
    assert pipeline.dag.nodes["silver.silver_orders"].metadata["max_quarantine_ratio"] == 0.3
    assert "max_quarantine_ratio" not in pipeline.dag.nodes["bronze.bronze_orders"].metadata


def test_set_typo_is_reported_against_the_override(project: Path) -> None:
    """The driver's --set applies to every selected contract; its typo is the option's, not a file's."""
    rules = "quality:\n  row_rules:\n    - {name: r, sql: id > 0}\n"
    contract(project, "sys/silver/s.yaml", "silver_orders", "silver", "upstream: [bronze_orders]\n" + rules)
    with pytest.raises(ConfigurationError) as info:
        load_pipeline(
            [project / "sys"], layers=["silver"], overrides={"quality.row_rules[0].severity": "critcal"}
        )
    assert "override:--set: quality.row_rules[0].severity: unknown severity (got 'critcal')" in str(
        info.value
    )


def test_unknown_entity_selection(project: Path) -> None:
    with pytest.raises(ConfigurationError, match="--entities: unknown"):
        load_pipeline([project / "sys"], entities=["nope"])


def test_registry_system_must_match_the_hierarchy(project: Path) -> None:
    write(project / "sys" / "_system.yaml", "system: sys\n")
    write(
        project / "sys" / "_registry.yaml",
        "version: 1\nsystem: other\nentries:\n  - {entity: o, contract_path: bronze/b.yaml}\n",
    )
    with pytest.raises(ConfigurationError, match=r"registry system 'other' differs .* info\.system 'sys'"):
        load_pipeline([project / "sys" / "_registry.yaml"])
