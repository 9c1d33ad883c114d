"""`lakelogic validate` and `lakelogic schema` through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lakelogic.cli.main import app
from lakelogic.cli.validate_cmd import contract_files

from .conftest import MINIMAL

runner = CliRunner()


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "contracts"
    (root / "sub").mkdir(parents=True)
    (root / "good.yaml").write_text(MINIMAL)
    (root / "sub" / "also_good.yml").write_text(MINIMAL.replace("Orders", "Lines"))
    (root / "_domain.yaml").write_text("domain: retail\n")  # hierarchy file, not a contract
    (root / "notes.txt").write_text("ignored")
    return root


def test_contract_files_skips_underscore_and_other_suffixes(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert [p.name for p in contract_files([root])] == ["good.yaml", "also_good.yml"]


def test_validate_valid_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(_tree(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "2 valid, 0 invalid" in result.output
    assert "orders" in result.output and "lines" in result.output


def test_validate_reports_each_problem_and_fails(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    bad = root / "bad.yaml"
    bad.write_text(MINIMAL.replace("type: string", "type: strng") + "materialization:\n  stratgy: merge\n")
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    assert "2 valid, 1 invalid" in result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert f"{bad}:9:7: model.fields[1].type: unknown type (got 'strng'); did you mean 'string'?" in " ".join(
        lines
    )
    assert any(line.startswith(f"{bad}:11:3: materialization.stratgy: unknown key") for line in lines)


def test_validate_with_set_override(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(MINIMAL)
    result = runner.invoke(app, ["validate", str(path), "--set", "materialization.strategy=upsert"])
    assert result.exit_code == 1
    assert "materialization.strategy" in result.output


def test_validate_missing_path(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0


def test_schema_prints_and_writes(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    printed = json.loads(result.output)
    assert printed["required"] == ["version", "info", "model"]
    out = tmp_path / "olc.schema.json"
    result = runner.invoke(app, ["schema", "--output", str(out)])
    assert result.exit_code == 0
    assert json.loads(out.read_text()) == printed


def test_validate_uses_the_hierarchy_unless_standalone(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "sales").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")  # project root marker for hierarchy discovery
    (root / "sales" / "_domain.yaml").write_text("domain: sales\nlineage: {enabled: yes}\n")
    (root / "sales" / "orders.yaml").write_text(MINIMAL)
    merged = runner.invoke(app, ["validate", str(root)])
    assert merged.exit_code == 1, merged.output
    assert "lineage.enabled" in merged.output
    alone = runner.invoke(app, ["validate", "--standalone", str(root)])
    assert alone.exit_code == 0, alone.output


def test_validate_compiles_sql_and_reports_bad_set_options_without_a_traceback(tmp_path: Path) -> None:
    """SEMANTICS §0: SQL that does not parse is a contract error naming the rule and YAML path."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(MINIMAL + "quality:\n  row_rules:\n    - {name: oops, sql: 'id >'}\n")
    result = runner.invoke(app, ["validate", str(broken)])
    assert result.exit_code == 1, result.output
    assert "oops" in result.output and "quality.row_rules[0]" in result.output
    result = runner.invoke(app, ["validate", str(broken), "--set", "novalue"])
    assert result.exit_code == 1 and "expected key=value" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_validate_lists_every_compile_problem(tmp_path: Path) -> None:
    """One `validate` names every op and rule that does not compile, each at its own path and line."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        MINIMAL
        + "transformations:\n  - derive: {field: x, sql: 'id +* 2'}\n  - trim: {fields: [email]}\n"
        + "quality:\n  row_rules:\n    - {name: oops, sql: 'id >'}\n    - {name: fine, sql: 'id > 0'}\n"
        + "  dataset_rules:\n    - {name: agg, sql: 'SELECT COUNT( FROM source'}\n"
    )
    result = runner.invoke(app, ["validate", str(broken)])
    assert result.exit_code == 1, result.output
    assert "3 problem(s)" in result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert any(line.startswith(f"{broken}:11:24: transformations[0].derive.sql: ") for line in lines)
    assert any(line.startswith(f"{broken}:15:20: quality.row_rules[0].sql: rule 'oops'") for line in lines)
    assert any(line.startswith(f"{broken}:18:19: quality.dataset_rules[0].sql:") for line in lines)
    assert "fine" not in result.output


def test_schema_creates_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "schema.json"
    result = runner.invoke(app, ["schema", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["title"]


def test_validate_reports_unusable_notification_channels_with_their_line(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(
        MINIMAL
        + "quarantine:\n  notifications:\n    - {target: 'nosuchservice://hook'}\n"
        + "    - {type: console, subject_template: '{{ contract '}\n"
    )
    result = runner.invoke(app, ["validate", str(file)])
    assert result.exit_code == 1, result.output
    assert "2 problem(s)" in result.output
    line = MINIMAL.count("\n") + 3
    assert f"c.yaml:{line}:7: quarantine.notifications[0]" in result.output
    assert "nosuchservice" in result.output
    assert "quarantine.notifications[1].subject_template" in result.output


def test_validate_lists_sql_problems_in_the_same_pass_as_schema_problems(tmp_path: Path) -> None:
    """A file with schema problems still gets its well-formed items' SQL checked: one round of fixes."""
    broken = tmp_path / "broken.yaml"
    text = (
        MINIMAL.replace("type: string", "type: strng")
        + "transformations:\n  - derive: {field: x, sql: 'id +* 2'}\n"
        + "  - derive: {field: y, sql: '((', no: 1}\n"
        + "quality:\n  row_rules:\n    - {name: oops, sql: 'id >'}\n    - {name: fine, sql: 'id > 0'}\n"
    )
    broken.write_text(text)
    for mode in ("--standalone", "--hierarchy"):
        result = runner.invoke(app, ["validate", mode, str(broken)])
        assert result.exit_code == 1, result.output
        lines = [line.strip() for line in result.output.splitlines()]
        assert "4 problem(s)" in result.output
        assert any(line.startswith(f"{broken}:9:7: model.fields[1].type: unknown type") for line in lines)
        assert any(line.startswith(f"{broken}:11:24: transformations[0].derive.sql: op #0") for line in lines)
        assert any(
            line.startswith(f"{broken}:12:35: transformations[1].derive.no: unknown") for line in lines
        )
        assert any(
            line.startswith(f"{broken}:15:20: quality.row_rules[0].sql: rule 'oops'") for line in lines
        )
        # the SQL of a malformed item is not judged: its own problem comes first
        assert "transformations[1].derive.sql" not in result.output and "fine" not in result.output
    # a value whose variable is unset is reported once, not as bad SQL as well
    broken.write_text(text + "    - {name: unset, sql: '${NO_SUCH_VAR_X9} >'}\n")
    result = runner.invoke(app, ["validate", "--standalone", str(broken)])
    assert "5 problem(s)" in result.output, result.output
    assert (
        result.output.count("quality.row_rules[2].sql") == 1 and "NO_SUCH_VAR_X9 is not set" in result.output
    )


def test_validate_names_the_set_option_as_the_source_of_its_typo(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(MINIMAL + "materialization:\n  strategy: append\n")
    for mode in ("--standalone", "--hierarchy"):
        result = runner.invoke(app, ["validate", mode, str(path), "--set", "materialization.stratgy=merge"])
        assert result.exit_code == 1, result.output
        text = " ".join(result.output.split())
        assert "override:--set: materialization.stratgy: unknown key; did you mean 'strategy'?" in text
        assert f"{path}:" not in text.replace(f"✗ {path}", "")
        # SQL a --set gives is the option's problem too, whether the rest of the file is valid or not
        rule = "quality.row_rules[0]={name: r, sql: 'id >'}"
        for extra in ([], ["--set", "info.titel=x"]):
            result = runner.invoke(app, ["validate", mode, str(path), "--set", rule, *extra])
            assert "override:--set: quality.row_rules[0].sql: rule 'r'" in result.output, result.output


def test_validate_reports_a_duplicate_key_at_its_path_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        MINIMAL.replace("  title: Orders\n", "  title: Orders\n  title: Sales\n").replace("strin", "strn")
    )
    for mode in ("--standalone", "--hierarchy"):
        result = runner.invoke(app, ["validate", mode, str(path)])
        assert result.exit_code == 1, result.output
        lines = [line.strip() for line in result.output.splitlines()]
        duplicate = f"{path}:4:3: info.title: duplicate key (first written at line 3)"
        assert f"{duplicate}; allowed: each key once per mapping" in lines
        assert any(line.startswith(f"{path}:10:7: model.fields[1].type: unknown type") for line in lines)
