"""render_plan / plan_to_dict and the `lakelogic plan` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from lakelogic.cli.main import app
from lakelogic.plan.explain import is_secret_key, plan_to_dict, redact_uri, render_plan
from tests.plan.builders import compile_doc, contract_doc

DOC: dict[str, Any] = contract_doc(
    links=[{"name": "codes", "path": "ref/codes.parquet"}],
    transformations=[{"lower": {"fields": ["email"]}}],
    quality={
        "row_rules": [
            {"name": "amount_pos", "sql": "amount > 0"},
            {"referential_integrity": {"field": "status", "reference": "codes", "key": "code"}},
        ],
        "dataset_rules": [{"unique": "id"}],
    },
)


def test_render_plan_numbers_steps_and_shows_sql() -> None:
    text = render_plan(compile_doc(DOC))
    lines = text.splitlines()
    assert lines[0].startswith("Plan for contract 'orders'")
    numbered = [line.split(".", 1)[0].strip() for line in lines if line[:2].strip().isdigit()]
    assert numbered == [str(i) for i in range(1, len(numbered) + 1)]
    assert "CASE WHEN NOT coalesce(amount > 0, false) THEN 'Rule failed: amount_pos' END" in text
    assert "means: status IS NULL OR status IN (SELECT code FROM codes)" in text
    assert "observed = COUNT(id) - COUNT(DISTINCT id)" in text
    assert "Transform [pre] lower" in text and "lower(" in text
    assert "CAST(amount AS DOUBLE)" in text


def test_plan_to_dict_is_json_and_masks_secrets() -> None:
    doc = contract_doc(
        source={
            "type": "database",
            "path": "postgresql://app:s3cret@db:5432/shop",
            "query": "SELECT * FROM t",
            "options": {"engine_options": {"password": "env:PG_PASSWORD", "fetchsize": 10}},
        },
    )
    data = plan_to_dict(compile_doc(doc))
    text = json.dumps(data)
    assert "s3cret" not in text and "PG_PASSWORD" not in text
    read = data["steps"][0]
    assert read["kind"] == "ReadSource" and read["index"] == 1
    assert read["path"] == "postgresql://app:***@db:5432/shop"
    assert read["options"]["engine_options"] == {"password": "***", "fetchsize": 10}
    assert data["fields"][0] == {
        "name": "id",
        "type": "integer",
        "required": True,
        "generated": False,
        "pii": False,
        "phi": False,
        "masking": None,
        "masking_format": None,
        "pii_vault": None,
    }
    rules = next(s for s in data["steps"] if s["kind"] == "ValidateRows")["rules"]
    assert rules[0]["severity"] == "error" and rules[0]["phase"] == "pre"


def test_secret_keys() -> None:
    assert is_secret_key("api_key") and is_secret_key("client_secret") and is_secret_key("sas_token")
    assert (
        not is_secret_key("primary_key") and not is_secret_key("business_key") and not is_secret_key("path")
    )
    assert redact_uri("https://example.com/a@b") == "https://example.com/a@b"


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_cli_plan_text_and_json(tmp_path: Path) -> None:
    path = _write(tmp_path, DOC)
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    assert "Rule failed: amount_pos" in result.output
    result = runner.invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["contract"] == "orders"
    assert [s["kind"] for s in data["steps"]][:2] == ["LoadLink", "Transform"]


def test_cli_plan_set_override(tmp_path: Path) -> None:
    path = _write(tmp_path, DOC)
    result = CliRunner().invoke(app, ["plan", str(path), "--json", "--set", "quality.enforce_required=false"])
    assert result.exit_code == 0, result.output
    names = [
        r["name"]
        for s in json.loads(result.stdout)["steps"]
        if s["kind"] == "ValidateRows"
        for r in s["rules"]
    ]
    assert "id_required" not in names and "amount_pos" in names


def test_cli_plan_reports_contract_and_plan_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = _write(tmp_path, contract_doc(materialization={"stratgy": "merge"}))
    result = runner.invoke(app, ["plan", str(bad)])
    assert result.exit_code == 2, "a configuration error, as `lakelogic run` reports it"
    assert "stratgy" in result.output and "Traceback" not in result.output

    broken_sql = _write(tmp_path, contract_doc(quality={"row_rules": [{"name": "oops", "sql": "amount >"}]}))
    result = runner.invoke(app, ["plan", str(broken_sql)])
    assert result.exit_code == 2
    assert "quality.row_rules[0].sql" in result.output and "oops" in result.output

    result = runner.invoke(app, ["plan", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "not found" in result.output
