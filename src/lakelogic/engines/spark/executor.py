"""Build the lazy Spark computation of one contract run from its Plan (SEMANTICS §8, steps 1-12).

Nothing here runs a Spark job (except tiny schema look-ups): the result is an :class:`Evaluation` with a
lazy good frame, a lazy quarantine frame and the observation points that the run's actions (writes or a
no-op sink) fill with every count. See :mod:`lakelogic.engines.spark.runner` for the actions, gating
and the report.

Shape of the computation (one scan of the source):

    read -> [observe source] -> extraction -> external logic -> pre ops -> strict casts
         -> pre checks (one projection, observed) -> [persist point] -> split
            good -> post ops -> post checks + step-10 re-cast (one projection, observed) -> split
                 -> final projection -> mask -> lineage -> [observe good]
            bad (malformed | pre failures | post failures) -> quarantine columns -> mask -> lineage
                 -> [observe quarantined]
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark import enforce as schema
from lakelogic.engines.spark.casting import CastFormats
from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.counting import Observations, Unobserved
from lakelogic.engines.spark.evaluation import Evaluation, RowEffectPoint
from lakelogic.engines.spark.external import run_external_logic
from lakelogic.engines.spark.extraction import apply_extraction
from lakelogic.engines.spark.fanout import (
    FANOUT_KEY,
    Fanout,
    carrier_column,
    fits,
    key_sql,
    observe_split,
    pack_quoting_rows,
    quotes_row,
    row_quoting_flags,
)
from lakelogic.engines.spark.flatten import flatten_nested
from lakelogic.engines.spark.lineage import add_lineage, lineage_values, preserve_upstream
from lakelogic.engines.spark.links import load_links
from lakelogic.engines.spark.marking import MarkedFrame, can_mark, gate_post_checks, mark, pushdown_barrier
from lakelogic.engines.spark.masking import mask_frame
from lakelogic.engines.spark.ops_frame import NO_OUTPUT_ROW
from lakelogic.engines.spark.probes import attach_probes
from lakelogic.engines.spark.quarantine import (
    QuarantineParts,
    assemble_quarantine,
    has_malformed_column,
    malformed_split,
    source_metrics,
)
from lakelogic.engines.spark.rules import HIDDEN_PREFIX, Check, PhaseResult, evaluate_checks, rule_fail_sql
from lakelogic.engines.spark.sources_read import SourceOutcome, pending_date_filter, read_plan_source
from lakelogic.engines.step_clock import StepClock
from lakelogic.errors import EngineError, PlanError
from lakelogic.plan.steps import (
    AddLineage,
    CheckDataset,
    EnforceSchema,
    ExternalLogic,
    Extract,
    FinalProjection,
    LoadLink,
    Mask,
    Plan,
    PreserveUpstream,
    ReadSource,
    RowRule,
    Split,
    Step,
    Transform,
    ValidateRows,
    masked_columns,
)
from lakelogic.report import SourceInfo
from lakelogic.types import Phase


class PlanExecutor:
    """Turns a Plan into an :class:`Evaluation` on Spark (lazily)."""

    def __init__(
        self,
        plan: Plan,
        ctx: SparkRunContext,
        *,
        persist: StorageLevel | str | None = None,
        contract_dict: Mapping[str, Any] | None = None,
        good_reread: bool = False,
        subset: str | None = None,
        clock: StepClock | None = None,
    ) -> None:
        self.plan = plan
        # planning time per §8 step (the rows themselves are processed by the actions the runner times)
        self.clock = clock or StepClock()
        self.ctx = ctx
        self.persist = persist
        # The good frame is written to a file that the dataset rules re-read (column-pruned), so they
        # are no third consumer of the evaluated chain.
        self.good_reread = good_reread
        self.contract_dict = contract_dict
        # "pre" / "post": only the quarantined rows whose messages quote a raw value of that phase
        # (the rows the one-job split cannot rebuild from its key, engines.spark.fanout).
        self.subset = subset
        self.source_location: str | None = None  # §14 stand-in for a row file an op did not carry
        self.files_read: list[str] = []  # local source files this run took (§17 cleanup)
        self.some_rows_only = False  # ... of which it took only some rows (no cleanup)
        self._deferred: set[str] = set()  # inferred-pre rules that run post (see _defer_rules)
        self.source_info: SourceInfo | None = None  # what the read took, known before anything else runs
        self.read_frame: DataFrame | None = None  # the rows of step 1, for a failed run's source count
        # Observation names are global to the session: unique per executor (a run may build several).
        tag = f"{ctx.run_id.replace('-', '')[:12]}_{uuid.uuid4().hex[:6]}"
        self.obs = Observations(run_tag=tag) if subset is None else Unobserved(run_tag=tag)
        self.row_effects: list[RowEffectPoint] = []
        self._effect_counter = 0

    # --- helpers ------------------------------------------------------------------------------

    def _steps(self, kind: type[Step]) -> list[Any]:
        return [s for s in self.plan.steps if isinstance(s, kind)]

    def _one(self, kind: type[Step]) -> Any:
        found = self._steps(kind)
        return found[0] if found else None

    def _counted(
        self, frame: DataFrame, effect: str, name: str, run: Any, *, measure_input: bool = False
    ) -> DataFrame:
        """Run ``run(frame)`` with row-count observations before and after when the step may change it.
        An op that drops some rows while adding others keeps the dropped ones marked ``NO_OUTPUT_ROW``:
        they are counted (see RowEffectPoint) and removed here."""
        if effect == "none":
            return run(frame)
        self._effect_counter += 1
        before, after = f"{name}#{self._effect_counter}:in", f"{name}#{self._effect_counter}:out"
        observe = self.obs.measured if measure_input else self.obs.observe
        out = run(observe(frame, before))
        empty_label = None
        if NO_OUTPUT_ROW in out.columns:  # the op kept the input rows it drops, marked: count, then remove
            empty_label = f"{name}#{self._effect_counter}:dropped"
            marked = F.col(NO_OUTPUT_ROW)
            out = self.obs.observe(out, empty_label, {"empty": F.sum(F.when(marked, 1).otherwise(0))})
            out = out.where(~marked).drop(NO_OUTPUT_ROW)
        self.row_effects.append(RowEffectPoint(before, after, effect, empty_label=empty_label))
        return self.obs.observe(out, after)

    # --- the run ------------------------------------------------------------------------------

    def evaluate(self, source: DataFrame | str | Path | None) -> Evaluation:
        read_step: ReadSource | None = self._one(ReadSource)
        lineage: AddLineage | None = self._one(AddLineage)
        wants_path = lineage is not None and "source_path" in lineage.columns.values()
        outcome: SourceOutcome = read_plan_source(
            self.ctx,
            read_step,
            source,
            with_file_path=wants_path,
            model_fields=[f.name for f in self.plan.fields],
            model_types={f.name: f.type for f in self.plan.fields},
        )
        ev = Evaluation(
            good=None,
            bad=None,
            observations=self.obs,
            source_info=outcome.info,
            empty_behavior=outcome.empty_behavior,
            dataset=self._one(CheckDataset),
        )
        self.source_location = outcome.location
        self.source_info = outcome.info
        self.files_read = outcome.files_read
        self.some_rows_only = outcome.some_rows_only
        if outcome.frame is None:
            return ev
        self.ctx.links.update(load_links(self.ctx.spark, self._link_steps(), self.ctx.link_cache))
        frame = outcome.frame
        if read_step is not None:
            frame = flatten_nested(frame, read_step.flatten_nested)
        ev.source_frame = frame
        self.read_frame = frame
        preserve: PreserveUpstream | None = self._one(PreserveUpstream)
        if preserve is not None:
            frame = preserve_upstream(frame, preserve, self.ctx.warnings)
        if has_malformed_column(frame):
            frame = self.obs.observe(frame, "source", source_metrics(frame))
        else:
            # Every row reaches the next observation point of the chain: it counts the source too.
            self.obs.defer("source")
        frame, malformed = malformed_split(frame, self.obs)
        ev.malformed_label = "malformed" if malformed is not None else None

        extract: Extract | None = self._one(Extract)
        if extract is not None:
            with self.clock.stage("extraction"):
                frame = apply_extraction(frame, extract)
        external: ExternalLogic | None = self._one(ExternalLogic)
        if external is not None and malformed is not None:
            # Spark refuses a query over a raw JSON/CSV scan that needs only its corrupt-record column,
            # which is what the code's own `frame.count()` would be; cached rows carry no such limit.
            frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
            ev.persisted.append(frame)
        if external is not None:
            with self.clock.stage("external_logic"):
                frame = self._counted(
                    frame,
                    "any",
                    "external_logic",
                    lambda f: run_external_logic(
                        self.ctx.spark, f, external, links=self.ctx.links, contract=self.contract_dict
                    ),
                    # the code may read its input partly or not at all: count it (and the source) first
                    measure_input=True,
                )
        transforms: list[Transform] = self._steps(Transform)
        formats = self._formats()
        pre_checks: list[Check] = []
        with self.clock.stage("pre_transform"):
            pre_ops = [t for t in transforms if t.phase == Phase.PRE]
            frame = self._apply_ops(pre_ops, frame, pre_checks, formats)
            in_window = pending_date_filter(self.ctx, {c for t in pre_ops for c in t.adds})
            if in_window is not None:  # a window's date column that a pre transformation made
                frame = self._counted(frame, "filter", "window", in_window)

        enforce_step: EnforceSchema | None = self._one(EnforceSchema)
        if enforce_step is None:
            raise PlanError("plan has no schema enforcement step")
        self._defer_rules(frame.columns)
        created = {c for t in transforms if t.phase == Phase.PRE for c in t.adds}
        with self.clock.stage("schema"):
            enforced = schema.enforce_schema(frame, enforce_step, created_by_ops=created, formats=formats)
        ev.drift = enforced.drift
        frame = enforced.frame
        split: Split = self._one(Split) or Split(yaml_path="quarantine")
        ev.quarantine_enabled = split.quarantine_enabled
        ev.fail_on_quarantine = bool(self.plan.quarantine.get("fail_on_quarantine", False))
        rules = self._rules(Phase.PRE)
        if self.subset == "pre":
            # Right after the casts: the rest of the contract runs on these rows only.
            quoted = _any_quoting([*pre_checks, *enforced.checks], split.include_error_reason)
            frame = pushdown_barrier(frame).where(quoted)
        post_ops = [t for t in transforms if t.phase == Phase.POST]
        with self.clock.stage("pre_quality"):
            frame = attach_probes(frame, rules, self.ctx.links)
            checks = [*pre_checks, *enforced.checks, *[_rule_check(r) for r in rules]]
            marking = can_mark(post_ops, frame.columns)
            phase = evaluate_checks(
                frame,
                checks,
                observations=self.obs,
                label="pre_rules",
                include_reason=split.include_error_reason,
                # A marked chain keeps every row and every flag up to the post checks' observation point.
                defer=marking,
            )
        ev.checks["pre_rules"] = checks
        unknown_dropped = enforced.unknown if enforce_step.unknown_fields == "quarantine" else []
        has_dataset_rules = ev.dataset is not None and bool(ev.dataset.rules)
        marked: MarkedFrame | None = None
        if marking:
            marked = self._marked_chain(phase, frame.columns, post_ops, formats, split, ev)
            # Two consumers (good, bad) re-read the source more cheaply than a cache round trip;
            # a third (the dataset-rule aggregation over the lazy good frame) tips the balance towards
            # persisting, unless the dataset rules re-read the written good output instead.
            level = self._persist_level(needed=has_dataset_rules and not self.good_reread)
            if level is not None:
                marked.frame = marked.frame.persist(level)
                ev.persisted.append(marked.frame)
            if self.subset == "post":
                quoting = row_quoting_flags(marked, Phase.POST, include_reason=split.include_error_reason)
                marked.bad_filter = f"NOT {marked.pre_bad_flag} AND ({' OR '.join(quoting) or 'false'})"
            good, pre_bad, post_bad = marked.good(drop=unknown_dropped), marked.bad(), None
        else:
            # Split mode: the quarantine needs the pre phase twice (pre and post failures).
            level = self._persist_level(needed=True)
            if level is not None:
                ev.persisted.append(phase.persist(level))
            pre_good = schema.drop_hidden(phase.good())
            if unknown_dropped:
                pre_good = pre_good.drop(*unknown_dropped)
            pre_bad = schema.drop_hidden(phase.bad())
            good, post_bad = self._post_phase(pre_good, transforms, formats, split, ev)
        final: FinalProjection | None = self._one(FinalProjection)

        def shape_good(rows: DataFrame, *, masked: bool = True) -> DataFrame:
            if final is not None:
                rows = schema.final_projection(
                    rows,
                    final.fields,
                    unknown_policy=final.unknown_fields,
                    unknown=enforced.unknown,
                    cast_to_string=enforce_step.cast_to_string,
                    lineage_copies=self._preserved_copies(),
                )
            return self._mask_and_lineage(rows, lineage, masked=masked)

        with self.clock.stage("mask_lineage"):
            ev.masked_columns = masked_columns(self.plan.steps)
            if has_dataset_rules and ev.masked_columns:
                # Dataset rules (step 11) see the real values; masking is step 12 (SEMANTICS §5.4, §8).
                ev.good_unmasked = shape_good(good, masked=False)
            good = shape_good(good)
            # A re-evaluated subset of the one-job split adds its failed rows only: the split writes the
            # malformed records itself.
            parts = QuarantineParts(
                malformed=malformed if self.subset is None else None, pre=pre_bad, post=post_bad
            )
            bad = self._mask_and_lineage(self._quarantine(parts, split), lineage)
            only_malformed = (
                self._mask_and_lineage(self._quarantine(parts, split, only_malformed=True), lineage)
                if parts.malformed is not None
                else None
            )
        if marked is not None and not unknown_dropped and self.subset is None:
            ev.fanout = self._fanout(marked, shape_good, good, bad, split, only_malformed)
        self.obs.require_hosted()
        ev.good = self.obs.observe(good, "good", branch=True)
        ev.bad = self.obs.observe(bad, "quarantined", branch=True)
        ev.row_effects = list(self.row_effects)
        return ev

    def _quarantine(self, parts: QuarantineParts, split: Split, *, only_malformed: bool = False) -> DataFrame:
        return assemble_quarantine(
            parts,
            run_id=self.ctx.run_id,
            quarantined_at=self.ctx.as_of,
            include_reason=split.include_error_reason,
            model_fields=[f.name for f in self.plan.fields],
            only_malformed=only_malformed,
            model_types={f.name: f.type.spark_sql() for f in self.plan.fields},
        )

    def _persist_level(self, *, needed: bool) -> StorageLevel | None:
        if self.persist == "auto":
            return StorageLevel.DISK_ONLY if needed else None
        return self.persist if isinstance(self.persist, StorageLevel) else None

    def _link_steps(self) -> list[LoadLink]:
        seen: dict[str, LoadLink] = {s.name: s for s in self.plan.links}
        for step in self._steps(LoadLink):
            seen.setdefault(step.name, step)
        return [s for name, s in seen.items() if name not in self.ctx.links]

    def _formats(self) -> CastFormats:
        enforce_step: EnforceSchema | None = self._one(EnforceSchema)
        read_step: ReadSource | None = self._one(ReadSource)
        dates = tuple(enforce_step.date_formats) if enforce_step else ()
        stamps = tuple(enforce_step.timestamp_formats) if enforce_step else ()
        if read_step is not None:
            dates = dates or tuple(read_step.options.get("date_formats") or ())
            stamps = stamps or tuple(read_step.options.get("timestamp_formats") or ())
        return CastFormats(dates, stamps)

    def _rules(self, phase: Phase) -> list[RowRule]:
        """The phase's rules in declaration order, after :meth:`_defer_rules` moved some to post."""
        rules = [r for s in self._steps(ValidateRows) for r in s.rules]
        deferred = [replace(r, phase=Phase.POST) if r.name in self._deferred else r for r in rules]
        return [r for r in deferred if r.phase == phase]

    def _defer_rules(self, columns: Collection[str]) -> None:
        """§10.2: a rule whose phase was inferred reads a column that only a post op can create when the
        frame after the pre ops lacks it; the compiler cannot tell for ops like `sql`, so it is told here."""
        present = set(columns)
        self._deferred = {
            r.name
            for s in self._steps(ValidateRows)
            for r in s.rules
            if r.deferrable and r.phase == Phase.PRE and any(c not in present for c in r.reads)
        }

    def _apply_ops(
        self, ops: list[Transform], frame: DataFrame, checks: list[Check], formats: CastFormats
    ) -> DataFrame:
        for step in ops:
            if step.op == "cast":
                frame = self._cast_op(step, frame, checks, formats)
                continue
            pending = schema.hidden_columns(frame)
            run_step = step
            if pending and step.op == "select":
                # Keep raw values of earlier cast ops alive through a select (their checks need them).
                cols = [*step.params["columns"], *[c for c in pending if c not in step.params["columns"]]]
                run_step = replace(step, params={**step.params, "columns": cols})
            frame = self._counted(
                frame,
                step.row_effect,
                f"op{step.index}:{step.op}",
                lambda f, s=run_step: _apply_transform(s, f, self.ctx),
            )
            lost = [c for c in pending if c not in frame.columns]
            if lost:
                raise PlanError(
                    f"op {step.op!r} removes raw values that an earlier `cast` op needs for its checks",
                    yaml_path=step.yaml_path,
                    hint="move the cast after this op, or into the model types",
                )
        return frame

    def _cast_op(
        self, step: Transform, frame: DataFrame, checks: list[Check], formats: CastFormats
    ) -> DataFrame:
        columns: Mapping[str, str] = step.params.get("columns", {})
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise PlanError(f"cast names missing column(s) {', '.join(missing)}", yaml_path=step.yaml_path)
        masked = {f.name: f for f in self.plan.fields if f.masking}
        requests = [schema.CastRequest(c, schema.logical(t), mask=masked.get(c)) for c, t in columns.items()]
        outcome = schema.strict_cast_columns(
            frame, requests, phase=step.phase, formats=formats, tag=f"op{step.index}"
        )
        # §9.1: later ops read the cast's output and may overwrite, rename or drop the column; its failure
        # is decided now, into a hidden flag that later ops carry like the raw values (§5.3: a failed cast
        # is quarantined, never lost to a coalesce or a default)
        if not outcome.checks:
            return outcome.frame
        flags = [f"{HIDDEN_PREFIX}castfail_op{step.index}_{k}" for k in range(len(outcome.checks))]
        pinned = outcome.frame.select(
            "*", *[F.expr(c.fail_sql).alias(flag) for c, flag in zip(outcome.checks, flags, strict=True)]
        )
        checks.extend(replace(c, fail_sql=flag) for c, flag in zip(outcome.checks, flags, strict=True))
        return pinned

    def _post_phase(
        self, good: DataFrame, transforms: list[Transform], formats: CastFormats, split: Split, ev: Evaluation
    ) -> tuple[DataFrame, DataFrame | None]:
        """Split mode: post ops on good rows only, then post checks and a second split."""
        op_checks: list[Check] = []
        with self.clock.stage("post_transform"):
            post_ops = [t for t in transforms if t.phase == Phase.POST]
            good = self._apply_ops(post_ops, good, op_checks, formats)
        with self.clock.stage("post_quality"):
            frame, checks = self._post_checks(good, op_checks, formats)
            if not checks:
                return schema.drop_hidden(frame), None
            phase = self._evaluate_post(frame, checks, split, ev)
            return schema.drop_hidden(phase.good()), schema.drop_hidden(phase.bad())

    def _evaluate_post(
        self, frame: DataFrame, checks: list[Check], split: Split, ev: Evaluation
    ) -> PhaseResult:
        ev.checks["post_rules"] = checks
        return evaluate_checks(
            frame,
            checks,
            observations=self.obs,
            label="post_rules",
            include_reason=split.include_error_reason,
            tag="post",
        )

    def _post_checks(
        self, frame: DataFrame, op_checks: list[Check], formats: CastFormats
    ) -> tuple[DataFrame, list[Check]]:
        """Probes, the step-10 re-cast and every post check, in message order (SEMANTICS §11: schema
        failures before rules): op casts, re-cast failures, post rules. Post rules still read the post-op
        values; the order only decides the order of a row's messages."""
        rules = self._rules(Phase.POST)
        final: FinalProjection | None = self._one(FinalProjection)
        fields = final.fields if final is not None else self.plan.fields
        enforce_step: EnforceSchema | None = self._one(EnforceSchema)
        if enforce_step is not None and enforce_step.cast_to_string:
            fields = tuple(replace(f, type=schema.logical("string")) for f in fields)
        absent = [f for f in fields if f.name not in frame.columns and any(f.name in r.reads for r in rules)]
        if absent:  # a model column no op created is NULL at step 10; post rules see it so already
            frame = frame.withColumns({f.name: F.lit(None).cast(f.type.spark_sql()) for f in absent})
        frame = attach_probes(frame, rules, self.ctx.links)
        requests = schema.recast_requests(frame, fields)
        frame, rule_checks = _checked_before_recast(frame, rules, {r.column for r in requests})
        recast = schema.strict_cast_columns(frame, requests, phase=Phase.POST, formats=formats, tag="final")
        return recast.frame, [*op_checks, *recast.checks, *rule_checks]

    def _marked_chain(
        self,
        pre: PhaseResult,
        pre_columns: list[str],
        post_ops: list[Transform],
        formats: CastFormats,
        split: Split,
        ev: Evaluation,
    ) -> MarkedFrame:
        """Post ops and post checks on every row (pre failures ride along), then one marking projection."""
        op_checks: list[Check] = []
        with self.clock.stage("post_transform"):
            chain = self._apply_ops(post_ops, pre.flagged, op_checks, formats)
        with self.clock.stage("post_quality"):
            chain, checks = self._post_checks(chain, op_checks, formats)
            post = self._evaluate_post(chain, gate_post_checks(checks, pre.bad_flag), split, ev)
            return mark(pre, post, pre_columns)

    def _fanout(
        self,
        marked: MarkedFrame,
        shape_good: Callable[[DataFrame], DataFrame],
        good: DataFrame,
        bad: DataFrame,
        split: Split,
        malformed: DataFrame | None,
    ) -> Fanout | None:
        """The one-job split of this run, when its staged rows can serve as both outputs. ``malformed``:
        the quarantine rows of the unparseable records, which never reach the split's chain."""
        keyed = key_sql(marked, include_reason=split.include_error_reason)
        if keyed is None:
            return None
        key, messages = keyed
        staged = shape_good(marked.blanked().select("*", F.expr(key).alias(FANOUT_KEY)))
        carrier = carrier_column(good.schema, bad.schema)
        staged = pack_quoting_rows(staged, carrier)
        if not fits(staged.schema, good.schema, bad.schema):
            return None
        return Fanout(
            frame=observe_split(self.obs, staged),
            good_schema=good.schema,
            bad_schema=bad.schema,
            messages=messages,
            run_id=self.ctx.run_id,
            quarantined_at=self.ctx.as_of,
            carrier=carrier,
            malformed=malformed,
        )

    def _preserved_copies(self) -> tuple[str, ...]:
        preserve: PreserveUpstream | None = self._one(PreserveUpstream)
        return tuple(preserve.prefix + c for c in preserve.columns) if preserve is not None else ()

    def _mask_and_lineage(
        self, frame: DataFrame, lineage: AddLineage | None, *, masked: bool = True
    ) -> DataFrame:
        mask: Mask | None = self._one(Mask) if masked else None
        if mask is not None:
            frame = mask_frame(frame, mask.fields, warnings=self.ctx.warnings)
        if lineage is not None:
            values = lineage_values(
                lineage,
                run_id=self.ctx.run_id,
                pipeline_run_id=self.ctx.pipeline_run_id,
                processed_at=self.ctx.as_of,
            )
            frame = add_lineage(frame, values, source_location=self.source_location)
        return schema.drop_internal(frame)


def _any_quoting(checks: Sequence[Check], include_reason: bool) -> str:
    flags = [
        f"({c.fail_sql})" for c in checks if c.quarantines and quotes_row(c, include_reason=include_reason)
    ]
    return " OR ".join(flags) if flags else "false"


def _checked_before_recast(
    frame: DataFrame, rules: list[RowRule], recast: set[str]
) -> tuple[DataFrame, list[Check]]:
    """Post rules run at step 9 on the post-op values, before step 10 casts them back to the model type
    (SEMANTICS §8): a rule reading a re-cast column gets its verdict computed first, as a hidden column."""
    checks = [_rule_check(r) for r in rules]
    early = {i: c for i, (r, c) in enumerate(zip(rules, checks, strict=True)) if recast & set(r.reads)}
    if not early:
        return frame, checks
    flags = {f"{HIDDEN_PREFIX}post_rule_{i}": F.expr(c.fail_sql) for i, c in early.items()}
    frame = frame.withColumns(flags)
    names = iter(flags)
    return frame, [replace(c, fail_sql=f"`{next(names)}`") if i in early else c for i, c in enumerate(checks)]


def _rule_check(rule: RowRule) -> Check:
    return Check(
        name=rule.name,
        category=rule.category,
        severity=rule.severity,
        phase=rule.phase,
        origin=rule.origin,
        sql=rule.message_detail,
        fail_sql=rule_fail_sql(rule.predicate),
        yaml_path=rule.yaml_path,
    )


def _apply_transform(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    try:
        from lakelogic.engines.spark.ops import apply_transform
    except ImportError as exc:  # pragma: no cover - the ops module ships with the engine
        raise EngineError("transformation ops are not available (lakelogic.engines.spark.ops)") from exc
    return apply_transform(step, frame, ctx, keep_dropped=True)


__all__ = ["Evaluation", "PlanExecutor", "RowEffectPoint"]
