"""Run reports for nodes that did not run (skips, timeouts) and run-log rows for every outcome."""

from __future__ import annotations

import uuid
from datetime import datetime

from lakelogic.driver.execution import DriverOptions
from lakelogic.driver.gates import Outcome
from lakelogic.driver.nodes import Node
from lakelogic.driver.windows import Window
from lakelogic.report import RunReport
from lakelogic.runlog import RunLogStore, record_run
from lakelogic.types import RunStatus


def synthetic_report(
    node: Node,
    window: Window,
    status: RunStatus,
    started: datetime,
    pipeline_run_id: str,
    options: DriverOptions,
) -> RunReport:
    """A finished report for a node the engine never reported on (skipped, timed out, crashed runner)."""
    info = node.data.get("info") or {}
    report = RunReport(
        run_id=str(uuid.uuid4()),
        pipeline_run_id=pipeline_run_id,
        contract=node.name,
        title=info.get("title"),
        table_name=node.table_name,
        contract_version=str(info.get("version") or "1.0.0"),  # SEMANTICS §2's default, as runs report it
        layer=node.layer,
        domain=node.domain,
        system=node.system,
        # the hierarchy's bound environment, as the engine reports it for the nodes that ran
        environment=getattr(node.effective, "environment", None) or options.environment,
        engine=options.engine,
        status=status,
        started_at=started,
    )
    report.window.label = window.label
    report.window.start = window.start
    report.window.end = window.end
    report.window.reason = window.reason
    report.finish()
    return report


def record_outcome(
    store: RunLogStore,
    node: Node,
    window: Window,
    outcome: Outcome,
    pipeline_run_id: str,
    options: DriverOptions,
) -> None:
    """The run-log row of one outcome, with the driver context the report itself does not carry."""
    report = outcome.report
    if report is None:
        return
    if report.pipeline_run_id is None:
        report.pipeline_run_id = pipeline_run_id
    record_run(
        report,
        entity=node.entity,
        skip_reason=outcome.skip_reason,
        upstream_cause=outcome.upstream_cause,
        root_cause=outcome.root_cause,
        store=store,
        contract_file=str(node.contract_file),
        backfill_id=options.backfill_id,
        run_mode=window.run_mode,
        gated=outcome.gated,
        # a skipped row carries the root cause's gate detail (DRIVER §6 "detail")
        gate_reason=outcome.gate_reason or (outcome.skip_detail if outcome.skip_reason else None),
        upstream_warnings=outcome.warnings or None,
        attempts=outcome.attempts,
        overrides=list(options.overrides) or None,
        policy_packs=getattr(node.effective, "policy_packs", None) or None,
        window_reason=window.reason,
    )
