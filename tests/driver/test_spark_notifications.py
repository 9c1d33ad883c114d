"""§16 under the driver's Spark runner: one notification per contract run, never one per attempt."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from lakelogic.contract.hierarchy import resolve_effective
from lakelogic.driver.execution import RunRequest
from lakelogic.driver.nodes import build_node
from lakelogic.driver.registry import RegistryEntry
from lakelogic.driver.spark_runner import spark_contract_runner
from lakelogic.driver.windows import Window
from lakelogic.types import RunStatus
from tests.notify.servers import http_receiver

pytestmark = pytest.mark.spark


def _node(tmp_path: Path, url: str) -> Any:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    (tmp_path / "shop" / "crm" / "silver").mkdir(parents=True)
    (tmp_path / "shop" / "_domain.yaml").write_text(
        "domain: shop\nnotifications:\n"
        f"  - {{type: webhook, url: '{url}', on_events: [success, quarantine, failure]}}\n"
    )
    (tmp_path / "shop" / "crm" / "_system.yaml").write_text("system: crm\ndomain: shop\n")
    data = tmp_path / "orders.jsonl"
    data.write_text('{"id": 1}\n{"id": -1}\n')
    contract = tmp_path / "shop" / "crm" / "silver" / "orders.yaml"
    contract.write_text(
        dedent(
            f"""\
            version: 1.0.0
            info: {{title: Orders, table_name: orders_{uuid.uuid4().hex[:6]}, target_layer: silver}}
            source: {{type: landing, path: {data}, format: json}}
            model: {{fields: [{{name: id, type: integer}}]}}
            quality: {{row_rules: [{{name: positive, sql: "id > 0"}}]}}
            """
        )
    )
    effective = resolve_effective(contract)
    entry = RegistryEntry(contract_path=contract, registry_file=contract, index=0)
    return build_node(entry, effective.data, effective=effective)


def test_a_driver_run_notifies_once_per_contract_run(spark: Any, tmp_path: Path) -> None:
    with http_receiver() as (url, received):
        node = _node(tmp_path, url)
        runner, _cancel = spark_contract_runner(spark)
        window = Window("none", None, None)
        report = runner(RunRequest(node, "run-1", "pipe-1", window, datetime.now(UTC)))
        assert report.error is None, report.error
        assert sorted(body["event"] for _, _, body in received.posts) == ["quarantine", "success"]
        assert all(body["pipeline_run_id"] == "pipe-1" for _, _, body in received.posts)
        received.posts.clear()
        runner.on_final_failure(node, report.model_copy(update={"status": RunStatus.FAILED}))  # type: ignore[attr-defined]
    assert [body["event"] for _, _, body in received.posts] == ["failure", "quarantine"]
