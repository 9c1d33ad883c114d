"""The one exception tree of LakeLogic.

Every error LakeLogic raises derives from :class:`LakeLogicError`, so callers can catch one type.
Subtrees follow the pipeline: contract (loading/validation), plan (compilation), unsupported
(a feature an engine or format lacks), engine (execution), table (writes/commits), run (a run
that completed its steps but must not publish), registry/driver (multi-contract layer).

Each error carries ``error_type``: the short code the run report uses (SEMANTICS §22).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class LakeLogicError(Exception):
    """Root of every LakeLogic error."""

    error_type: str = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


# --- contract -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One problem found in a contract document.

    ``path`` is the YAML path (``quality.row_rules[2].sql``); ``line``/``column`` are 1-based and
    0 when unknown. ``allowed`` says what would have been accepted.
    """

    file: str
    path: str
    message: str
    line: int = 0
    column: int = 0
    value: str | None = None
    allowed: str | None = None
    suggestion: str | None = None

    def render(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}:{self.column}"
        text = f"{where}: {self.path or '<root>'}: {self.message}"
        if self.value is not None:
            text += f" (got {self.value})"
        if self.suggestion:
            text += f"; did you mean '{self.suggestion}'?"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        return text


class ContractError(LakeLogicError):
    """A contract (or hierarchy file) is invalid. Holds every problem found, not only the first."""

    error_type = "contract"

    def __init__(
        self,
        problems: list[Problem] | Problem | str,
        *,
        file: str = "<contract>",
        document: Mapping[str, Any] | None = None,
    ) -> None:
        # The document that failed validation, when there was one: `lakelogic validate` still checks the
        # SQL of its well-formed items, so one pass lists schema and SQL problems together.
        self.document = document
        if isinstance(problems, str):
            problems = [Problem(file=file, path="", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = problems
        lines = [p.render() for p in problems]
        head = f"{len(problems)} problem(s) in contract" if len(problems) != 1 else "invalid contract"
        super().__init__(head + ":\n  " + "\n  ".join(lines))


class InterpolationError(ContractError):
    """``${VAR}`` could not be resolved."""


# --- plan -----------------------------------------------------------------------------------


class PlanError(LakeLogicError):
    """The contract is well-formed but cannot be compiled (bad SQL, unknown column, phase clash)."""

    error_type = "plan"

    def __init__(self, message: str, *, yaml_path: str | None = None, hint: str | None = None) -> None:
        self.yaml_path = yaml_path
        self.reason = message  # without the path prefix, for callers that show the path themselves
        super().__init__(f"{yaml_path}: {message}" if yaml_path else message, hint=hint)


class PlanErrors(PlanError):
    """Several independent plan problems of one contract, reported together (``errors`` in order)."""

    def __init__(self, errors: list[PlanError]) -> None:
        self.errors = errors
        lines = "\n  ".join(str(e).replace("\n", "\n  ") for e in errors)
        super().__init__(f"{len(errors)} plan problems:\n  {lines}", yaml_path=None)


class UnsupportedError(LakeLogicError):
    """A feature the chosen engine, format or catalog does not support."""

    error_type = "unsupported"


class MissingDependencyError(UnsupportedError):
    """An optional library is not installed; the message says what to install."""


# --- engine / run ---------------------------------------------------------------------------


class EngineError(LakeLogicError):
    """Execution failed inside an engine."""

    error_type = "engine"


class SourceError(EngineError):
    """The source could not be read (missing path, bad format options)."""

    error_type = "source"


class MissingRequiredColumnError(EngineError):
    error_type = "missing_required_column"

    def __init__(self, columns: list[str], *, available: list[str] | None = None) -> None:
        self.columns = columns
        hint = f"available columns: {', '.join(available)}" if available else None
        super().__init__(f"required column(s) missing from the input: {', '.join(columns)}", hint=hint)


class EmptySourceError(EngineError):
    error_type = "empty_source"


class CleanupFailedError(SourceError):
    """Blocking post-ingestion cleanup (§17) failed; the run's data is committed and stays so."""

    error_type = "cleanup_failed"


class ExternalLogicError(EngineError):
    error_type = "external_logic"


class RunHalted(LakeLogicError):
    """The run computed its result but a policy forbids publishing it."""

    error_type = "run"


class DatasetRuleHalt(RunHalted):
    error_type = "dataset_rule_halt"


class QuarantineHalt(RunHalted):
    error_type = "quarantine_halt"


class ReconciliationError(RunHalted):
    error_type = "reconciliation"


# --- tables ---------------------------------------------------------------------------------


class TableError(LakeLogicError):
    error_type = "table"


class CommitError(TableError):
    error_type = "commit"


class CommitConflictError(CommitError):
    """Another writer committed to the target while this run was writing (optimistic concurrency): the
    run's commit was refused and nothing of it is visible. Transient: a retry recomputes on the new
    state, and the commit markers keep it exactly-once."""

    error_type = "commit_conflict"


class SchemaEvolutionError(TableError):
    """Batch and target schemas differ in a way the schema policy forbids. ``drift`` (set by the table
    layer when known) lists every difference, so the report can show it although nothing was written."""

    error_type = "schema_evolution"
    drift: object = None


class MergeKeyError(TableError):
    """Duplicate or NULL keys make a merge/SCD2 batch ambiguous."""

    error_type = "merge_keys"


# --- registry / driver ----------------------------------------------------------------------


class ApprovalError(LakeLogicError):
    """A bad approval file, or an approve/reject of a batch that is not staged (DRIVER §11)."""

    error_type = "approval"


class RegistryError(LakeLogicError):
    error_type = "registry"


class DagError(RegistryError):
    error_type = "dag"


@dataclass
class ErrorInfo:
    """Serializable error block of a run report."""

    type: str
    message: str
    step: str | None = None
    traceback: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
