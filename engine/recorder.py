"""What a run produces: fixed-interval samples, an event log, the autoscaler's decisions, optionally jobs.

Kept as columns of plain lists (cheap appends) and handed out as pandas DataFrames with stable
column names. Memory grows with simulated time (one row per sample interval, events per command),
never with the number of jobs unless the per-job log is on: whole-run wait percentiles come from a
fixed log-spaced histogram (0.1 % resolution).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SAMPLE_COLUMNS = {
    "time": "simulated seconds",
    "queue_length": "jobs waiting in the master's queue",
    "workers_booting": "worker VMs PENDING (placing, pulling, booting or resuming)",
    "workers_active": "worker VMs ACTIVE with the app RUNNING",
    "workers_shutting_down": "worker VMs draining after SHUTDOWN",
    "workers_suspended": "worker VMs SUSPENDED",
    "workers_failed": "worker VMs FAILED (not yet deleted)",
    "workers_total": "worker VMs listed by the cloud",
    "threads": "worker threads taking jobs",
    "time_left": "the autoscaler's latest estimate of seconds to drain the queue (NaN until measured)",
    "band_low": "MIN_AVG_TIME in force",
    "band_high": "MAX_AVG_TIME in force",
    "arrivals": "jobs arrived in the interval",
    "completions": "jobs completed in the interval",
    "arrived_total": "jobs arrived so far",
    "completed_total": "jobs completed so far",
    "in_service": "jobs being served",
    "wait_p50": "median wait of jobs started in the interval (s; NaN if none)",
    "wait_p95": "95th percentile wait of jobs started in the interval",
    "wait_p99": "99th percentile wait of jobs started in the interval",
    "vm_seconds": "cumulative VM running time (the autoscaler's accounts)",
    "pending_pods": "worker pods waiting for a node",
    "master_state": "cloud/app state of the master VM",
}

EVENT_COLUMNS = {
    "time": "simulated seconds",
    "kind": "command | vm | placement | fault | param | decision",
    "vm": "VM id (nullable)",
    "vm_type": "MASTER | WORKER",
    "command": "command kind, new VM state, or what happened",
    "rule": "the autoscaler rule that produced a command",
    "detail": "free text",
}

DECISION_COLUMNS = [
    "time",
    "action",
    "time_left",
    "avg_queue",
    "avg_time",
    "threads",
    "active",
    "suspended",
    "starting",
    "band_low",
    "band_high",
    "load",
    "commands",
    "policy",
    "metric",
    "target",
    "desired",
]

JOB_COLUMNS = ["job", "arrival", "start", "end", "worker", "aborted"]

# log-spaced wait histogram: bin 0 holds waits below 1 ms, then 0.1 % wide bins up to ~1e7 s
# (23,000 bins, 180 kB; coarser bins made different settings report identical percentiles)
_HIST_MIN = 1e-3
_HIST_STEP = np.log(1.001)
_HIST_BINS = int(np.log(1e10) / _HIST_STEP) + 2


class WaitHistogram:
    def __init__(self) -> None:
        self.counts = np.zeros(_HIST_BINS, dtype=np.int64)

    def add(self, waits: np.ndarray) -> None:
        if len(waits):
            idx = np.where(waits < _HIST_MIN, 0, np.log(np.maximum(waits, _HIST_MIN) / _HIST_MIN) / _HIST_STEP + 1).astype(np.int64)
            np.add.at(self.counts, np.minimum(idx, _HIST_BINS - 1), 1)

    def percentile(self, q: float) -> float:
        total = int(self.counts.sum())
        if total == 0:
            return float("nan")
        k = int(np.searchsorted(np.cumsum(self.counts), np.ceil(q / 100.0 * total)))
        if k == 0:
            return 0.0
        return float(_HIST_MIN * np.exp((k - 0.5) * _HIST_STEP))


class Recorder:
    def __init__(self) -> None:
        self.samples: dict[str, list] = {c: [] for c in SAMPLE_COLUMNS}
        self.events: dict[str, list] = {c: [] for c in EVENT_COLUMNS}
        self.decisions: dict[str, list] = {c: [] for c in DECISION_COLUMNS}
        self.waits = WaitHistogram()
        self.now = lambda: 0.0

    def event(self, kind: str, vm: int | None = None, vm_type: str | None = None, command: str = "", rule: str = "", detail: str = "") -> None:
        ev = self.events
        ev["time"].append(self.now())
        ev["kind"].append(kind)
        ev["vm"].append(vm)
        ev["vm_type"].append(vm_type)
        ev["command"].append(command)
        ev["rule"].append(rule)
        ev["detail"].append(detail)

    def sample(self, row: dict) -> None:
        for c, col in self.samples.items():
            col.append(row[c])

    def decision(self, row: dict) -> None:
        for c, col in self.decisions.items():
            col.append(row[c])

    @property
    def sample_count(self) -> int:
        return len(self.samples["time"])

    @property
    def event_count(self) -> int:
        return len(self.events["time"])

    def samples_frame(self, start: int = 0) -> pd.DataFrame:
        return pd.DataFrame({c: col[start:] for c, col in self.samples.items()})

    def events_frame(self, start: int = 0) -> pd.DataFrame:
        df = pd.DataFrame({c: col[start:] for c, col in self.events.items()})
        df["vm"] = df["vm"].astype("Int64")
        for c in ("kind", "vm_type", "command", "rule", "detail"):
            df[c] = df[c].astype("string")
        return df

    def decisions_frame(self, start: int = 0) -> pd.DataFrame:
        return pd.DataFrame({c: col[start:] for c, col in self.decisions.items()})
