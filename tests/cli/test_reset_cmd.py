"""`lakelogic reset`: a declined confirmation says nothing was reset (no Spark is started)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from lakelogic.cli.main import app

CONTRACT = """\
version: 1.0.0
info: {title: Orders, table_name: orders, target_layer: silver}
model:
  fields:
    - {name: id, type: string}
materialization: {strategy: append, format: parquet, target_path: TARGET}
"""


def test_declining_the_confirmation_resets_nothing_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    path = tmp_path / "orders.yaml"
    path.write_text(CONTRACT.replace("TARGET", str(tmp_path / "out")))
    result = CliRunner().invoke(app, ["reset", str(path)], input="n\n")
    assert result.exit_code == 1
    assert "not reset: silver.orders is unchanged" in result.output


def test_the_prompt_names_no_quarantine_table_for_a_contract_without_one(tmp_path: Path) -> None:
    """§11 `quarantine.enabled: false`: no quarantine sink is written, so none is emptied."""
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    path = tmp_path / "orders.yaml"
    text = CONTRACT.replace("TARGET", str(tmp_path / "out"))
    path.write_text(text)
    asked = CliRunner().invoke(app, ["reset", str(path)], input="n\n").output
    assert "_quarantine" in asked
    path.write_text(text + "quarantine: {enabled: false}\n")
    asked = CliRunner().invoke(app, ["reset", str(path)], input="n\n").output
    assert str(tmp_path / "out") in asked and "_quarantine" not in asked
