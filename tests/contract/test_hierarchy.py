"""Domain → system → contract inheritance, locked paths, environments and placeholders (DRIVER §2)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from lakelogic.contract.hierarchy import find_hierarchy, resolve_effective
from lakelogic.errors import ContractError

CONTRACT = """\
version: 1.0.0
info: {{title: Orders, table_name: orders, target_layer: silver}}
model:
  fields:
    - {{name: id, type: string}}
{extra}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text), encoding="utf-8")
    return path


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    write(
        tmp_path / "retail" / "_domain.yaml",
        """\
        domain: retail
        x-common: &owner {team: retail-data}
        ownership: *owner
        materialization:
          _all: {format: iceberg, partition_by: [day]}
        metadata: {max_quarantine_ratio: 0.2, keep: domain}
        lineage: {enabled: true}
        notifications:
          - {type: email, to: data@example.com}
        locked: [lineage.enabled]
        """,
    )
    write(
        tmp_path / "retail" / "crm" / "_system.yaml",
        """\
        system: crm
        domain: retail
        environments:
          dev: {catalog: lake_dev, storage_root: /tmp/dev}
          prod: {catalog: lake_prod, storage_root: /tmp/prod}
        storage: {catalog: lake}
        materialization:
          silver: {strategy: merge}
        metadata: {max_quarantine_ratio: 0.1}
        notifications:
          - {type: email, to: data@example.com}
          - {type: slack, channel: "#crm"}
        """,
    )
    return tmp_path


def contract(project: Path, extra: str = "", name: str = "orders.yaml") -> Path:
    return write(project / "retail" / "crm" / "silver" / name, CONTRACT.format(extra=dedent(extra)))


def test_discovery_finds_system_and_domain(project: Path) -> None:
    path = contract(project)
    domain, system = find_hierarchy(path)
    assert domain == project / "retail" / "_domain.yaml"
    assert system == project / "retail" / "crm" / "_system.yaml"


def test_discovery_stops_at_project_root(tmp_path: Path) -> None:
    write(tmp_path / "_domain.yaml", "domain: outside\n")
    inner = tmp_path / "proj"
    write(inner / "pyproject.toml", "")
    path = write(inner / "c.yaml", CONTRACT.format(extra=""))
    assert find_hierarchy(path) == (None, None)


def test_merge_order_and_origins(project: Path) -> None:
    path = contract(
        project, "primary_key: [id]\nmaterialization: {partition_by: [month]}\nmetadata: {keep: null}\n"
    )
    eff = resolve_effective(path, env="dev")
    mat = eff.data["materialization"]
    # the system's dev catalog names the default target and quarantine table (storage defaults)
    assert mat == {
        "format": "iceberg",
        "partition_by": ["month"],
        "strategy": "merge",
        "target_path": "lake_dev.silver.orders",
    }
    assert eff.data["quarantine"]["table"] == "lake_dev.quarantine.orders"
    assert eff.origins["materialization.target_path"].source.startswith("system:")
    assert eff.contract.materialization is not None and eff.contract.materialization.strategy == "merge"
    assert eff.origins["materialization.format"].how == "inherited"
    assert eff.origins["materialization.format"].source.startswith("domain:")
    assert eff.origins["materialization.strategy"].source.startswith("system:")
    assert eff.origins["materialization.partition_by"].how == "overridden"
    assert eff.origins["materialization"].how == "deep-merged"
    # system beats domain per leaf; explicit null clears the inherited value
    assert eff.data["metadata"] == {"max_quarantine_ratio": 0.1}
    assert eff.data["info"]["domain"] == "retail" and eff.data["info"]["system"] == "crm"
    assert eff.data["info"]["owner"] == "retail-data"  # x- anchor holder resolved, key ignored
    assert eff.origins["lineage.enabled"].how == "locked"


def test_no_materialization_block_is_not_invented(project: Path) -> None:
    eff = resolve_effective(contract(project), env="dev")
    assert "materialization" not in eff.data
    assert eff.contract.materialization is None


def test_notifications_concatenate_and_dedupe(project: Path) -> None:
    path = contract(project, "quarantine:\n  notifications:\n    - {type: slack, channel: '#mine'}\n")
    eff = resolve_effective(path, env="dev")
    dests = [(n["type"], n.get("to") or n.get("channel")) for n in eff.data["quarantine"]["notifications"]]
    assert dests == [("email", "data@example.com"), ("slack", "#crm"), ("slack", "#mine")]
    assert eff.origins["quarantine.notifications"].how == "concatenated"


def test_a_files_own_quarantine_channels_join_its_top_level_channels(project: Path) -> None:
    """DRIVER §2.3/§2.4: a hierarchy file's ``quarantine.notifications`` and its top-level
    ``notifications`` are both channels of the contracts below; neither replaces the other."""
    system = project / "retail" / "crm" / "_system.yaml"
    system.write_text(
        system.read_text() + "quarantine:\n  notifications:\n    - {type: webhook, url: 'https://x.test/q'}\n"
    )
    eff = resolve_effective(contract(project), env="dev")
    dests = [n.get("to") or n.get("channel") or n.get("url") for n in eff.data["quarantine"]["notifications"]]
    assert dests == ["data@example.com", "https://x.test/q", "#crm"]


def test_locked_path_changed_by_contract_is_an_error(project: Path) -> None:
    path = contract(project, "lineage: {enabled: false}\n")
    with pytest.raises(ContractError) as info:
        resolve_effective(path, env="dev")
    problem = info.value.problems[0]
    assert problem.file == str(path) and problem.path == "lineage.enabled"
    assert "locked" in problem.message


def test_locked_path_changed_by_set_is_an_error(project: Path) -> None:
    with pytest.raises(ContractError) as info:
        resolve_effective(contract(project), env="dev", overrides={"lineage.enabled": "false"})
    assert info.value.problems[0].file == "override:--set"


def test_set_typo_inside_a_list_item_is_reported_against_set(project: Path) -> None:
    """A ``--set`` into a list item (either index form) is the override's problem, not the file's."""
    path = contract(project, "transformations:\n  - derive: {field: x, sql: id}\n")
    overrides = {"transformations[0].derive.fieldd": "y", "transformations.0.phase": "later"}
    with pytest.raises(ContractError) as info:
        resolve_effective(path, env="dev", overrides=overrides)
    found = {(p.file, p.path, p.line) for p in info.value.problems}
    assert found == {
        ("override:--set", "transformations[0].derive.fieldd", 0),
        ("override:--set", "transformations[0].phase", 0),
    }


def test_duplicate_key_in_a_contract_is_reported_with_the_other_problems(project: Path) -> None:
    path = contract(project, "tier: silver\ntier: gold\nmetadata: [x]\n")
    with pytest.raises(ContractError) as info:
        resolve_effective(path, env="dev")
    assert [(p.path, p.line) for p in info.value.problems] == [("tier", 7), ("metadata", 8)]
    assert "duplicate key" in info.value.problems[0].message


def test_set_override_is_typed_and_tracked(project: Path) -> None:
    eff = resolve_effective(contract(project), env="dev", overrides={"metadata.max_quarantine_ratio": "0.3"})
    assert eff.data["metadata"]["max_quarantine_ratio"] == 0.3
    assert eff.origins["metadata.max_quarantine_ratio"].source == "override:--set"
    assert eff.origins["metadata.max_quarantine_ratio"].how == "overridden"


def test_contract_domain_must_match(project: Path) -> None:
    path = write(
        project / "retail" / "crm" / "silver" / "x.yaml",
        CONTRACT.format(extra="").replace("target_layer: silver", "target_layer: silver, domain: sales"),
    )
    with pytest.raises(ContractError, match=r"info\.domain: must equal the enclosing domain"):
        resolve_effective(path, env="dev")


def test_system_domain_must_match(project: Path) -> None:
    sysfile = project / "retail" / "crm" / "_system.yaml"
    sysfile.write_text(sysfile.read_text().replace("domain: retail", "domain: other"))
    with pytest.raises(ContractError) as info:
        resolve_effective(contract(project), env="dev")
    assert info.value.problems[0].file == str(sysfile)


def test_placeholders_environment_and_escapes(project: Path) -> None:
    extra = """\
    source: {type: iceberg, path: "{catalog}.{layer}.{table}"}
    quality:
      row_rules:
        - {name: id_format, sql: "id RLIKE '^C[0-9]{5}$' AND '{{literal}}' <> ''"}
    """
    eff = resolve_effective(contract(project, extra), env="prod")
    assert eff.data["source"]["path"] == "lake_prod.silver.orders"
    assert eff.data["quality"]["row_rules"][0]["sql"] == "id RLIKE '^C[0-9]{5}$' AND '{literal}' <> ''"
    assert eff.environment == "prod"


def test_unknown_placeholder_in_location_key_is_an_error(project: Path) -> None:
    path = contract(project, 'source: {type: iceberg, path: "{nope}.x"}\n')
    with pytest.raises(ContractError, match=r"source\.path: unknown placeholder \{nope\}"):
        resolve_effective(path, env="dev")


def test_unknown_environment_is_an_error(project: Path) -> None:
    with pytest.raises(ContractError, match="environment 'qa' is not defined"):
        resolve_effective(contract(project), env="qa")


def test_unknown_hierarchy_key_is_an_error(project: Path) -> None:
    dom = project / "retail" / "_domain.yaml"
    dom.write_text(dom.read_text() + "bogus: 1\n")
    with pytest.raises(ContractError, match="bogus: unknown key"):
        resolve_effective(contract(project), env="dev")


def test_bad_inherited_value_names_the_hierarchy_file(project: Path) -> None:
    dom = project / "retail" / "_domain.yaml"
    dom.write_text(dom.read_text().replace("lineage: {enabled: true}", "lineage: {enabled: true, bogus: 1}"))
    with pytest.raises(ContractError) as info:
        resolve_effective(contract(project), env="dev")
    assert any(p.file == str(dom) and p.path.startswith("lineage") for p in info.value.problems)


PACK = """\
name: silver_baseline
defaults: {metadata: {owner_team: platform, max_quarantine_ratio: 0.4}}
silver_defaults: {schema_policy: {unknown_fields: quarantine}}
enforce: {quarantine: {include_error_reason: true}}
quality:
  dataset_rules: [{row_count_between: {min: 1}}]
  row_rules:
    - {name: id_present, sql: "id IS NOT NULL"}
    - {name: mine, sql: "1 = 0"}
silver_transformations: [{drop: {columns: [_rescued_data]}}]
"""


def test_policy_pack_defaults_enforce_rules_and_steps(project: Path) -> None:
    write(project / "policy_packs" / "silver_baseline.yaml", PACK)
    extra = """\
    metadata: {policy_pack: silver_baseline}
    quarantine: {include_error_reason: false}
    quality:
      row_rules:
        - {name: mine, sql: "id <> ''"}
    transformations:
      - trim: {fields: [id]}
    """
    eff = resolve_effective(contract(project, extra), env="dev", policy_pack_dir=project / "policy_packs")
    assert eff.policy_packs == ["silver_baseline"]
    assert eff.data["metadata"]["owner_team"] == "platform"  # pack default fills a gap
    assert eff.data["metadata"]["max_quarantine_ratio"] == 0.1  # the system wins over pack defaults
    assert eff.data["schema_policy"]["unknown_fields"] == "quarantine"
    assert eff.data["quarantine"]["include_error_reason"] is True  # enforced over the contract
    assert eff.origins["quarantine.include_error_reason"].how == "enforced"
    assert [r["name"] for r in eff.data["quality"]["row_rules"]] == ["mine", "id_present"]
    assert eff.data["quality"]["row_rules"][0]["sql"] == "id <> ''"  # the contract's rule wins by name
    assert len(eff.data["quality"]["dataset_rules"]) == 1
    assert [next(iter(t)) for t in eff.data["transformations"]] == ["drop", "trim"]  # prepended
    assert eff.origins["quality.row_rules"].how == "appended"


def test_set_on_enforced_path_is_an_error(project: Path) -> None:
    write(project / "policy_packs" / "silver_baseline.yaml", PACK)
    with pytest.raises(ContractError, match="enforced by policy pack silver_baseline"):
        resolve_effective(
            contract(project, "metadata: {policy_pack: silver_baseline}\n"),
            env="dev",
            policy_pack_dir=project / "policy_packs",
            overrides={"quarantine.include_error_reason": "false"},
        )


def test_missing_and_invalid_packs(project: Path) -> None:
    with pytest.raises(ContractError, match="policy pack 'nope' not found"):
        resolve_effective(contract(project), env="dev", default_policy_pack=("nope", project))
    write(project / "policy_packs" / "bad.yaml", "name: bad\nenforse: {}\n")
    with pytest.raises(ContractError, match="enforse: unknown policy pack key"):
        resolve_effective(
            contract(project), env="dev", default_policy_pack=("policy_packs/bad.yaml", project)
        )


def test_layer_namespace_and_path_storage(project: Path) -> None:
    dom = project / "retail" / "_domain.yaml"
    dom.write_text(dom.read_text() + "silver_layer: slv\n")
    path = contract(project, "primary_key: [id]\nmaterialization: {format: iceberg}\n")
    eff = resolve_effective(path, env="prod")
    assert eff.data["materialization"]["target_path"] == "lake_prod.slv.orders"
    sysfile = project / "retail" / "crm" / "_system.yaml"
    sysfile.write_text(
        sysfile.read_text().replace("storage: {catalog: lake}", "storage: {storage_mode: path}")
    )
    eff = resolve_effective(path, env="prod")
    assert eff.data["materialization"]["target_path"] == "/tmp/prod/slv/orders"
    explicit = contract(project, "primary_key: [id]\nmaterialization: {location: /data/x}\n", name="e.yaml")
    assert "target_path" not in resolve_effective(explicit, env="prod").data["materialization"]


def test_environment_region_feeds_the_data_residency_check(tmp_path: Path) -> None:
    from lakelogic.plan.compliance import residency_warning

    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    write(
        tmp_path / "retail" / "_domain.yaml",
        "domain: retail\n",
    )
    write(
        tmp_path / "retail" / "crm" / "_system.yaml",
        """\
        system: crm
        domain: retail
        environments:
          dev: {catalog: lake_dev, region: us-east-1}
          prod: {catalog: lake_prod, region: eu-west-1}
        """,
    )
    path = write(
        tmp_path / "retail" / "crm" / "silver" / "orders.yaml",
        CONTRACT.format(extra="compliance: {data_residency: eu}"),
    )
    dev = resolve_effective(path, env="dev").contract
    assert dev.environment_region == "us-east-1"
    assert "outside the contract's data_residency (eu)" in (residency_warning(dev) or "")
    assert residency_warning(resolve_effective(path, env="prod").contract) is None


def _with_retention(project: Path, domain: str) -> None:
    domain_file = project / "retail" / "_domain.yaml"
    domain_file.write_text(domain_file.read_text() + f"retention: {domain}\n")


def test_layer_retention_fills_the_contract_period_and_lineage_column(project: Path) -> None:
    _with_retention(project, "{silver: P2Y, gold: P7Y}")
    effective = resolve_effective(contract(project))
    assert effective.contract.compliance["retention"] == {
        "period": "P2Y",
        "column": "_lakelogic_processed_at",
    }
    assert effective.origin("compliance.retention.period").source.startswith("domain:")  # type: ignore[union-attr]


def test_contract_retention_wins_over_the_domain(project: Path) -> None:
    _with_retention(project, "{silver: P90D}")
    assert resolve_effective(contract(project)).contract.compliance["retention"]["period"] == "P90D"
    own = contract(project, "compliance: {retention: {period: P30D, column: id}}\n", name="own.yaml")
    assert resolve_effective(own).contract.compliance["retention"] == {"period": "P30D", "column": "id"}
    keyed = contract(project, "compliance: {retention: {column: id}}\n", name="keyed.yaml")
    assert resolve_effective(keyed).contract.compliance["retention"] == {"period": "P90D", "column": "id"}


def test_layer_retention_without_a_column_asks_for_one(project: Path) -> None:
    from lakelogic.errors import PlanError
    from lakelogic.plan.retention import retention_policy

    _with_retention(project, "{silver: P2Y}")
    path = contract(project, "lineage: {enabled: false}\n")
    with pytest.raises(ContractError):  # lineage.enabled is locked by the domain fixture
        resolve_effective(path)
    domain_file = project / "retail" / "_domain.yaml"
    domain_file.write_text(domain_file.read_text().replace("locked: [lineage.enabled]\n", ""))
    effective = resolve_effective(path)
    assert effective.contract.compliance["retention"] == {"period": "P2Y"}
    with pytest.raises(PlanError, match="needs the column") as caught:
        retention_policy(effective.contract)
    assert "lineage" in str(caught.value)
    bronze = contract(project, name="bronze.yaml")
    bronze.write_text(bronze.read_text().replace("target_layer: silver", "target_layer: bronze"))
    assert "retention" not in resolve_effective(bronze).contract.compliance  # no bronze period


def test_system_storage_deep_merges_over_the_domains(project: Path) -> None:
    """§2.4: the system's `namespaces.gold` must not drop the domain's silver namespace."""
    dom = project / "retail" / "_domain.yaml"
    dom.write_text(dom.read_text() + "storage: {namespaces: {bronze: raw_ns, silver: clean_ns}}\n")
    sysfile = project / "retail" / "crm" / "_system.yaml"
    sysfile.write_text(
        sysfile.read_text().replace("storage: {catalog: lake}", "storage: {namespaces: {gold: mart_ns}}")
    )
    eff = resolve_effective(
        contract(project, "primary_key: [id]\nmaterialization: {format: iceberg}\n"), env="prod"
    )
    assert eff.data["materialization"]["target_path"] == "lake_prod.clean_ns.orders"
    assert eff.storage.namespaces == {"bronze": "raw_ns", "silver": "clean_ns", "gold": "mart_ns"}


def test_an_empty_mapping_keeps_what_is_inherited(project: Path) -> None:
    """Only an explicit null clears (§2.4): `metadata: {}` must not drop the inherited gate threshold."""
    eff = resolve_effective(contract(project, "metadata: {}\n"), env="dev")
    assert eff.data["metadata"]["max_quarantine_ratio"] == 0.1
    assert eff.data["metadata"]["keep"] == "domain"
    cleared = resolve_effective(contract(project, "metadata: {keep: null}\n", name="c.yaml"), env="dev")
    assert "keep" not in cleared.data["metadata"]


def test_set_of_a_parent_mapping_that_contradicts_an_enforced_leaf_is_an_error(project: Path) -> None:
    write(project / "policy_packs" / "silver_baseline.yaml", PACK)
    path = contract(project, "metadata: {policy_pack: silver_baseline}\n")
    packs = project / "policy_packs"
    with pytest.raises(ContractError, match="enforced by policy pack silver_baseline") as info:
        resolve_effective(
            path, env="dev", policy_pack_dir=packs, overrides={"quarantine": "{include_error_reason: false}"}
        )
    assert [(p.file, p.path) for p in info.value.problems] == [
        ("override:--set", "quarantine.include_error_reason")
    ]
    agreeing = resolve_effective(
        path, env="dev", policy_pack_dir=packs, overrides={"quarantine": "{include_error_reason: true}"}
    )
    assert agreeing.data["quarantine"]["include_error_reason"] is True


def test_a_pack_rule_named_like_a_field_rule_is_skipped(project: Path) -> None:
    """§10: a pack rule whose name the contract already uses is skipped, field-level rules included."""
    write(project / "policy_packs" / "silver_baseline.yaml", PACK)
    path = write(
        project / "retail" / "crm" / "silver" / "fields.yaml",
        """\
        version: 1.0.0
        info: {title: Orders, table_name: orders, target_layer: silver}
        model:
          fields:
            - {name: id, type: string, rules: [{name: id_present, sql: "id <> ''"}]}
        metadata: {policy_pack: silver_baseline}
        """,
    )
    eff = resolve_effective(path, env="dev", policy_pack_dir=project / "policy_packs")
    assert [r["name"] for r in eff.data["quality"]["row_rules"]] == ["mine"]


def test_an_unknown_key_in_a_packs_quality_block_is_an_error(project: Path) -> None:
    write(
        project / "policy_packs" / "typo.yaml",
        "name: typo\nquality:\n  row_rule: [{name: a, sql: '1 = 1'}]\n",
    )
    with pytest.raises(ContractError, match=r"quality\.row_rule: unknown policy pack quality key"):
        resolve_effective(
            contract(project), env="dev", default_policy_pack=("policy_packs/typo.yaml", project)
        )


@pytest.mark.parametrize("block", ["defaults", "silver_defaults"])
def test_an_unknown_key_in_a_packs_default_quality_block_is_an_error(project: Path, block: str) -> None:
    write(
        project / "policy_packs" / "typo.yaml",
        f"name: typo\n{block}:\n  quality:\n    dataset_rule: [{{unique: id}}]\n",
    )
    with pytest.raises(ContractError, match=rf"{block}\.quality\.dataset_rule: unknown policy pack quality"):
        resolve_effective(
            contract(project), env="dev", default_policy_pack=("policy_packs/typo.yaml", project)
        )


def test_system_run_log_becomes_the_contracts_run_log_setting(project: Path) -> None:
    sysfile = project / "retail" / "crm" / "_system.yaml"
    sysfile.write_text(
        sysfile.read_text().replace(
            "storage: {catalog: lake}",
            "storage: {catalog: lake, run_log: {backend: sqlite, database: logs/crm.sqlite, table: runs}}",
        )
    )
    meta = resolve_effective(contract(project)).contract.metadata
    assert (meta["run_log_backend"], meta["run_log_database"], meta["run_log_table"]) == (
        "sqlite",
        "logs/crm.sqlite",
        "runs",
    )
    # only its table named: the system's store, the contract's table
    own_table = contract(project, "metadata: {run_log_table: orders_runs}", name="t.yaml")
    meta = resolve_effective(own_table).contract.metadata
    assert (meta["run_log_database"], meta["run_log_table"]) == ("logs/crm.sqlite", "orders_runs")
    # its own database: another store, nothing of the system's mixed into it
    own_store = contract(project, "metadata: {run_log_database: mine.duckdb}", name="s.yaml")
    meta = resolve_effective(own_store).contract.metadata
    assert meta["run_log_database"] == "mine.duckdb"
    assert "run_log_backend" not in meta and "run_log_table" not in meta
