"""Reset (DRIVER §17): empty the targets and quarantine tables of selected contracts and write ``reset``
run-log rows, so the next ``last_success`` window of each is a full load.

Outputs are emptied through :func:`lakelogic.tables.reset.empty_outputs`, so every format works the same way
(catalog tables and Delta/Parquet paths): one stamped commit per table, schema and history kept.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from lakelogic.driver.nodes import Node
from lakelogic.driver.run_logs import NodeStores
from lakelogic.runlog import RunLogStore


@dataclass
class ResetResult:
    node_id: str
    emptied: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)


def _resolved(node: Node) -> Any:
    from lakelogic.tables.target import resolve_target

    contract = node.effective.contract if node.effective is not None else None
    if contract is None or contract.materialization is None:
        return None
    resolved = resolve_target(contract)
    if not contract.quarantine.enabled:  # §11: the contract writes no quarantine table to empty
        return replace(resolved, quarantine=None)
    return resolved


def _forget_manifest(spark: Any, node: Node) -> str | None:
    from lakelogic.engines.spark.manifest_store import forget_manifest

    contract = node.effective.contract if node.effective is not None else None
    if contract is None or contract.source is None:
        return None
    return forget_manifest(
        spark, contract.source, contract_name=node.id, contract_dir=node.contract_file.parent
    )


def reset_targets(node: Node) -> list[tuple[str, bool]]:
    """``(table name or path, is the target)`` pairs a reset empties: the target, then its quarantine."""
    resolved = _resolved(node)
    if resolved is None:
        return []
    sinks = [(resolved, True), (resolved.quarantine, False)]
    return [(sink.name, is_target) for sink, is_target in sinks if sink is not None]


def reset_nodes(
    spark: Any, nodes: list[Node], *, store: RunLogStore | None, pipeline_run_id: str | None = None
) -> list[ResetResult]:
    """Empty every target and quarantine table of ``nodes`` and record one ``reset`` row per node, in the
    store the node's contract names for itself, else in ``store`` (DRIVER §15.1)."""
    from lakelogic.tables.reset import empty_outputs

    stores = NodeStores(store)
    # every target and every run log resolved before anything is touched: a bad run-log setting must not
    # leave an emptied table without its reset row (the next last_success run would be incremental)
    plans = [(node, _resolved(node), stores.of(node)) for node in nodes]
    results = []
    for node, resolved, node_store in plans:
        result = ResetResult(node.id)
        tables = [] if resolved is None else empty_outputs(spark, resolved, contract=node.name)
        for name, existed in tables:
            (result.emptied if existed else result.absent).append(name)
        manifest = _forget_manifest(spark, node)
        if manifest is not None:  # a manifest-strategy source reads every file again
            result.emptied.append(f"manifest {manifest}")
        if node_store is not None:
            now = datetime.now(UTC)
            node_store.write(
                {
                    "run_id": str(uuid.uuid4()),
                    "pipeline_run_id": pipeline_run_id,
                    "contract": node.name,
                    "contract_file": str(node.contract_file),
                    "layer": node.layer,
                    "entity": node.entity,
                    "domain": node.domain,
                    "system": node.system,
                    "status": "reset",
                    "started_at": now,
                    "finished_at": now,
                    "duration_seconds": 0.0,
                    "target": tables[0][0] if tables else None,
                }
            )
        results.append(result)
    return results
