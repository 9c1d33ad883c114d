"""Live Prometheus exporter: names, labels and values (no HTTP needed)."""

from __future__ import annotations

from prometheus_client import generate_latest

from lakelogic.runlog.prometheus import PrometheusExporter


def test_exporter_values_and_labels() -> None:
    exporter = PrometheusExporter(tags={"team": "retail"})
    exporter.start("p1", "spark", "dev")
    exporter.observe({"node_id": "silver.orders", "layer": "silver", "status": "succeeded", "rows_source": 10,
                      "rows_good": 8, "rows_quarantined": 2, "rows_filtered": 0, "quarantine_ratio": 0.2,
                      "duration_seconds": 3.5})  # fmt: skip
    exporter.finish({"succeeded": 1, "failed": 0})
    text = generate_latest(exporter.registry).decode()
    labels = 'contract="silver.orders",layer="silver",team="retail"'
    assert f"lakelogic_contract_rows_good_total{{{labels}}} 8.0" in text
    runs = 'contract="silver.orders",layer="silver",status="succeeded",team="retail"'
    assert f"lakelogic_contract_runs_total{{{runs}}} 1.0" in text
    assert f"lakelogic_contract_quarantine_ratio{{{labels}}} 0.2" in text
    assert (
        'lakelogic_pipeline_info{engine="spark",environment="dev",pipeline_run_id="p1",team="retail"} 1.0'
        in text
    )
    assert 'lakelogic_pipeline_contracts{status="succeeded",team="retail"} 1.0' in text
    assert "run_id" not in text.replace("pipeline_run_id", "")


def test_a_new_pipeline_run_replaces_the_info_series() -> None:
    """A backfill starts one pipeline run per window: only the current one is reported as 1."""
    exporter = PrometheusExporter()
    exporter.start("p1", "spark", "dev")
    exporter.start("p2", "spark", "dev")
    text = generate_latest(exporter.registry).decode()
    assert 'pipeline_run_id="p2"' in text and 'pipeline_run_id="p1"' not in text
