"""The function world's tables, declared once (faas-sim's DataFrames, with its known defects fixed).

``invocations`` holds every generated request, each with its status when read: completed, in_flight (on a
replica, in its queue or in service), queued (held by the gateway) or rejected (with the reason): nothing is
dropped at the end of a run (faas-sim drops what is in flight when its benchmark ends). It is kept as numpy
columns by the request flow (about 50 bytes per request), not one Python object per request.
``utilization`` is sampled per node and per replica from the resource model and is never empty (faas-sim's
``utilization`` frame is: nothing logs that measurement).
"""

from __future__ import annotations

from engine.core.recorder import table

STATUSES = ("completed", "in_flight", "queued", "rejected")
REJECT_REASONS = ("", "queue_full", "concurrency_limit", "no_node")
STATES = ("conceived", "scheduling", "pending", "starting", "running", "draining", "removed")

INVOCATIONS = table(
    "invocations",
    "One row per generated request, in dispatch order, then the requests the gateway still holds; status as of the read.",
    [
        ("request", "int64", "request number within its function, in arrival order"),
        ("function", "string", "function name"),
        ("replica", "Int64", "the replica that served it (missing: queued or rejected)"),
        ("node", "string", "the replica's node"),
        ("arrival", "float64", "simulated seconds the request reached the gateway"),
        ("gateway_wait", "float64", "seconds held by the gateway (no replica ready; scale from zero)"),
        ("replica_wait", "float64", "seconds waiting in the replica's queue for a worker thread"),
        ("start", "float64", "execution start (NaN: not dispatched)"),
        ("execution", "float64", "execution seconds (concurrency, node speed and data transfer included)"),
        ("end", "float64", "execution end (NaN: not dispatched)"),
        ("response", "float64", "end - arrival (NaN: not dispatched)"),
        ("cold_start", "bool", "it waited for a replica to start (a cold start)"),
        ("status", "string", "completed | in_flight | queued | rejected (as of the read)"),
        ("reason", "string", "why rejected: queue_full | concurrency_limit | no_node"),
    ],
)

SCALE = table(
    "scale",
    "One row per change of a function's replica count: who decided it and why.",
    [
        ("time", "float64", "simulated seconds"),
        ("function", "string", "function name"),
        ("before", "int64", "replicas (ready + pending) before"),
        ("after", "int64", "replicas wanted after"),
        ("policy", "string", "the scaler (or gateway for a scale from zero, fault for a drain)"),
        ("reason", "string", "the scaler's reason"),
    ],
)

DECISIONS = table(
    "function_decisions",
    "One row per scaler round of each function: what it measured and wanted.",
    [
        ("time", "float64", "simulated seconds"),
        ("function", "string", "function name"),
        ("scaler", "string", "the scaler"),
        ("running", "int64", "ready replicas"),
        ("pending", "int64", "replicas conceived, scheduling or starting"),
        ("waiting", "int64", "requests waiting (gateway and replica queues)"),
        ("metric", "float64", "the value compared with the target (NaN: none)"),
        ("target", "float64", "the target (NaN: none)"),
        ("desired", "Int64", "replicas wanted (missing: hold)"),
        ("reason", "string", "why"),
    ],
)

SCHEDULE = table(
    "schedule",
    "One row per placement decision for a replica: where, among how many feasible nodes, which image, when.",
    [
        ("replica", "int64", "replica id"),
        ("function", "string", "function name"),
        ("image", "string", "the image tried (the deployment ranking falls back image by image)"),
        ("result", "string", "bind | fallback (no node, the next image is tried) | pending (no node for any image; waits)"),
        ("node", "string", "the chosen node (missing unless bind)"),
        ("feasible", "int64", "feasible nodes the filter found"),
        ("score", "Float64", "the chosen node's weighted score"),
        ("queued", "float64", "when the replica was conceived (simulated s)"),
        ("start", "float64", "when the scheduler took it"),
        ("finish", "float64", "start + the simulated decision cost (fixed + per node scored; never wall clock)"),
        ("pull_s", "Float64", "seconds to pull the missing image over the node's registry link"),
        ("decision", "int64", "row of the placements table's decision numbering (breakdowns)"),
    ],
)

LIFECYCLE = table(
    "replica_lifecycle",
    "Every state change of every replica: conceived, scheduling, pending, starting, running, draining, removed.",
    [
        ("time", "float64", "simulated seconds"),
        ("replica", "int64", "replica id"),
        ("function", "string", "function name"),
        ("state", "string", " | ".join(STATES)),
        ("node", "string", "its node (missing before placement)"),
        ("image", "string", "its image"),
        ("cause", "string", "what caused the change (the scaler, gateway, per_request, expired, fault, placed, pulled ...)"),
    ],
)

DEPLOYMENTS = table(
    "deployments",
    "One row per function deployment, as deployed at t=0 (live changes are parameter events).",
    [
        ("function", "string", "function name"),
        ("slot", "string", "its section (fn1 ...)"),
        ("images", "string", "deployment ranking, comma-separated"),
        ("cpu_millis", "int64", "cpu request per replica"),
        ("memory", "int64", "memory request per replica, bytes"),
        ("concurrency", "int64", "worker threads per replica (0: unbounded)"),
        ("load_balancer", "string", "round_robin | least_outstanding"),
        ("simulator", "string", "function simulator"),
        ("scaler", "string", "scaler"),
        ("min_replicas", "int64", "fewest replicas"),
        ("max_replicas", "int64", "most replicas"),
        ("arrival", "string", "arrival process"),
        ("rate", "float64", "base requests per second"),
    ],
)

FUNCTION_SAMPLES = table(
    "function_samples",
    "One row per function per run.sample_interval: requests by status (they always add up), replicas by state, latency.",
    [
        ("time", "float64", "simulated seconds"),
        ("function", "string", "function name"),
        ("generated", "int64", "requests generated so far"),
        ("completed", "int64", "completed so far"),
        ("in_flight", "int64", "on a replica now (queued there or in service)"),
        ("queued", "int64", "held by the gateway now"),
        ("rejected", "int64", "rejected so far"),
        ("arrivals", "int64", "requests arrived in the interval"),
        ("rps", "float64", "arrivals per second in the interval"),
        ("cold_starts", "int64", "requests dispatched in the interval that waited for a starting replica"),
        ("response_p50", "float64", "median response time of the requests dispatched in the interval (s; NaN if none)"),
        ("response_p95", "float64", "95th percentile of the same"),
        ("response_p99", "float64", "99th percentile of the same"),
        ("replicas_pending", "int64", "replicas conceived, scheduling or waiting for a node"),
        ("replicas_starting", "int64", "replicas pulling their image or starting"),
        ("replicas_running", "int64", "replicas ready"),
        ("replicas_draining", "int64", "replicas finishing what they hold"),
        ("replica_seconds", "float64", "cumulative replica lifetime (placed to removed), the cost measure"),
    ],
)

UTILIZATION = table(
    "utilization",
    "Sampled every run.sample_interval from the resource model: one row per replica and one per node hosting replicas.",
    [
        ("time", "float64", "simulated seconds"),
        ("scope", "string", "replica | node"),
        ("node", "string", "node name"),
        ("replica", "Int64", "replica id (missing for node rows)"),
        ("function", "string", "function name (missing for node rows)"),
        ("cpu", "float64", "share of the node's cpus in use over the interval (measured share per running request)"),
        ("cpu_request", "float64", "cpu in use / cpu requested (replica rows; node rows: of the node's requests)"),
        ("memory", "float64", "bytes in use (the measured ram share while requests run, at least the request)"),
        ("gpu", "float64", "share of the node's GPU in use"),
        ("busy", "float64", "mean requests in service over the interval"),
    ],
)

TABLES = (INVOCATIONS, SCALE, DECISIONS, SCHEDULE, LIFECYCLE, DEPLOYMENTS, FUNCTION_SAMPLES, UTILIZATION)
