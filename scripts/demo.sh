#!/usr/bin/env bash
# Runs the retail example mesh end to end on the embedded defaults:
# Spark local[*], the local Iceberg warehouse under .lakelogic/warehouse, the DuckDB run log under .lakelogic/.
#
# The whole mesh runs as one `lakelogic-driver` invocation: bronze -> silver -> gold as a layered DAG,
# dimensions before the fact. The default window is `last_success`, so a second `make demo` only picks up
# landing files that arrived since the previous successful run.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

venv_bin="${VENV:-.venv}/bin"
contracts="examples/retail/contracts"
out=".lakelogic/demo"
mkdir -p "${out}"

live_flag="--no-live"
if [[ -t 1 && -z "${CI:-}" ]]; then
  live_flag="--live"
else
  export COLUMNS="${COLUMNS:-160}"  # tables stay readable in logs
fi

echo "== LakeLogic retail demo =="
echo "registry: ${contracts}   warehouse: ${LAKELOGIC_WAREHOUSE:-.lakelogic/warehouse}"
status=0
"${venv_bin}/lakelogic-driver" \
  --registry "${contracts}" \
  --max-workers 2 \
  "${live_flag}" \
  --summary-path "${out}/summary.json" "$@" || status=$?

echo
echo "== Run log: latest runs =="
"${venv_bin}/lakelogic" runs --last 11 || echo "(the run log could not be read)"
echo
echo "pipeline summary: ${out}/summary.json"
echo "tables: ${LAKELOGIC_WAREHOUSE:-.lakelogic/warehouse}/{bronze,silver,gold,quarantine}"
exit "${status}"
