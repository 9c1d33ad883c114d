"""Print a timeline of the SQL executions and jobs in a Spark event log (profiling aid).

Run a benchmark with the event log on, then point this at the log file::

    LAKELOGIC_SPARK_CONF="spark.eventLog.enabled=true;spark.eventLog.dir=/tmp/evl" \
        .venv/bin/python benchmarks/bench_materialize.py --rows 10000000 --strategies merge
    .venv/bin/python scripts/spark_timeline.py /tmp/evl/local-*

Each SQL execution is printed with its start offset, its duration, the jobs it ran (with their stage and
task counts) and the first line of its description, so gaps between statements (driver-side planning,
metadata queries) show up as well as the statements themselves. ``--since SECONDS`` skips the start of the
application (session start-up, warm-up), ``--min-ms`` hides short executions.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Job:
    job_id: int
    start: int
    end: int | None = None
    stages: int = 0
    tasks: int = 0


@dataclass
class Execution:
    execution_id: int
    description: str
    start: int
    end: int | None = None
    jobs: list[Job] = field(default_factory=list)


def _events(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _describe(event: dict[str, Any]) -> str:
    """The call site, and for ``spark.sql`` (whose call site says nothing) the root of the physical plan."""
    description = str(event.get("description", "")).strip().splitlines()
    text = description[0] if description else ""
    plan = str(event.get("physicalPlanDescription", "")).splitlines()
    if text.startswith("sql at") and len(plan) > 1:
        root = plan[1].lstrip("+-*() 0123456789")
        text = f"sql: {root}"
    return text


def timeline(events: list[dict[str, Any]]) -> tuple[int, list[Execution], list[Job]]:
    """The application's start time, its SQL executions and the jobs that belong to none."""
    app_start = 0
    executions: dict[int, Execution] = {}
    jobs: dict[int, Job] = {}
    loose: list[Job] = []
    for event in events:
        kind = event.get("Event", "")
        if kind == "SparkListenerApplicationStart":
            app_start = int(event["Timestamp"])
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            executions[event["executionId"]] = Execution(
                event["executionId"], _describe(event), int(event["time"])
            )
        elif kind.endswith("SparkListenerSQLExecutionEnd"):
            if event["executionId"] in executions:
                executions[event["executionId"]].end = int(event["time"])
        elif kind == "SparkListenerJobStart":
            job = Job(event["Job ID"], int(event["Submission Time"]), stages=len(event.get("Stage IDs", [])))
            jobs[job.job_id] = job
            props = event.get("Properties") or {}
            execution_id = props.get("spark.sql.execution.id")
            if execution_id is not None and int(execution_id) in executions:
                executions[int(execution_id)].jobs.append(job)
            else:
                loose.append(job)
            job.tasks = sum(int(info.get("Number of Tasks", 0)) for info in event.get("Stage Infos", []))
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]].end = int(event["Completion Time"])
    return app_start, sorted(executions.values(), key=lambda e: e.start), loose


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log", type=Path, help="a Spark event log file")
    parser.add_argument("--since", type=float, default=0.0, help="skip what starts before this many seconds")
    parser.add_argument("--min-ms", type=int, default=0, help="hide executions shorter than this")
    args = parser.parse_args()
    app_start, executions, loose = timeline(_events(args.log))
    previous_end: int | None = None
    for execution in executions:
        offset = (execution.start - app_start) / 1000
        if offset < args.since or execution.end is None:
            continue
        took = execution.end - execution.start
        gap = "" if previous_end is None else f"+{(execution.start - previous_end) / 1000:5.2f}"
        previous_end = execution.end
        if took < args.min_ms:
            continue
        job_text = " ".join(f"j{j.job_id}:{j.stages}s/{j.tasks}t" for j in execution.jobs)
        first_line = execution.description[:110]
        print(f"{offset:9.2f} {gap:>7} {took / 1000:6.2f}s  {first_line}  [{job_text}]")
    if loose:
        print(f"{len(loose)} jobs outside SQL executions")


if __name__ == "__main__":
    main()
