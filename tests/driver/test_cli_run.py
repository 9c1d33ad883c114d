"""The full ``lakelogic-driver`` flow with the Spark runner swapped for a fake one (no Spark)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from lakelogic.cli import driver_cmd
from lakelogic.runlog import DuckDBRunLogStore
from tests.driver.helpers import FakeRunner, dataset_rule_fails, ok, raises

runner = CliRunner()


def invoke(project: Path, fake: FakeRunner, monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple:
    monkeypatch.setattr(driver_cmd, "spark_runner", lambda engine, **_: (fake, lambda node_id: None))
    db = project / "rl.duckdb"
    args = ["--registry", str(project / "c"), "--run-log-database", str(db), "--no-live", *extra]
    return runner.invoke(driver_cmd.app, args), DuckDBRunLogStore(db)


def test_run_records_summary_metrics_and_state(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRunner({"silver_orders": dataset_rule_fails("unique_id")})
    metrics, summary, state = project / "m.json", project / "s.json", project / "state.json"
    result, store = invoke(
        project, fake, monkeypatch, "--pipeline-run-id", "p1", "--summary-table", "ops.pipeline_runs",
        "--metrics-path", str(metrics), "--summary-path", str(summary), "--state-path", str(state),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "layers: wall time" in result.output
    rows = {r["contract"]: r for r in store.query(pipeline_run_id="p1")}
    assert rows["bronze_orders"]["status"] == "succeeded" and rows["bronze_orders"]["entity"] == "orders"
    assert rows["silver_orders"]["gated"] is True
    con = duckdb.connect(str(project / "rl.duckdb"))
    assert con.execute("SELECT total_contracts, partial, gated FROM ops.pipeline_runs").fetchall() == [
        (2, 1, 1)
    ]
    con.close()
    assert json.loads(metrics.read_text())["pipeline"]["succeeded"] == 1
    assert json.loads(summary.read_text())["contracts"][1]["gate_reason"] == "dataset_rule:unique_id"
    assert json.loads(state.read_text())["nodes"]["silver.silver_orders"]["status"] == "partial"


def test_failure_exits_1_and_resume_reruns_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = project / "state.json"
    result, store = invoke(
        project,
        FakeRunner({"silver_orders": raises(RuntimeError("boom"))}),
        monkeypatch,
        "--state-path",
        str(state),
    )
    assert result.exit_code == 1
    fake = FakeRunner()
    result, store = invoke(project, fake, monkeypatch, "--state-path", str(state), "--resume")
    assert result.exit_code == 0, result.output
    assert fake.ran() == ["silver.silver_orders"]
    pipeline_runs = {r["pipeline_run_id"] for r in store.query()}
    assert len(pipeline_runs) == 1  # the resumed run kept its pipeline run id


def test_an_orchestrator_retry_with_its_run_id_and_state_file_resumes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§18: a task retried with the same `--pipeline-run-id` and `--state-path` resumes that run (only what
    did not succeed runs again), without `--resume`; another run id starts afresh."""
    flags = ["--pipeline-run-id", "airflow-42", "--state-path", str(project / "state.json")]
    result, _ = invoke(
        project, FakeRunner({"silver_orders": raises(RuntimeError("boom"))}), monkeypatch, *flags
    )
    assert result.exit_code == 1
    retry = FakeRunner()
    result, store = invoke(project, retry, monkeypatch, *flags)
    assert result.exit_code == 0, result.output
    assert retry.ran() == ["silver.silver_orders"]
    assert {r["pipeline_run_id"] for r in store.query()} == {"airflow-42"}
    again = FakeRunner()  # the same id once the run is complete: a new run, not an empty resume
    result, _ = invoke(project, again, monkeypatch, *flags)
    assert result.exit_code == 0 and again.ran() == ["bronze.bronze_orders", "silver.silver_orders"]
    other = FakeRunner()
    flags[1] = "airflow-43"
    result, _ = invoke(project, other, monkeypatch, *flags)
    assert result.exit_code == 0 and other.ran() == ["bronze.bronze_orders", "silver.silver_orders"]


def test_a_killed_backfill_resumes_unreached_nodes_in_the_stopped_window(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node the killed run never reached is not in the state file; on resume it runs in the stopped
    backfill window, not in a last_success window."""
    state = project / "state.json"
    flags = ["--backfill-start-date", "2026-01-01", "--backfill-end-date", "2026-01-03"]
    flags += ["--state-path", str(state)]
    failing = FakeRunner({"silver_orders": raises(RuntimeError("boom"))})
    result, _ = invoke(project, failing, monkeypatch, *flags)
    assert result.exit_code == 1
    saved = json.loads(state.read_text())
    del saved["nodes"]["silver.silver_orders"]  # as if the driver was killed before silver started
    state.write_text(json.dumps(saved))
    labels: list[tuple[str, str]] = []

    def record(request: Any) -> Any:
        labels.append((request.node.name, request.window.label))
        return ok(request)

    resumed = FakeRunner({"silver_orders": record, "bronze_orders": record})
    result, _ = invoke(project, resumed, monkeypatch, *flags, "--resume")
    assert result.exit_code == 0, result.output
    assert labels[0] == ("silver_orders", "backfill_20260101")
    assert labels[1:] == [
        ("bronze_orders", "backfill_20260102"),
        ("silver_orders", "backfill_20260102"),
        ("bronze_orders", "backfill_20260103"),
        ("silver_orders", "backfill_20260103"),
    ]


def test_prometheus_backend_serves_during_the_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ports: list[int] = []
    seen: list[str] = []
    original = driver_cmd.metrics_exporter

    def exporter(*args: Any, **kwargs: Any) -> Any:
        exp = original(*args, **kwargs)
        ports.append(exp._server.server_port)
        return exp

    def scrape(request: Any) -> Any:  # the exporter is up while contracts run
        seen.append(urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/metrics").read().decode())
        return ok(request)

    monkeypatch.setattr(driver_cmd, "metrics_exporter", exporter)
    flags = ["--metrics-backend", "prometheus", "--metrics-port", "0", "--metrics-host", "127.0.0.1"]
    result, _ = invoke(project, FakeRunner({"silver_orders": scrape}), monkeypatch, *flags)
    assert result.exit_code == 0, result.output
    bronze = 'contract="bronze.bronze_orders",layer="bronze",status="succeeded"'
    assert f"lakelogic_contract_runs_total{{{bronze}}} 1.0" in seen[0]


def test_backfill_runs_each_window_and_stops_at_a_failure(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def second_day_fails(request: Any) -> Any:
        calls.append(request.window.label)
        if request.window.label == "backfill_20260102":
            raise RuntimeError("bad day")
        return ok(request)

    fake = FakeRunner({"silver_orders": second_day_fails})
    flags = ["--backfill-start-date", "2026-01-01", "--backfill-end-date", "2026-01-03"]
    result, store = invoke(project, fake, monkeypatch, *flags)
    assert result.exit_code == 1
    assert calls == ["backfill_20260101", "backfill_20260102"]  # the third window never ran
    rows = store.query()
    assert len({r["pipeline_run_id"] for r in rows}) == 2 and len({r["backfill_id"] for r in rows}) == 1
    assert {r["run_mode"] for r in rows} == {"backfill"}


def test_a_bad_run_log_setting_of_a_contract_is_a_configuration_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§15.1: a contract's own run log is opened before anything runs, so a typo exits 2 with nothing run."""
    fake = FakeRunner()
    result, _ = invoke(project, fake, monkeypatch, "--set", "metadata.run_log_backend=duckbd")
    assert result.exit_code == 2, result.output
    assert "duckbd" in result.output and fake.calls == []


def test_an_unwritable_metrics_file_is_a_warning_not_a_failed_pipeline(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "taken").write_text("a file where a folder should be\n")
    fake = FakeRunner()
    result, _ = invoke(project, fake, monkeypatch, "--metrics-path", str(project / "taken" / "m.prom"))
    assert result.exit_code == 0, result.output
    assert "was not written" in result.output and len(fake.calls) == 2


def test_the_prometheus_file_is_written_whole(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = project / "metrics" / "lakelogic.prom"  # its folder is created
    result, _ = invoke(project, FakeRunner(), monkeypatch, "--metrics-path", str(target))
    assert result.exit_code == 0, result.output
    assert "lakelogic_pipeline_contracts" in target.read_text()
    assert [p.name for p in target.parent.iterdir()] == ["lakelogic.prom"]  # no temp file left


def test_the_summary_names_the_window_the_contracts_ran_in(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = project / "s.json"
    result, _ = invoke(project, FakeRunner(), monkeypatch, "--summary-path", str(summary))
    assert result.exit_code == 0, result.output
    assert json.loads(summary.read_text())["window_label"] == "full"  # the first run: no history yet
    result, _ = invoke(project, FakeRunner(), monkeypatch, "--summary-path", str(summary))
    assert json.loads(summary.read_text())["window_label"] == "incremental"


def _window_recorder(calls: list[tuple[str, str]]) -> Any:
    """``recorded(fails_on)``: a behaviour noting (contract, window) and failing in window ``fails_on``."""

    def recorded(fails_on: str | None) -> Any:
        def run(request: Any) -> Any:
            calls.append((request.node.name, request.window.label))
            if request.window.label == fails_on:
                raise RuntimeError("bad day")
            return ok(request)

        return run

    return recorded


def test_resuming_a_stopped_backfill_finishes_the_stopped_window_then_the_later_ones(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§8: "`--resume` continues from that window": the failed node of the stopped window runs again in
    its own pipeline run, then every later window of the backfill runs."""
    calls: list[tuple[str, str]] = []
    recorded = _window_recorder(calls)

    state = project / "state.json"
    flags = ["--backfill-start-date", "2026-01-01", "--backfill-end-date", "2026-01-04"]
    flags += ["--state-path", str(state)]
    first = FakeRunner({"silver_orders": recorded("backfill_20260102"), "bronze_orders": recorded(None)})
    result, _ = invoke(project, first, monkeypatch, *flags)
    assert result.exit_code == 1
    calls.clear()
    every = FakeRunner({"silver_orders": recorded(None), "bronze_orders": recorded(None)})
    result, store = invoke(project, every, monkeypatch, *flags, "--resume")
    assert result.exit_code == 0, result.output
    assert calls == [
        ("silver_orders", "backfill_20260102"),  # bronze of that window had succeeded
        ("bronze_orders", "backfill_20260103"),
        ("silver_orders", "backfill_20260103"),
        ("bronze_orders", "backfill_20260104"),
        ("silver_orders", "backfill_20260104"),
    ]
    done = {(r["contract"], r["window_label"]) for r in store.query() if r["status"] == "succeeded"}
    assert {label for _, label in done} == {f"backfill_2026010{d}" for d in range(1, 5)}
    assert len({r["backfill_id"] for r in store.query()}) == 1, "one backfill, resumed"


def test_an_orchestrator_retry_of_a_backfill_resumes_it_under_its_run_id(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§18 with a backfill: the orchestrator's run id names the whole invocation (windows `<id>-w<n>`,
    `backfill_id` the id), so the same command retried continues the stopped backfill."""
    calls: list[tuple[str, str]] = []
    recorded = _window_recorder(calls)

    flags = ["--backfill-start-date", "2026-01-01", "--backfill-end-date", "2026-01-03"]
    flags += ["--state-path", str(project / "state.json"), "--pipeline-run-id", "airflow-7"]
    first = FakeRunner({"silver_orders": recorded("backfill_20260102"), "bronze_orders": recorded(None)})
    result, store = invoke(project, first, monkeypatch, *flags)
    assert result.exit_code == 1
    assert {r["pipeline_run_id"] for r in store.query()} == {"airflow-7-w1", "airflow-7-w2"}
    calls.clear()
    every = FakeRunner({"silver_orders": recorded(None), "bronze_orders": recorded(None)})
    result, store = invoke(project, every, monkeypatch, *flags)  # the same command, retried
    assert result.exit_code == 0, result.output
    assert "resuming airflow-7 (pipeline run airflow-7-w2)" in result.output
    assert calls == [
        ("silver_orders", "backfill_20260102"),
        ("bronze_orders", "backfill_20260103"),
        ("silver_orders", "backfill_20260103"),
    ]
    assert {r["backfill_id"] for r in store.query()} == {"airflow-7"}
    assert {r["pipeline_run_id"] for r in store.query()} == {f"airflow-7-w{n}" for n in (1, 2, 3)}


def test_cache_references_reaches_the_runner_and_the_cache_is_closed_after_each_pipeline_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    closed: list[int] = []
    fake = FakeRunner()
    fake.close = lambda: closed.append(1)  # type: ignore[attr-defined]

    def spark_runner(engine: str, **kwargs: Any) -> tuple[Any, Any]:
        asked.append(kwargs)
        return fake, lambda node_id: None

    monkeypatch.setattr(driver_cmd, "spark_runner", spark_runner)
    args = ["--registry", str(project / "c"), "--run-log-database", str(project / "rl.duckdb"), "--no-live"]
    result = runner.invoke(driver_cmd.app, [*args, "--cache-references"])
    assert result.exit_code == 0, result.output
    assert [a["cache_references"] for a in asked] == [True] and closed == [1]


def test_statsd_host_that_does_not_resolve_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from lakelogic.cli import driver_support
    from lakelogic.runlog import statsd_exporter

    def unresolvable(host: str, port: int) -> None:
        raise OSError(f"[Errno -2] Name or service not known: {host}")

    monkeypatch.setattr(statsd_exporter, "StatsClient", unresolvable)
    with pytest.raises(typer.Exit) as caught:
        driver_support.metrics_exporter("statsd", "nowhere.invalid", None, "ll", {})
    assert caught.value.exit_code == 2


def test_ddl_only_prints_every_materialized_contract_in_dag_order(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DRIVER §17: --ddl-only --dry-run prints the CREATE statements and runs no contract."""
    silver = project / "c" / "silver" / "s.yaml"
    silver.write_text(
        silver.read_text()
        + "primary_key: [id]\nmaterialization: {strategy: merge, target_path: lake.silver.orders}\n"
    )
    fake = FakeRunner()
    result, store = invoke(project, fake, monkeypatch, "--ddl-only", "--dry-run")
    assert result.exit_code == 0, result.output
    assert fake.ran() == [] and not store.exists()
    output = result.output
    assert "-- bronze.bronze_orders: no materialization block, no table" in output
    assert "CREATE TABLE IF NOT EXISTS `lake`.`silver`.`orders` (\n  `id` STRING\n) USING iceberg" in output
    assert "CREATE TABLE IF NOT EXISTS `lake`.`quarantine`.`silver_orders`" in output
    assert output.index("bronze.bronze_orders") < output.index("silver.silver_orders")


def test_ddl_only_skips_disabled_entries(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    silver = project / "c" / "silver" / "s.yaml"
    silver.write_text(
        silver.read_text()
        + "primary_key: [id]\nmaterialization: {strategy: merge, target_path: lake.silver.orders}\n"
    )
    registry = project / "c" / "_registry.yaml"
    registry.write_text(
        registry.read_text().replace("  - entity: orders\n", "  - entity: orders\n    enabled: false\n")
    )
    result, _ = invoke(project, FakeRunner(), monkeypatch, "--ddl-only", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE" not in result.output


def test_rows_the_driver_writes_itself_carry_the_bound_environment(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§2.5: without --env the environment is LAKELOGIC_ENV, else dev, also on the failed and skipped rows
    the driver records itself and in the pipeline summary."""
    monkeypatch.setenv("LAKELOGIC_ENV", "staging")
    fake = FakeRunner({"bronze_orders": raises(RuntimeError("boom"))})
    result, store = invoke(project, fake, monkeypatch, "--summary-table", "ops.pipeline_runs")
    assert result.exit_code == 1
    assert {(r["contract"], r["status"], r["environment"]) for r in store.query()} == {
        ("bronze_orders", "failed", "staging"),
        ("silver_orders", "skipped", "staging"),
    }
    con = duckdb.connect(str(project / "rl.duckdb"))
    assert con.execute("SELECT environment FROM ops.pipeline_runs").fetchall() == [("staging",)]
    con.close()


def test_metrics_file_and_exporter_get_the_prefix_tags_and_pipeline_gauges(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§15.3: `--metrics-prefix` and `--metrics-tags` apply to the `.prom` file too, and a live exporter
    is given the pipeline counters once the pipeline run ends."""
    finished: list[dict[str, Any]] = []

    class Exporter:
        def start(self, *args: Any) -> None: ...
        def observe(self, contract: Any) -> None: ...
        def finish(self, counters: Any) -> None:
            finished.append(dict(counters))

        def shutdown(self) -> None: ...

    monkeypatch.setattr(driver_cmd, "metrics_exporter", lambda *args: Exporter())
    prom = project / "m.prom"
    flags = ["--metrics-path", str(prom), "--metrics-prefix", "acme", "--metrics-tags", "team=data"]
    flags += ["--metrics-linger-seconds", "0"]
    result, _ = invoke(project, FakeRunner(), monkeypatch, *flags)
    assert result.exit_code == 0, result.output
    text = prom.read_text()
    assert (
        'acme_contract_rows_read_total{contract="bronze.bronze_orders",layer="bronze",team="data"} 10.0'
        in text
    )
    assert 'acme_pipeline_contracts{status="succeeded",team="data"} 2.0' in text
    assert "lakelogic_" not in text
    assert [f["succeeded"] for f in finished] == [2]


@pytest.mark.parametrize(
    "flags",
    [["--metrics-tags", "novalue"], ["--summary-backend", "bogus"]],
    ids=["metrics-tags", "summary-backend"],
)
def test_bad_metrics_and_summary_options_stop_before_anything_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str]
) -> None:
    fake = FakeRunner()
    result, _ = invoke(project, fake, monkeypatch, *flags)
    assert result.exit_code == 2 and fake.ran() == []
