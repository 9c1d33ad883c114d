"""Post-ingestion cleanup of source files (SEMANTICS §17), without an engine."""

from __future__ import annotations

from pathlib import Path

from lakelogic.sources.lifecycle import clean_up_files


def _landing(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "landing"
    (root / "2024" / "03").mkdir(parents=True)
    files = [root / "a.csv", root / "2024" / "03" / "b.csv"]
    for f in files:
        f.write_text("id\n1\n")
    return root, [str(f) for f in files]


def test_delete_removes_exactly_the_files_read(tmp_path: Path) -> None:
    root, files = _landing(tmp_path)
    (root / "later.csv").write_text("id\n9\n")  # arrived during the run, not read by it
    result = clean_up_files(files, action="delete", root=str(root), archive_path=None, run_id="r1")
    assert result.failures == [] and sorted(result.done) == sorted(files)
    assert sorted(p.name for p in root.rglob("*.csv")) == ["later.csv"]


def test_archive_keeps_relative_paths_and_never_overwrites(tmp_path: Path) -> None:
    root, files = _landing(tmp_path)
    archive = tmp_path / "archive"
    (archive / "2024" / "03").mkdir(parents=True)
    (archive / "2024" / "03" / "b.csv").write_text("an earlier delivery\n")
    result = clean_up_files(
        [f"file:{files[0]}", files[1]],
        action="archive",
        root=str(root),
        archive_path=str(archive),
        run_id="r1",
    )
    assert result.failures == []
    assert (archive / "a.csv").read_text() == "id\n1\n"
    assert (archive / "2024" / "03" / "b.csv").read_text() == "an earlier delivery\n"
    assert (archive / "2024" / "03" / "b.r1.csv").read_text() == "id\n1\n"
    assert not any(root.rglob("*.csv"))


def test_a_glob_root_is_relative_to_its_folder_and_failures_are_collected(tmp_path: Path) -> None:
    root, files = _landing(tmp_path)
    archive = tmp_path / "archive"
    missing = str(root / "gone.csv")
    result = clean_up_files(
        [files[1], missing, "s3://bucket/x.csv"],
        action="archive",
        root=str(root / "**" / "*.csv"),
        archive_path=str(archive),
        run_id="r1",
    )
    assert (archive / "2024" / "03" / "b.csv").exists()
    assert len(result.failures) == 2
    assert result.failures[0].startswith(f"{missing}: ")
    assert result.failures[1].startswith("s3://bucket/x.csv: not a local file")
