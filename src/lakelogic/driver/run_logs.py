"""The run-log store of each node (DRIVER §15.1).

A contract whose ``metadata.run_log_*`` names a store (set in the contract, or inherited from its system's
``storage.run_log``) keeps its rows there, as ``lakelogic run`` does for it: the driver records it there and
reads its windows (``last_success``) and its upstream freshness from there. Every other contract uses the
pipeline's store (``--run-log-*``, else the embedded default), and a contract naming only its table keeps
the pipeline store's location. The most specific setting wins, as everywhere in the hierarchy;
``--set metadata.run_log_database=…`` redirects one run.

Reads fall back to the pipeline's store while a node's own store holds no row of its contract at all: a
setting added to a contract that already ran (or the upgrade that started honouring ``storage.run_log``)
must not turn its next ``last_success`` window into a full reload.

One store object per distinct setting, so each file keeps one writer connection per process.
"""

from __future__ import annotations

from typing import Any

from lakelogic.driver.nodes import Node
from lakelogic.runlog import RunLogStore, names_store, store_for_metadata, store_settings


class NodeStores:
    """The pipeline's store plus the stores contracts name for themselves."""

    def __init__(self, default: RunLogStore | None) -> None:
        self.default = default
        self._named: dict[tuple[str | None, str | None, str | None], RunLogStore] = {}

    def of(self, node: Node) -> RunLogStore | None:
        """Where ``node``'s rows are written; None when the pipeline keeps no run log."""
        if self.default is None or not names_store(node.metadata):
            return self.default
        settings = store_settings(node.metadata, node.contract_file)
        if settings not in self._named:
            self._named[settings] = store_for_metadata(
                node.metadata, node.contract_file, default=self.default
            )
        return self._named[settings]

    def lookup(self, node: Node) -> Any:
        """What ``node``'s history is read from: its own store, or the pipeline's while its own holds
        nothing of its contract (see the module docstring)."""
        own = self.of(node)
        if own is None or own is self.default or self.default is None:
            return own
        return _Fallback(own, self.default)


class _Fallback:
    """Run-log reads of one contract from its own store, else from the pipeline's."""

    def __init__(self, own: RunLogStore, pipeline: RunLogStore) -> None:
        self.own, self.pipeline = own, pipeline

    def _for(self, contract: str) -> RunLogStore:
        if self.own.exists() and self.own.query(contract=contract, last=1):
            return self.own
        return self.pipeline if self.pipeline.exists() else self.own

    def exists(self) -> bool:
        return self.own.exists() or self.pipeline.exists()

    def last_success(self, contract: str) -> dict[str, Any] | None:
        return self._for(contract).last_success(contract)

    def latest_run(self, contract: str) -> dict[str, Any] | None:
        return self._for(contract).latest_run(contract)

    def last_cursor(self, contract: str, field: str) -> dict[str, Any] | None:
        return self._for(contract).last_cursor(contract, field)

    def get(self, run_id: str) -> dict[str, Any] | None:
        found = self.own.get(run_id) if self.own.exists() else None
        if found is None and self.pipeline.exists():
            found = self.pipeline.get(run_id)
        return found
