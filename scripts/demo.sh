#!/usr/bin/env bash
# Runs the retail example mesh end to end on the embedded defaults: Spark local[*], a local Iceberg warehouse
# and the embedded DuckDB run log, both under .lakelogic/demo/ (reset on every run, so the demo is repeatable
# and never touches other work in .lakelogic/).
#
# Two business days are replayed, each as two `lakelogic-driver` invocations:
#   1. bronze: land that day's files (every file name carries its date),
#   2. silver + gold: clean, validate, quarantine, merge, and publish the dimensions and the fact.
# Day 2 brings changed customer segments/countries, so gold.dim_customers ends with closed SCD2 versions.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

venv_bin="${VENV:-.venv}/bin"
registry="examples/retail/contracts"
demo_home=".lakelogic/demo"

rm -rf "${demo_home}"
mkdir -p "${demo_home}"
export LAKELOGIC_HOME="${PWD}/${demo_home}"
export LAKELOGIC_WAREHOUSE="${PWD}/${demo_home}/warehouse"

driver_flags=(--registry "${registry}" --max-workers 2)
if [[ -t 1 && -z "${CI:-}" ]]; then
  driver_flags+=(--live)
else
  driver_flags+=(--no-live)
  export COLUMNS="${COLUMNS:-160}"  # tables stay readable in logs
fi

run_day() {
  local day="$1"
  echo
  echo "== ${day}: bronze lands the files of the day =="
  "${venv_bin}/lakelogic-driver" "${driver_flags[@]}" --layers bronze --window none \
    --set "source.pattern='*_${day}.*'"  # quoted: a --set value is YAML, and a bare * is an alias
  echo
  echo "== ${day}: silver and gold =="
  "${venv_bin}/lakelogic-driver" "${driver_flags[@]}" --layers silver,gold \
    --summary-path "${demo_home}/summary_${day}.json"
}

echo "== LakeLogic retail demo: ${registry} =="
echo "warehouse ${LAKELOGIC_WAREHOUSE}, run log ${LAKELOGIC_HOME}/lakelogic.duckdb"
run_day 2026-11-01
run_day 2026-11-02

echo
echo "== Run log =="
"${venv_bin}/lakelogic" runs --last 22
echo
echo "Inspect it yourself:"
echo "  LAKELOGIC_HOME=${demo_home} ${venv_bin}/lakelogic runs --contract silver_crm_customers --json"
echo "  LAKELOGIC_HOME=${demo_home} ${venv_bin}/lakelogic dag --registry ${registry} --format mermaid"
