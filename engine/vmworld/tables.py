"""The VM world's tables, declared once: fixed-interval samples, the controller's rounds, and (optionally) jobs."""

from __future__ import annotations

import math
from typing import Any

from engine.core.recorder import table
from engine.vmworld.rounds import ControlRound

SAMPLES = table(
    "samples",
    "One row per run.sample_interval: the queue, workers by state, the drain estimate and its band, throughput, waits, cost.",
    [
        ("time", "float64", "simulated seconds"),
        ("queue_length", "int64", "jobs waiting in the master's queue"),
        ("workers_booting", "int64", "worker VMs PENDING (placing, pulling, booting or resuming)"),
        ("workers_active", "int64", "worker VMs ACTIVE with the app RUNNING"),
        ("workers_shutting_down", "int64", "worker VMs draining after SHUTDOWN"),
        ("workers_suspended", "int64", "worker VMs SUSPENDED"),
        ("workers_failed", "int64", "worker VMs FAILED (not yet deleted)"),
        ("workers_total", "int64", "worker VMs listed by the cloud"),
        ("threads", "int64", "worker threads taking jobs"),
        ("time_left", "float64", "the controller's latest estimate of seconds to drain the queue (NaN until measured)"),
        ("band_low", "float64", "MIN_AVG_TIME in force"),
        ("band_high", "float64", "MAX_AVG_TIME in force"),
        ("arrivals", "int64", "jobs arrived in the interval"),
        ("completions", "int64", "jobs completed in the interval"),
        ("arrived_total", "int64", "jobs arrived so far"),
        ("completed_total", "int64", "jobs completed so far"),
        ("in_service", "int64", "jobs being served"),
        ("wait_p50", "float64", "median wait of jobs started in the interval (s; NaN if none)"),
        ("wait_p95", "float64", "95th percentile wait of jobs started in the interval"),
        ("wait_p99", "float64", "99th percentile wait of jobs started in the interval"),
        (
            "vm_seconds",
            "float64",
            "cumulative VM time from the cloud's state changes: every VM while booting, resuming or ACTIVE (not SUSPENDED, FAILED or deleted)",
        ),
        (
            "vm_seconds_logged",
            "float64",
            "cumulative VM running time as the original controller logs it: opened and closed when commands are sent, refused ones too",
        ),
        ("pending_pods", "int64", "worker pods waiting for a node"),
        ("master_state", "string", "cloud/app state of the master VM"),
    ],
)

DECISIONS = table(
    "decisions",
    "One row per controller round (every DECISION_INTERVAL): what it saw, what the policy decided, how many commands went out.",
    [
        ("time", "float64", "simulated seconds"),
        ("action", "string", "waiting_for_master | master_recovery | master_recovered | not_measured | scale_in | scale_out | hold"),
        ("time_left", "float64", "queue drain: seconds the active workers need to drain the queue (NaN unless measured)"),
        ("avg_queue", "float64", "queue drain: mean queue length over the master's last MIN_MEASURE_LOAD_HB heartbeats"),
        ("avg_time", "float64", "mean average task time of the active workers (s)"),
        ("threads", "int64", "worker threads of the active workers"),
        ("active", "int64", "active workers (ACTIVE, newest heartbeat RUNNING, not being deleted)"),
        ("suspended", "int64", "suspended workers"),
        ("starting", "int64", "workers whose last command is CREATE or RESUME"),
        ("band_low", "float64", "MIN_AVG_TIME in force"),
        ("band_high", "float64", "MAX_AVG_TIME in force"),
        ("load", "float64", "mean load of the measured RUNNING workers (rule 7)"),
        ("commands", "int64", "commands sent this round"),
        ("policy", "string", "the scaling policy in charge"),
        ("metric", "float64", "the value the policy compared with its target"),
        ("target", "float64", "the policy's target"),
        ("desired", "Int64", "replicas the policy wants (serving + pending); missing when it held or did not measure"),
        ("stuck", "bool", "work is queued, no worker serves or starts, some are suspended, and nothing will resume them"),
    ],
)

JOBS = table(
    "jobs",
    "One row per started job (run.record_jobs only); an aborted row was re-queued when its worker left.",
    [
        ("job", "int64", "job number, in arrival order"),
        ("arrival", "float64", "simulated seconds"),
        ("start", "float64", "simulated seconds"),
        ("end", "float64", "simulated seconds (planned, for an aborted row)"),
        ("worker", "int64", "worker VM id"),
        ("aborted", "bool", "its worker left before it ended; the job went back to the head of the queue"),
        ("left", "float64", "when its worker left (aborted rows; NaN otherwise)"),
    ],
)


def _float(x: float | None) -> float:
    return math.nan if x is None else float(x)


def decision_row(r: ControlRound) -> dict[str, Any]:
    """A controller round as a row of :data:`DECISIONS`."""
    return {
        "time": r.time,
        "action": r.action,
        "time_left": _float(r.time_left),
        "avg_queue": _float(r.avg_queue),
        "avg_time": _float(r.avg_time),
        "threads": r.threads,
        "active": r.active,
        "suspended": r.suspended,
        "starting": r.starting,
        "band_low": r.band_low,
        "band_high": r.band_high,
        "load": _float(r.load),
        "commands": len(r.commands),
        "policy": r.policy or "",
        "metric": _float(r.metric),
        "target": _float(r.target),
        "desired": r.desired,
        "stuck": r.stuck,
    }
