"""Names of the hidden columns readers add; shared by the readers and the engines (pure constants)."""

from __future__ import annotations

CORRUPT_COLUMN = "_lakelogic_corrupt_record"
"""Raw text of a record the reader could not parse (PERMISSIVE mode); NULL for good records."""

SOURCE_FILE_COLUMN = "_lakelogic_source_file"
"""Path of the file a row came from (for lineage ``capture_source_path``); NULL for in-memory input."""

CORRUPT_REASON_COLUMN = "_lakelogic_corrupt_record_reason"
"""Why a record in :data:`CORRUPT_COLUMN` is malformed, when the reader knows more than "unparseable"
(a repeated JSON key); NULL otherwise. Only some reads have it."""
