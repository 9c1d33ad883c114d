"""The run-log store of each node (DRIVER §15.1).

A contract whose ``metadata.run_log_*`` names a store (set in the contract, or inherited from its system's
``storage.run_log``) keeps its rows there, as ``lakelogic run`` does for it: the driver records it there and
reads its windows (``last_success``) and its upstream freshness from there. Every other contract uses the
pipeline's store (``--run-log-*``, else the embedded default). The most specific setting wins, as everywhere
in the hierarchy; ``--set metadata.run_log_database=…`` redirects one run.

One store object per distinct setting, so each file keeps one writer connection per process.
"""

from __future__ import annotations

from lakelogic.driver.nodes import Node
from lakelogic.runlog import RunLogStore, names_store, open_store, store_settings


class NodeStores:
    """The pipeline's store plus the stores contracts name for themselves."""

    def __init__(self, default: RunLogStore | None) -> None:
        self.default = default
        self._named: dict[tuple[str | None, str | None, str | None], RunLogStore] = {}

    def of(self, node: Node) -> RunLogStore | None:
        """Where ``node``'s rows are written and read; None when the pipeline keeps no run log."""
        if self.default is None or not names_store(node.metadata):
            return self.default
        settings = store_settings(node.metadata, node.contract_file)
        if settings not in self._named:
            backend, database, table = settings
            self._named[settings] = open_store(database, table=table, backend=backend)
        return self._named[settings]
