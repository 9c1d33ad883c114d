"""Layer-parallel execution of a contract DAG (DRIVER §4.4, §5, §6, §13).

Layers run one after another; within a layer a thread pool runs every ready node. The contract run
itself is an injected callable (:data:`ContractRunner`), so scheduling, gating, retries and recording are
testable without Spark; :mod:`lakelogic.driver.spark_runner` supplies the Spark one. Only the scheduling
thread touches outcomes and the run log, so no shared mutable state crosses threads.
"""

from __future__ import annotations

import json
import os
import threading
import time as _time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from functools import partial
from typing import Any

from loguru import logger
from tenacity import Retrying, retry_if_exception, stop_after_attempt

from lakelogic.driver.dag import ContractDag
from lakelogic.driver.execution import (
    ContractRunner,
    DriverOptions,
    EventSink,
    PipelineResult,
    RunRequest,
    backoff,
    error_type,
    is_transient,
)
from lakelogic.driver.gates import (
    Block,
    FreshnessPolicy,
    Outcome,
    block_from_outcome,
    check_unscheduled,
    evaluate_gates,
    quarantine_threshold,
)
from lakelogic.driver.nodes import Node
from lakelogic.driver.records import record_outcome, synthetic_report
from lakelogic.driver.run_logs import NodeStores
from lakelogic.driver.state import DriverState, SavedNode
from lakelogic.driver.windows import Window, not_past, resolve_window
from lakelogic.errors import LakeLogicError, RunHalted
from lakelogic.report import ErrorBlock, MaterializationInfo, RunReport, note_landed_commit
from lakelogic.runlog import RunLogStore, record_commit_intent
from lakelogic.types import RunStatus

__all__ = ["ContractRunner", "DriverOptions", "PipelineResult", "PipelineRun", "RunRequest", "is_transient"]


# --- the pipeline run ---------------------------------------------------------------------------


_SUCCESSES = frozenset({RunStatus.SUCCEEDED, RunStatus.PARTIAL, RunStatus.NO_NEW_DATA})


HISTORY_MISSING = ("no_previous_success", "no_run_log")


class PipelineRun:
    """One driver invocation over the selected nodes of a DAG."""

    def __init__(
        self,
        dag: ContractDag,
        runner: ContractRunner,
        *,
        selected: set[str] | None = None,
        options: DriverOptions | None = None,
        store: RunLogStore | None = None,
        pipeline_run_id: str | None = None,
        as_of: datetime | None = None,
        on_event: EventSink | None = None,
        cancel: Callable[[str], None] | None = None,
        state: DriverState | None = None,
        resume: DriverState | None = None,
    ) -> None:
        self.dag = dag
        self.runner = runner
        self.options = options or DriverOptions()
        self.store = store
        self.pipeline_run_id = pipeline_run_id or str(uuid.uuid4())
        self.as_of = as_of or datetime.now(UTC)
        self.on_event = on_event or (lambda _n, _s, _o: None)
        self.cancel = cancel
        self.state = state
        self.resumed = dict(resume.nodes) if resume is not None else {}
        chosen = set(dag.nodes) if selected is None else set(selected)
        # Disabled entries exist for name resolution but are never scheduled (§3).
        self.scheduled = {n for n in chosen if dag.nodes[n].enabled}
        self.outcomes: dict[str, Outcome] = {}
        self.windows: dict[str, Window] = {}
        self._aborted: str | None = None
        self._consecutive_failures = 0
        self._circuit_open = False
        # timed-out nodes whose threads may still be busy: they hold a worker until they return
        self._abandoned: list[Future[tuple[RunReport, int]]] = []
        # Nodes the driver gave up on by timeout: their runs must not commit afterwards (their
        # before_commit refuses), since the run log already says they failed.
        self._timed_out: set[str] = set()
        self._commits_begun: set[str] = set()
        self._commit_lock = threading.Lock()
        self._run_ids: dict[str, str] = {}

    @property
    def store(self) -> RunLogStore | None:
        """The pipeline's run log; nodes whose contracts name their own store use theirs (``stores``)."""
        return self.stores.default

    @store.setter
    def store(self, store: RunLogStore | None) -> None:
        self.stores = NodeStores(store)

    # public --------------------------------------------------------------------------------

    def execute(self) -> PipelineResult:
        started = datetime.now(UTC)
        layer_seconds: dict[str, float] = {}
        for layer in self.dag.layers():
            ids = [n for n in self.dag.layer_nodes(layer) if n in self.scheduled]
            if not ids:
                continue
            t0 = _time.monotonic()
            self._run_layer(layer, ids)
            layer_seconds[layer] = _time.monotonic() - t0
        return PipelineResult(
            pipeline_run_id=self.pipeline_run_id,
            as_of=self.as_of,
            started_at=started,
            finished_at=datetime.now(UTC),
            outcomes=self.outcomes,
            layer_seconds=layer_seconds,
            windows=self.windows,
            circuit_open=self._circuit_open,
        )

    def plan(self) -> list[tuple[str, int, str, Window, Block | None]]:
        """Dry run (§17): (layer, generation, node id, window, block) without running anything.

        Scheduled upstreams are assumed to succeed; unscheduled ones are checked against the run log.
        """
        out: list[tuple[str, int, str, Window, Block | None]] = []
        for layer in self.dag.layers():
            ids = [n for n in self.dag.layer_nodes(layer) if n in self.scheduled]
            for gen_index, gen in enumerate(self.dag.generations(layer, ids)):
                for node_id in gen:
                    window = self._window(self.dag.nodes[node_id])
                    block, _warnings = self._upstream_block(node_id, window)
                    if block is not None:
                        self.outcomes[node_id] = Outcome(
                            node_id, "skipped", skip_reason=block.reason, root_cause=block.root_cause
                        )
                    out.append((layer, gen_index, node_id, window, block))
        return out

    # scheduling ----------------------------------------------------------------------------

    def _order_key(self, node_id: str, gen: dict[str, int]) -> tuple[int, str]:
        return (gen.get(node_id, 0), node_id)

    def _run_layer(self, layer: str, ids: list[str]) -> None:
        gen = {n: i for i, g in enumerate(self.dag.generations(layer, ids)) for n in g}
        pending = sorted(ids, key=lambda n: self._order_key(n, gen))
        for node_id in pending:
            self.on_event(node_id, "pending", None)
        running: dict[Future[tuple[RunReport, int]], tuple[str, Window, datetime, float | None]] = {}
        workers = self.options.max_workers or os.cpu_count() or 1  # 0 = number of CPU cores
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"lakelogic-{layer}")
        expired = False
        try:
            while pending or running:
                progressed = self._start_ready(pending, running, pool, workers)
                if not running:
                    if pending and not progressed:  # cannot happen in a DAG; guard against a spin
                        raise LakeLogicError(f"scheduler stalled in layer {layer}: {', '.join(pending)}")
                    continue
                timeout = self._next_timeout(running)
                done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
                for future in done:
                    node_id, window, t_start, _deadline = running.pop(future)
                    self._finish(node_id, window, t_start, future)
                expired = self._expire(running) or expired
        except BaseException:
            # Interrupted (Ctrl-C, a crashed runner): stop the Spark work of every node still running; the
            # state file keeps them `running`, so --resume picks them up with the same run ids.
            for node_id, *_rest in running.values():
                if self.cancel is not None:
                    self.cancel(node_id)
            expired = True
            raise
        finally:
            # A timed-out worker may still be busy; its result is ignored, so do not wait for it.
            pool.shutdown(wait=not expired, cancel_futures=True)

    def _start_ready(
        self,
        pending: list[str],
        running: dict[Future[tuple[RunReport, int]], tuple[str, Window, datetime, float | None]],
        pool: ThreadPoolExecutor,
        workers: int,
    ) -> bool:
        """Start the ready nodes while a worker is free. A node is submitted only when it can run at once,
        so the circuit breaker and fail-fast stop every node not yet running (§13: "starts nothing new"),
        and a node's timeout counts from its start, not from a wait in the pool's queue."""
        progressed = False
        self._abandoned = [f for f in self._abandoned if not f.done()]
        for node_id in list(pending):
            # a thread still busy with a timed-out node holds its worker; when only such threads are
            # left, one node is queued anyway, so a stuck thread delays the layer but never stalls it
            busy = len(running) + (len(self._abandoned) if running else 0)
            if busy >= workers:
                break
            same_layer_ups = [
                u for u in self.dag.upstreams(node_id) if u in pending or self._is_running(u, running)
            ]
            if same_layer_ups:
                continue
            pending.remove(node_id)
            progressed = True
            node = self.dag.nodes[node_id]
            saved = self.resumed.get(node_id)
            if saved is not None and saved.done:
                self._already_succeeded(node, saved)
                continue
            if saved is not None and saved.status == "awaiting_approval" and saved.run_id:
                self._resume_awaiting(node, saved)
                continue
            if self._aborted or self._circuit_open:
                reason = "circuit_open" if self._circuit_open else "pipeline_aborted"
                self._skip(node, Block(reason, "", self._aborted or "", None), self._window(node))
                continue
            window = self._window(node)
            block, warnings = self._upstream_block(node_id, window)
            if block is not None:
                self._skip(node, block, window)
                continue
            # A node that was in flight when a resumed run crashed keeps its run id, so the commit
            # markers of that run id make a commit that already landed a no-op (DRIVER §14).
            in_flight = saved is not None and saved.status == "running" and saved.run_id
            run_id = saved.run_id if in_flight and saved is not None and saved.run_id else str(uuid.uuid4())
            request = RunRequest(node, run_id, self.pipeline_run_id, window, self.as_of)
            self._run_ids[node_id] = run_id
            if self.state is not None:
                self.state.record_start(node_id, run_id, window)
            self.on_event(node_id, "running", None)
            future = pool.submit(self._attempts, request)
            deadline = self._deadline(node)
            running[future] = (node_id, window, datetime.now(UTC), deadline)
            self.outcomes[node_id] = Outcome(node_id, "running", warnings=warnings)
        return progressed

    @staticmethod
    def _is_running(node_id: str, running: dict[Any, tuple[str, Window, datetime, float | None]]) -> bool:
        return any(info[0] == node_id for info in running.values())

    def _deadline(self, node: Node) -> float | None:
        minutes = node.entry.timeout_minutes or self.options.timeout_minutes
        return _time.monotonic() + minutes * 60 if minutes else None

    @staticmethod
    def _next_timeout(running: dict[Any, tuple[str, Window, datetime, float | None]]) -> float | None:
        deadlines = [d for (_n, _w, _t, d) in running.values() if d is not None]
        return max(0.0, min(deadlines) - _time.monotonic()) if deadlines else None

    def _expire(
        self, running: dict[Future[tuple[RunReport, int]], tuple[str, Window, datetime, float | None]]
    ) -> bool:
        now = _time.monotonic()
        expired = False
        for future, (node_id, window, t_start, deadline) in list(running.items()):
            if deadline is not None and now >= deadline:
                running.pop(future)
                with self._commit_lock:  # before the cancel: a commit not yet begun never begins
                    self._timed_out.add(node_id)
                    begun = node_id in self._commits_begun
                if self.cancel is not None:
                    self.cancel(node_id)  # cancels the node's Spark job group
                node = self.dag.nodes[node_id]
                abandoned = not future.cancel()
                report = self._synthetic_report(node, window, RunStatus.FAILED, t_start)
                # the run's own id: its commit markers and its run-log row are one run (§15.1)
                report.run_id = self._run_ids.get(node_id, report.run_id)
                report.error = ErrorBlock(type="timeout", message=f"{node_id} exceeded its timeout")
                # A commit in flight keeps its `committing` row until the thread ends: if the process
                # dies first, the next run settles it against the target (a timeout row would hide it).
                in_flight = begun and abandoned
                self._complete(node, window, report, attempts=1, log=not in_flight)
                if abandoned:
                    self._abandoned.append(future)
                    late = partial(self._late_commit, node, window, report if in_flight else None)
                    future.add_done_callback(late)
                expired = True
        return expired

    def _late_commit(
        self,
        node: Node,
        window: Window,
        timed_out: RunReport | None,
        future: Future[tuple[RunReport, int]],
    ) -> None:
        """The run-log row of a timed-out run once its thread ends. A commit that had begun when the
        timeout fired lands or not (a commit is atomic, DRIVER §13): landed, the row says so, or the next
        window would read those rows again; not landed, the row is the timeout (``timed_out``: the row
        the driver held back while the commit was in flight; None when it was written at once)."""
        store = self.stores.of(node)
        if store is None:
            return
        done = None if future.cancelled() or future.exception() is not None else future.result()
        if done is not None and done[0].materialization is not None and done[0].materialization.committed:
            report, attempts = done
            report.warnings.append("committed after the driver had recorded the contract as timed out")
            logger.warning("{}: its run {} committed after its timeout; recorded", node.id, report.run_id)
            outcome = Outcome(node.id, str(report.status), report=report, attempts=attempts)
            outcome.gate_reason = self._gate_of(node, report)
            outcome.gated = outcome.gate_reason is not None
        elif timed_out is not None:
            outcome = Outcome(node.id, str(timed_out.status), report=timed_out, attempts=1)
        else:
            return
        record_outcome(store, node, window, outcome, self.pipeline_run_id, self.options)

    # one node ------------------------------------------------------------------------------

    def _attempts(self, request: RunRequest) -> tuple[RunReport, int]:
        """Run with retries of transient errors; runs in a worker thread."""
        retries = request.node.entry.retries
        attempts = 1 + (self.options.retries if retries is None else retries)
        counter = {"n": 0}

        def once() -> RunReport:
            counter["n"] += 1
            attempt = RunRequest(
                request.node,
                request.run_id,
                request.pipeline_run_id,
                request.window,
                request.as_of,
                counter["n"],
                before_commit=self._intent_recorder(request.node, request.window, counter["n"]),
            )
            return self.runner(attempt)

        retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=backoff(self.options),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
        try:
            report = retrying(once)
        except Exception as exc:  # noqa: BLE001 - converted into a failed report, never swallowed
            report = self._failed_report(request, exc)
            final_failure = getattr(self.runner, "on_final_failure", None)
            if callable(final_failure):  # e.g. the Spark runner's §16 `failure` notification, sent once
                final_failure(request.node, report)
        if str(report.status) == "failed" and request.node.id in self._commits_begun:
            self._check_landed_commit(request.node, report)
        return report, counter["n"]

    def _failed_report(self, request: RunRequest, exc: Exception) -> RunReport:
        """The report of an attempt that raised: the engine's own when it rode along on the exception (it
        knows what was read and committed), else one made from the node."""
        attached = exc.__dict__.get("lakelogic_report")
        if isinstance(attached, RunReport) and attached.run_id == request.run_id:
            report = attached
        else:
            report = self._synthetic_report(request.node, request.window, RunStatus.FAILED, datetime.now(UTC))
            report.run_id = request.run_id
        report.status = RunStatus.FAILED
        if report.error is None:  # the engine's own error block names the step that failed
            report.error = ErrorBlock(
                type=error_type(exc), message=str(exc), traceback="".join(traceback.format_exception(exc))
            )
        return report

    def _check_landed_commit(self, node: Node, report: RunReport) -> None:
        """A failed run whose commit had begun (this attempt's or an earlier one's, under the same run id)
        may have committed: the target's markers say, so its row records the commit and the next window
        starts after those rows instead of reading them again."""
        mat = report.materialization
        if mat is not None and (mat.committed or mat.already_committed):
            note_landed_commit(report)
            return
        landed = getattr(self.runner, "commit_landed", None)
        if not callable(landed) or not landed(node, report.run_id):
            return
        report.materialization = mat or MaterializationInfo()
        report.materialization.committed = True
        note_landed_commit(report)

    def _finish(
        self, node_id: str, window: Window, t_start: datetime, future: Future[tuple[RunReport, int]]
    ) -> None:
        report, attempts = future.result()
        self._complete(self.dag.nodes[node_id], window, report, attempts=attempts, started=t_start)

    def _complete(
        self,
        node: Node,
        window: Window,
        report: RunReport,
        *,
        attempts: int,
        started: datetime | None = None,
        log: bool = True,
    ) -> None:
        """Record a node's outcome (``log=False``: in the state and the pipeline's outcomes only; the
        run-log row is written later, by :meth:`_late_commit`)."""
        if report.finished_at is None:
            report.finish()
        if window.label == "full" and window.reason in HISTORY_MISSING:
            # §8: a last_success window without a previous success loads everything, "with a warning"
            note = f"full load: {window.reason} in the run log"
            if note not in report.warnings:
                report.warnings.append(note)
                logger.warning("{}: {}", node.id, note)
        status = str(report.status)
        outcome = self.outcomes.get(node.id) or Outcome(node.id, status)
        outcome.status = status
        outcome.report = report
        outcome.attempts = attempts
        outcome.started_at = started or report.started_at
        outcome.finished_at = datetime.now(UTC)
        if report.error is not None:
            outcome.error = f"{report.error.type}: {report.error.message}"
        if status in ("succeeded", "partial", "no_new_data"):
            reason = self._gate_of(node, report)
            outcome.gated = reason is not None
            outcome.gate_reason = reason
        self.outcomes[node.id] = outcome
        self._after_outcome(outcome)
        self._record(node, window, outcome, log=log)
        self.on_event(node.id, status, outcome)

    def _after_outcome(self, outcome: Outcome) -> None:
        if outcome.status == "failed":
            self._consecutive_failures += 1
            if self.options.fail_fast and not self._aborted:
                self._aborted = outcome.node_id
            limit = self.options.max_consecutive_failures
            if limit and self._consecutive_failures >= limit:
                self._circuit_open = True
                self._aborted = self._aborted or outcome.node_id
        elif outcome.status in _SUCCESSES:
            # §13: only a success resets the count (a batch awaiting approval is none)
            self._consecutive_failures = 0

    def _already_succeeded(self, node: Node, saved: SavedNode) -> None:
        """Resume (§14): a node that succeeded before is recorded skipped and keeps its gate."""
        window = self._window(node)
        now = datetime.now(UTC)
        report = self._synthetic_report(node, window, RunStatus.SKIPPED, now)
        outcome = Outcome(
            node.id,
            "skipped",
            report=report,
            skip_reason="already_succeeded",
            gated=saved.gated,
            gate_reason=saved.gate_reason,
            started_at=now,
            finished_at=now,
        )
        self.outcomes[node.id] = outcome
        self._record(node, window, outcome)
        self.on_event(node.id, "skipped", outcome)

    def _resume_awaiting(self, node: Node, saved: SavedNode) -> None:
        """Resume (DRIVER §11) of a node that awaited approval: an approve/reject recorded since (with
        ``lakelogic approve``/``reject``, or by a resume that stopped before its state write) stands;
        otherwise the staged batch is published when the approval file now covers it (no recomputation),
        else the node keeps awaiting. The staging is dropped only after the outcome is recorded."""
        assert saved.run_id is not None
        window = self._window(node)
        started = datetime.now(UTC)
        logged = self._logged_report(node, saved.run_id)
        if logged is not None and logged.status in (
            RunStatus.SUCCEEDED,
            RunStatus.PARTIAL,
            RunStatus.REJECTED,
        ):
            self._complete(node, window, logged, attempts=1, started=started)
            self._discard_staged(saved.run_id)
            return
        resume = getattr(self.runner, "resume_staged", None)
        try:
            report = resume(node, saved.run_id) if callable(resume) else None
        except Exception as exc:  # noqa: BLE001 - recorded as the node's failure, never swallowed
            report = self._synthetic_report(node, window, RunStatus.FAILED, started)
            report.run_id = saved.run_id
            report.error = ErrorBlock(
                type=error_type(exc), message=str(exc), traceback="".join(traceback.format_exception(exc))
            )
        if report is None:
            report = self._synthetic_report(node, window, RunStatus.FAILED, started)
            report.run_id = saved.run_id
            report.error = ErrorBlock(
                type="approval",
                message=f"run {saved.run_id} awaited approval, but its staged batch is gone and the run "
                "log does not say it was approved or rejected",
            )
        self._complete(node, window, report, attempts=1, started=started)
        if report.status in (RunStatus.SUCCEEDED, RunStatus.PARTIAL):
            self._discard_staged(saved.run_id)

    def _discard_staged(self, run_id: str) -> None:
        discard = getattr(self.runner, "discard_staged", None)
        if not callable(discard):
            return
        try:
            discard(run_id)
        except Exception as exc:  # noqa: BLE001 - a leftover staging is harmless; say so, never fail the run
            logger.warning("could not drop the staged batch of run {}: {}", run_id, exc)

    def _logged_report(self, node: Node, run_id: str) -> RunReport | None:
        """The report of ``run_id`` as the run log holds it (an approve/reject made outside the driver)."""
        getter = getattr(self.stores.lookup(node), "get", None)
        row = getter(run_id) if callable(getter) else None
        text = row.get("report_json") if isinstance(row, dict) else None
        if not text:
            return None
        return RunReport.model_validate(json.loads(text) if isinstance(text, str) else text)

    def _skip(self, node: Node, block: Block, window: Window) -> None:
        now = datetime.now(UTC)
        report = self._synthetic_report(node, window, RunStatus.SKIPPED, now)
        message = f"skipped: {block.describe()}" if block.root_cause else f"skipped: {block.reason}"
        report.warnings.append(message)
        outcome = Outcome(
            node.id,
            "skipped",
            report=report,
            skip_reason=block.reason,
            skip_detail=block.detail,
            upstream_cause=block.upstream_cause or None,
            root_cause=block.root_cause or None,
            started_at=now,
            finished_at=now,
            error=message,
        )
        self.outcomes[node.id] = outcome
        self._record(node, window, outcome)
        self.on_event(node.id, "skipped", outcome)

    # decisions -----------------------------------------------------------------------------

    def _window(self, node: Node) -> Window:
        if node.id not in self.windows:
            if node.id in self.resumed:
                self.windows[node.id] = self.resumed[node.id].window
            elif self.options.window_override is not None:
                self.windows[node.id] = self.options.window_override
            else:
                self._settle_commits(node)
                self.windows[node.id] = resolve_window(
                    self.options.window, node.name, as_of=self.as_of, store=self.stores.lookup(node)
                )
            self.windows[node.id] = not_past(self.windows[node.id], self.as_of)
        return self.windows[node.id]

    def _settle_commits(self, node: Node) -> None:
        """A run of the node that committed but stopped before its run-log row (a crash the operator did
        not ``--resume``) is recorded before its window is computed, so the window starts after it."""
        settle = getattr(self.runner, "settle_commits", None)
        store = self.stores.of(node)
        if callable(settle) and store is not None:
            settle(node, store)

    def _upstream_block(self, node_id: str, window: Window) -> tuple[Block | None, list[str]]:
        node = self.dag.nodes[node_id]
        meta = node.metadata
        warnings: list[str] = []
        for up in self.dag.upstreams(node_id):
            if up in self.outcomes:
                block = block_from_outcome(self.outcomes[up])
                if block is not None:
                    return block, warnings
                continue
            if up in self.scheduled:
                continue  # dry run: a scheduled upstream is assumed to succeed
            policy = FreshnessPolicy(
                strict=str(meta.get("upstream_policy") or "strict") != "warn",
                grace_hours=meta.get("upstream_grace_hours"),
                critical=self.dag.edge(up, node_id).critical and self.dag.nodes[up].entry.critical,
            )
            start = window.start if window.label != "full" else None
            upstream = self.dag.nodes[up]
            block, warning = check_unscheduled(
                up, upstream.name, store=self.stores.lookup(upstream), window_start=start, policy=policy
            )
            if warning:
                warnings.append(warning)
            if block is not None:
                return block, warnings
        return None, warnings

    # records -------------------------------------------------------------------------------

    def _synthetic_report(
        self, node: Node, window: Window, status: RunStatus, started: datetime
    ) -> RunReport:
        return synthetic_report(node, window, status, started, self.pipeline_run_id, self.options)

    def _intent_recorder(self, node: Node, window: Window, attempt: int) -> Callable[[RunReport], None]:
        """Called just before the node's target commit: refuses it once the node timed out, else writes
        the node's ``committing`` row (with the gate its outcome would have) in the store its outcome goes
        to (``commit_recovery``). Under the commit lock, so a timeout sees either no commit begun (and the
        commit is refused) or a begun one (whose row it leaves for the thread to finish)."""
        store = self.stores.of(node)

        def record(report: RunReport) -> None:
            with self._commit_lock:
                if node.id in self._timed_out:
                    raise RunHalted(f"{node.id} exceeded its timeout: its commit was not started")
                self._commits_begun.add(node.id)
                if store is None:
                    return
                if report.pipeline_run_id is None:
                    report.pipeline_run_id = self.pipeline_run_id
                gate = self._gate_of(node, report)
                try:
                    record_commit_intent(
                        report,
                        store=store,
                        entity=node.entity,
                        contract_file=str(node.contract_file),
                        backfill_id=self.options.backfill_id,
                        run_mode=window.run_mode,
                        attempts=attempt,
                        window_reason=window.reason,
                        gated=gate is not None,
                        gate_reason=gate,
                    )
                except Exception as exc:  # noqa: BLE001 - the commit goes ahead; only its recovery is lost
                    report.warnings.append(f"the run's commit intent was not recorded in the run log: {exc}")

        return record

    def _gate_of(self, node: Node, report: RunReport) -> str | None:
        """The gate a finished report of ``node`` closes (DRIVER §6), None when it passes."""
        threshold = quarantine_threshold(
            self.options.max_quarantine_ratio,
            node.entry.max_quarantine_ratio,
            node.metadata.get("max_quarantine_ratio"),
        )
        return evaluate_gates(report, threshold)

    def _record(self, node: Node, window: Window, outcome: Outcome, *, log: bool = True) -> None:
        if self.state is not None:
            self.state.record(outcome, window)
        store = self.stores.of(node)
        if store is not None and log:
            record_outcome(store, node, window, outcome, self.pipeline_run_id, self.options)
