"""Reset (DRIVER §17): empty the targets and quarantine tables of selected contracts and write ``reset``
run-log rows, so the next ``last_success`` window of each is a full load.

Catalog tables are emptied with ``DELETE FROM`` (schema, properties and history stay); path targets are not
supported yet and are reported instead of being removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lakelogic.driver.nodes import Node
from lakelogic.errors import UnsupportedError
from lakelogic.runlog import RunLogStore


@dataclass
class ResetResult:
    node_id: str
    emptied: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)


def reset_targets(node: Node) -> list[tuple[str, bool]]:
    """``(qualified table name, is the target)`` pairs a reset empties: the target, then its quarantine."""
    from lakelogic.tables.target import resolve_target

    contract = node.effective.contract if node.effective is not None else None
    if contract is None or contract.materialization is None:
        return []
    resolved = resolve_target(contract)
    out: list[tuple[str, bool]] = []
    for sink, is_target in ((resolved, True), (resolved.quarantine, False)):
        if sink is None:
            continue
        if not sink.is_table:
            raise UnsupportedError(
                f"{node.id}: reset of path target {sink.name} is not supported",
                hint="empty the path yourself, then reset the run log with a catalog target",
            )
        out.append((sink.name, is_target))
    return out


def reset_nodes(
    spark: Any, nodes: list[Node], *, store: RunLogStore | None, pipeline_run_id: str | None = None
) -> list[ResetResult]:
    """Empty every target and quarantine table of ``nodes`` and record one ``reset`` row per node."""
    plans = [(node, reset_targets(node)) for node in nodes]  # fail before touching anything
    results = []
    for node, tables in plans:
        result = ResetResult(node.id)
        for name, _is_target in tables:
            if spark.catalog.tableExists(name):
                spark.sql(f"DELETE FROM {name}")
                result.emptied.append(name)
            else:
                result.absent.append(name)
        if store is not None:
            now = datetime.now(UTC)
            store.write(
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
