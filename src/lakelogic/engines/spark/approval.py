"""Approval staging (DRIVER §11): a batch that needs approval waits outside the target until an approver
publishes or rejects it.

A staged batch is a directory ``<approval root>/<run id>/`` holding ``good/`` and ``quarantine/`` (Parquet,
exactly the frames the run would have written) and ``manifest.json``, written last, so a directory without
it is an incomplete staging that nothing lists. The manifest carries what publishing needs without
recomputing the contract: the run id, pipeline run id and window (so the commits carry the original
exactly-once stamp), the target, the run report, and the contract reduced to the blocks the write reads
(no source, links, code, rules or notification settings: nothing that may hold a secret).

The root is ``LAKELOGIC_APPROVAL_DIR``, else the Spark setting ``spark.lakelogic.approvalDir`` (any Hadoop
path every executor can reach), else ``<LAKELOGIC_HOME or .lakelogic>/approvals`` for a local master.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakelogic.engines.spark.outputs import configured_location, is_local
from lakelogic.errors import ApprovalError
from lakelogic.tables.spark_fs import HadoopFS

APPROVAL_CONF = "spark.lakelogic.approvalDir"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
# contract blocks a publish never reads; dropped from the manifest (they may hold connection secrets)
_NOT_FOR_PUBLISH = (
    "links",
    "extraction",
    "external_logic",
    "transformations",
    "quality",
    "service_levels",
    "environments",
    "server",
)
# the source keys a write reads (CDC deletes, the watermark); paths, queries and options may hold secrets
_SOURCE_FOR_PUBLISH = (
    "type",
    "load_mode",
    "cdc_op_field",
    "cdc_delete_values",
    "cdc_timestamp_field",
    "watermark_field",
)


def approval_root(spark: SparkSession) -> str:
    """Where staged batches live (see the module docstring)."""
    configured = configured_location(spark, "LAKELOGIC_APPROVAL_DIR", APPROVAL_CONF)
    if configured is not None:
        return configured
    if is_local(spark):
        from lakelogic.runlog.store import default_database_path

        return str(default_database_path().parent / "approvals")
    raise ApprovalError(
        "staging a batch for approval needs a location every executor can reach",
        hint=f"set LAKELOGIC_APPROVAL_DIR or the Spark setting {APPROVAL_CONF}",
    )


def publish_contract(contract: Any) -> dict[str, Any]:
    """The contract as the publish reads it: identity, model, keys, materialization, lineage, metadata."""
    data: dict[str, Any] = contract.model_dump(mode="json", by_alias=True, exclude_none=True)
    for key in _NOT_FOR_PUBLISH:
        data.pop(key, None)
    source = data.pop("source", None)
    if isinstance(source, dict):
        data["source"] = {k: v for k, v in source.items() if k in _SOURCE_FOR_PUBLISH}
    quarantine = data.get("quarantine")
    if isinstance(quarantine, dict):
        quarantine.pop("notifications", None)
    return data


@dataclass(frozen=True)
class StagedBatch:
    """One staged batch: its directory and its manifest."""

    path: str
    manifest: dict[str, Any]

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])

    @property
    def pipeline_run_id(self) -> str | None:
        value = self.manifest.get("pipeline_run_id")
        return str(value) if value else None

    @property
    def names(self) -> list[str]:
        """Every name an approval may use for this contract: node id, contract name, file stem."""
        return [str(n) for n in self.manifest.get("names") or [] if n]

    def good(self, spark: SparkSession) -> DataFrame:
        return spark.read.parquet(f"{self.path}/good")

    def quarantine(self, spark: SparkSession) -> DataFrame | None:
        return spark.read.parquet(f"{self.path}/quarantine") if self.manifest.get("has_quarantine") else None


def _run_dir(root: str, run_id: str) -> str:
    safe = "".join(ch for ch in run_id if ch.isalnum() or ch in "-_")
    if not safe:
        raise ApprovalError(f"run id {run_id!r} cannot name a staging directory")
    return f"{root}/{safe}"


def stage_batch(
    spark: SparkSession,
    *,
    run_id: str,
    good: DataFrame,
    bad: DataFrame | None,
    manifest: Mapping[str, Any],
) -> str:
    """Write the batch and its manifest (last); returns the staging directory. A staging left by an
    earlier attempt of the same run id is replaced."""
    root = approval_root(spark)
    path = _run_dir(root, run_id)
    fs = HadoopFS(spark, root)
    if fs.exists(path):
        fs.delete(path)
    good.write.mode("overwrite").parquet(f"{path}/good")
    if bad is not None:
        bad.write.mode("overwrite").parquet(f"{path}/quarantine")
    document = {
        **manifest,
        "version": MANIFEST_VERSION,
        "run_id": run_id,
        "has_quarantine": bad is not None,
        "staged_at": datetime.now(UTC).isoformat(),
    }
    fs.write_text(f"{path}/{MANIFEST}", json.dumps(document, default=str, sort_keys=True, indent=2))
    return path


def _read(fs: HadoopFS, path: str) -> StagedBatch | None:
    manifest_path = f"{path}/{MANIFEST}"
    if not fs.exists(manifest_path):
        return None
    try:
        data = json.loads(fs.read_text(manifest_path))
    except ValueError as exc:
        raise ApprovalError(f"staged batch {path}: unreadable {MANIFEST}: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION or "run_id" not in data:
        raise ApprovalError(
            f"staged batch {path}: {MANIFEST} is not a LakeLogic v{MANIFEST_VERSION} manifest"
        )
    return StagedBatch(path=path, manifest=data)


def find_staged(spark: SparkSession, run_id: str) -> StagedBatch | None:
    """The staged batch of ``run_id``, or None."""
    root = approval_root(spark)
    return _read(HadoopFS(spark, root), _run_dir(root, run_id))


def list_staged(spark: SparkSession, *, pipeline_run_id: str | None = None) -> list[StagedBatch]:
    """Every complete staged batch (of one pipeline run), oldest first."""
    root = approval_root(spark)
    fs = HadoopFS(spark, root)
    if not fs.exists(root):
        return []
    found = [b for b in (_read(fs, f"{root}/{name}") for name in fs.list_dir(root)) if b is not None]
    if pipeline_run_id is not None:
        found = [b for b in found if b.pipeline_run_id == pipeline_run_id]
    return sorted(found, key=lambda b: str(b.manifest.get("staged_at", "")))


def drop_staged(spark: SparkSession, batch: StagedBatch) -> None:
    HadoopFS(spark, approval_root(spark)).delete(batch.path)


def select_staged(
    spark: SparkSession,
    *,
    run_ids: tuple[str, ...] = (),
    pipeline_run_id: str | None = None,
    contracts: tuple[str, ...] = (),
) -> list[StagedBatch]:
    """The staged batches an approve/reject names: by run id, or by pipeline run (optionally only the
    given contracts). A named run id or contract with nothing staged is an error, not a silent no-op."""
    if not run_ids and pipeline_run_id is None:
        raise ApprovalError("name the batches: give run ids or a pipeline run id")
    chosen: list[StagedBatch] = []
    # a run id named twice is one batch: publishing it twice failed after the first publish
    for run_id in dict.fromkeys(run_ids):
        batch = find_staged(spark, run_id)
        if batch is None:
            raise ApprovalError(
                f"run {run_id} has no staged batch (never staged, or already published or rejected)",
                hint="`lakelogic approvals` lists what awaits approval",
            )
        chosen.append(batch)
    if pipeline_run_id is not None:
        in_run = [b for b in list_staged(spark, pipeline_run_id=pipeline_run_id) if b not in chosen]
        if contracts:
            unknown = [c for c in contracts if not any(c in b.names for b in in_run)]
            if unknown:
                raise ApprovalError(
                    f"nothing staged for {', '.join(unknown)} in pipeline run {pipeline_run_id}",
                    hint="`lakelogic approvals --pipeline-run-id ...` lists what awaits approval",
                )
            in_run = [b for b in in_run if any(c in b.names for c in contracts)]
        chosen.extend(in_run)
    return chosen
