"""Soak: 24 simulated hours of the busiest shipped scenario; memory per simulated hour, and the per-job log's cost.

```
.venv/bin/python benchmarks/soak.py            # 24 simulated hours (~1-2 min)
.venv/bin/python benchmarks/soak.py --quick    # 6 simulated hours
```

The busiest shipped scenario is ``azure-trace`` (a day of one Azure Functions 2019 function replayed 12x faster:
~107 jobs/s at its peak); it loops here (``workload.trace_loop``) so that 24 hours stay busy. The run advances
hour by hour; after each hour the traced heap (``tracemalloc``, after a full collection) and the recorder's
own tables are measured. The bound: memory flat after the first hour's warm-up, growing less than 1 MiB per
simulated hour with sampling only (the slope of a least-squares line over hours 2..N). Then the same scenario
with ``run.record_jobs`` for one hour: bytes per job of the per-job log (the jobs table's rows). Last line:
``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Scenario, Simulation, load_scenario  # noqa: E402

GOAL_BYTES_PER_HOUR = 2**20
HOUR = 3600.0


def _deep_size(obj, seen: set[int]) -> int:
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple):
        size += sum(_deep_size(v, seen) for v in obj)
    elif isinstance(obj, np.ndarray):
        size += obj.nbytes
    return size


def busiest(record_jobs: bool, hours: float) -> Scenario:
    data = load_scenario("azure-trace").to_dict()
    data["workload"]["trace_loop"] = True
    data["run"].update(duration=hours * HOUR, record_jobs=record_jobs)
    return Scenario.from_dict(data, origin="benchmarks/soak.py")


def recorder_bytes(sim: Simulation) -> int:
    seen: set[int] = set()
    return sum(_deep_size(sim.recorder.raw(t), seen) for t in ("samples", "events", "decisions"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 simulated hours instead of 24")
    args = ap.parse_args()
    hours = 6 if args.quick else 24
    load = os.getloadavg()
    print(f"soak: azure-trace looped, {hours} simulated hours, sampling only; python {platform.python_version()}, load {load[0]:.2f}")
    sim = Simulation(busiest(False, hours))
    gc.collect()
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    rows = []
    for h in range(1, hours + 1):
        sim.advance(h * HOUR)
        gc.collect()
        heap, _ = tracemalloc.get_traced_memory()
        rows.append((h, heap, recorder_bytes(sim), sim.summary()["jobs_completed"]))
        print(f"  hour {h:2d}: heap {heap / 2**20:7.2f} MiB   recorder {rows[-1][2] / 2**20:6.2f} MiB   jobs {rows[-1][3]:,}", flush=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tracemalloc.stop()
    h = np.array([r[0] for r in rows[1:]], dtype=float)
    heap = np.array([r[1] for r in rows[1:]], dtype=float)
    rec = np.array([r[2] for r in rows[1:]], dtype=float)
    slope = float(np.polyfit(h, heap, 1)[0]) if len(h) > 1 else 0.0
    rec_slope = float(np.polyfit(h, rec, 1)[0]) if len(h) > 1 else 0.0
    jobs = rows[-1][3]

    probe = Simulation(busiest(True, 1))
    probe.run()
    log = probe.platform.jobs.rows
    per_job = _deep_size(log, set()) / max(len(log), 1)

    ok = slope < GOAL_BYTES_PER_HOUR
    print(
        f"heap growth after warm-up: {slope / 2**10:,.0f} KiB per simulated hour (goal < {GOAL_BYTES_PER_HOUR / 2**10:,.0f} KiB)  {'ok' if ok else 'MISSED'}"
    )
    print(f"  of which the recorder's tables: {rec_slope / 2**10:,.0f} KiB per simulated hour")
    print(f"per-job log (run.record_jobs): {per_job:,.0f} bytes per job ({len(log):,} rows in one hour)")
    print(f"{jobs:,} jobs in {wall:.1f} s wall ({cpu:.1f} s CPU) under tracemalloc")
    if not ok:
        print(f"GOAL MISSED: heap grows {slope / 2**20:.2f} MiB per simulated hour")
    result = {
        "hours": hours,
        "heap_bytes_per_hour": slope,
        "recorder_bytes_per_hour": rec_slope,
        "heap_by_hour": [r[1] for r in rows],
        "jobs": jobs,
        "job_log_bytes_per_job": per_job,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "loadavg_at_start": list(load),
        "goals": {"heap_bytes_per_hour": GOAL_BYTES_PER_HOUR},
        "goals_met": {"heap_flat": ok},
    }
    print("RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
