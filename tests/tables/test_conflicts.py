"""Concurrent-commit refusals become CommitConflictError (retried by the driver); other errors do not."""

from __future__ import annotations

import pytest

from lakelogic.driver.execution import is_transient
from lakelogic.errors import CommitConflictError, CommitError, SchemaEvolutionError
from lakelogic.tables.conflicts import as_conflict


class ConcurrentAppendException(Exception):
    """Stands in for Delta's exception of that name (matched by name as well as by message)."""


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("Cannot fast-forward: main is not an ancestor of lakelogic_abc"),
        RuntimeError("org.apache.iceberg.exceptions.CommitFailedException: metadata location changed"),
        RuntimeError("ValidationException: Found conflicting files that can contain records matching true"),
        ConcurrentAppendException("Files were added to the root of the table by a concurrent update"),
        OSError("Generic DeltaTable error: Transaction failed: version already exists: 7"),
    ],
)
def test_concurrent_commit_refusals_are_retryable_conflicts(error: BaseException) -> None:
    conflict = as_conflict(error, "lakelogic.silver.orders")
    assert isinstance(conflict, CommitConflictError) and isinstance(conflict, CommitError)
    assert "lakelogic.silver.orders" in str(conflict)
    assert is_transient(conflict)


def test_a_conflict_is_found_behind_a_wrapping_error() -> None:
    try:
        try:
            raise RuntimeError("Cannot fast-forward: main is not an ancestor of lakelogic_x")
        except RuntimeError as inner:
            raise CommitError("writing iceberg target t failed") from inner
    except CommitError as outer:
        assert as_conflict(outer, "t") is not None


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("Cannot write incompatible data to table: cannot cast amount"),
        PermissionError("Access Denied"),
        SchemaEvolutionError("column amount: decimal(12,2) -> string is not allowed"),
    ],
)
def test_other_write_failures_are_not_conflicts(error: BaseException) -> None:
    assert as_conflict(error, "t") is None
    assert not is_transient(CommitError(str(error)))
