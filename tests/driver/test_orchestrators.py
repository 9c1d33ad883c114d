"""Orchestrator templates (DRIVER §18) rendered from a registry: valid code, the DAG's tasks and edges,
the driver command, and the exit-code mapping (no orchestrator installed: Airflow is stubbed)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakelogic.cli.main import app
from tests.driver.test_registry import contract, write

runner = CliRunner()


@pytest.fixture()
def mesh(tmp_path: Path) -> Path:
    """bronze a, b -> silver s (from both) -> gold g."""
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    contract(tmp_path, "m/bronze/a.yaml", "bronze_a", "bronze")
    contract(tmp_path, "m/bronze/b.yaml", "bronze_b", "bronze")
    contract(tmp_path, "m/silver/s.yaml", "silver_s", "silver", "upstream: [bronze_a, bronze_b]\n")
    contract(tmp_path, "m/gold/g.yaml", "gold_fact_g", "gold", "upstream: [silver_s]\n")
    write(tmp_path / "m" / "_registry.yaml", """\
    version: 1
    entries:
      - {entity: a, contract_path: bronze/a.yaml}
      - {entity: b, contract_path: bronze/b.yaml}
      - {entity: s, contract_path: silver/s.yaml}
      - {entity: g, contract_path: gold/g.yaml}
    """)  # fmt: skip
    return tmp_path


def template(mesh: Path, fmt: str, *extra: str) -> str:
    result = runner.invoke(
        app, ["dag", "--registry", str(mesh / "m"), "--format", fmt, "--env", "prod", *extra]
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("fmt", ["airflow", "dagster", "prefect"])
def test_python_templates_compile_and_run_the_driver_per_node(mesh: Path, fmt: str) -> None:
    text = template(mesh, fmt)
    tree = ast.parse(text)  # valid Python
    assert "--retries', '0'" in text and "'--env', 'prod'" in text and "--pipeline-run-id" in text
    for node, entity in (("bronze", "a"), ("bronze", "b"), ("silver", "s"), ("gold", "g")):
        assert f"['--layers', '{node}', '--entities', '{entity}']" in text
    assert compile(tree, f"{fmt}.py", "exec")


def _stub_airflow(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Just enough of Airflow to build the generated DAG: operators, their edges, the task groups."""
    built: dict[str, Any] = {"tasks": {}, "edges": set(), "groups": []}

    class Operator:
        def __init__(self, task_id: str, python_callable: Any, op_kwargs: dict[str, Any]) -> None:
            self.task_id, self.call, self.kwargs = task_id, python_callable, op_kwargs
            built["tasks"][task_id] = self

        def __rshift__(self, other: Operator) -> Operator:
            built["edges"].add((self.task_id, other.task_id))
            return other

    class Context:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if "group_id" in kwargs:
                built["groups"].append(kwargs["group_id"])

        def __enter__(self) -> Context:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    class Fail(Exception):
        pass

    class Skip(Exception):
        pass

    modules = {
        "pendulum": types.SimpleNamespace(datetime=lambda *a, **k: None),
        "airflow": types.SimpleNamespace(DAG=Context),
        "airflow.exceptions": types.SimpleNamespace(AirflowFailException=Fail, AirflowSkipException=Skip),
        "airflow.operators": types.SimpleNamespace(),
        "airflow.operators.python": types.SimpleNamespace(PythonOperator=Operator),
        "airflow.utils": types.SimpleNamespace(),
        "airflow.utils.task_group": types.SimpleNamespace(TaskGroup=Context),
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    built["Fail"], built["Skip"] = Fail, Skip
    return built


def test_the_airflow_dag_has_the_registrys_tasks_edges_and_exit_codes(
    mesh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _stub_airflow(monkeypatch)
    namespace: dict[str, Any] = {}
    exec(compile(template(mesh, "airflow"), "dag.py", "exec"), namespace)  # the generated file itself
    assert set(built["tasks"]) == {
        "bronze_bronze_a",
        "bronze_bronze_b",
        "silver_silver_s",
        "gold_gold_fact_g",
    }
    assert built["edges"] == {
        ("bronze_bronze_a", "silver_silver_s"),
        ("bronze_bronze_b", "silver_silver_s"),
        ("silver_silver_s", "gold_gold_fact_g"),
    }
    assert built["groups"] == ["bronze", "silver", "gold"]

    calls: list[list[str]] = []
    code = {"value": 0}

    def fake_run(argv: list[str], check: bool) -> Any:
        calls.append(argv)
        return types.SimpleNamespace(returncode=code["value"])

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.chdir(tmp_path)
    silver = built["tasks"]["silver_silver_s"]
    silver.call(**silver.kwargs, run_id="manual__2026-01-01T00:00:00+00:00")
    argv = calls[-1]
    assert argv[:1] == ["lakelogic-driver"] and argv[argv.index("--pipeline-run-id") + 1].startswith(
        "manual__"
    )
    state = Path(argv[argv.index("--state-path") + 1])
    assert state.name == "silver_silver_s.json" and state.parent.is_dir()
    for exit_code, raised in ((2, built["Fail"]), (3, built["Skip"]), (1, RuntimeError)):
        code["value"] = exit_code
        with pytest.raises(raised):
            silver.call(**silver.kwargs, run_id="r1")


def test_layer_tasks_run_one_after_the_other(mesh: Path) -> None:
    job = json.loads(template(mesh, "databricks", "--per", "layer"))
    assert [(t["task_key"], [d["task_key"] for d in t["depends_on"]]) for t in job["tasks"]] == [
        ("bronze", []),
        ("silver", ["bronze"]),
        ("gold", ["silver"]),
    ]


def test_the_databricks_job_runs_the_wheels_driver_per_node(mesh: Path) -> None:
    job = json.loads(template(mesh, "databricks"))
    by_key = {t["task_key"]: t for t in job["tasks"]}
    assert [d["task_key"] for d in by_key["silver_silver_s"]["depends_on"]] == [
        "bronze_bronze_a",
        "bronze_bronze_b",
    ]
    task = by_key["gold_gold_fact_g"]["python_wheel_task"]
    assert task["entry_point"] == "lakelogic-driver" and task["package_name"] == "lakelogic"
    params = task["parameters"]
    assert params[params.index("--pipeline-run-id") + 1] == "{{job.run_id}}"
    assert params[params.index("--env") + 1] == "{{job.parameters.env}}" and params.count("--env") == 1
    assert {"name": "env", "default": "prod"} in job["parameters"]


def test_an_unknown_per_is_a_configuration_error(mesh: Path) -> None:
    result = runner.invoke(app, ["dag", "--registry", str(mesh / "m"), "--format", "airflow", "--per", "x"])
    assert result.exit_code == 2


def test_the_dagster_assets_attach_their_own_run_rows_and_map_exit_codes(
    mesh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assets: dict[str, Any] = {}

    class Failure(Exception):
        def __init__(self, description: str, allow_retries: bool = True) -> None:
            super().__init__(description)
            self.allow_retries = allow_retries

    def asset(**spec: Any) -> Any:
        def register(fn: Any) -> Any:
            assets[spec["name"]] = (spec, fn)
            return fn

        return register

    dagster = types.SimpleNamespace(
        asset=asset,
        Failure=Failure,
        RetryPolicy=lambda **k: k,
        MaterializeResult=lambda metadata: metadata,
        MetadataValue=types.SimpleNamespace(json=lambda rows: rows),
        Definitions=lambda assets: assets,
        AssetExecutionContext=object,
    )
    monkeypatch.setitem(sys.modules, "dagster", dagster)
    exec(compile(template(mesh, "dagster"), "assets.py", "exec"), {})  # the generated file itself
    assert assets["silver_silver_s"][0]["deps"] == ["bronze_bronze_a", "bronze_bronze_b"]
    assert assets["silver_silver_s"][0]["group_name"] == "silver"

    rows = [
        {"contract": "silver_s", "layer": "silver", "entity": "s", "status": "succeeded"},
        {"contract": "bronze_a", "layer": "bronze", "entity": "a", "status": "succeeded"},
    ]
    code = {"value": 0}

    def fake_run(argv: list[str], check: bool, **kwargs: Any) -> Any:
        if argv[0] == "lakelogic":
            return types.SimpleNamespace(returncode=0, stdout=json.dumps(rows))
        return types.SimpleNamespace(returncode=code["value"])

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.chdir(tmp_path)
    context = types.SimpleNamespace(run_id="dagster-run-1")
    metadata = assets["silver_silver_s"][1](context)
    assert [r["contract"] for r in metadata["runs"]] == ["silver_s"]  # its own rows only
    code["value"] = 2
    with pytest.raises(Failure) as failed:
        assets["silver_silver_s"][1](context)
    assert failed.value.allow_retries is False
    code["value"] = 1
    with pytest.raises(Failure) as retried:
        assets["silver_silver_s"][1](context)
    assert retried.value.allow_retries is True
