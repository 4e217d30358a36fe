"""The ``utilization`` table's rows of one sample: one per placed replica, then one per node hosting replicas (the sums
of its replica rows), as tuples in the table's column order (one append per row; the world transposes them once).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.cluster.model import Cluster
    from engine.faas.flow import RequestFlow
    from engine.faas.runtime import FunctionRuntime

#: A row: time, scope, node, replica, function, cpu, cpu_request, memory, gpu, busy (the table's column order).
Row = tuple


def replica_rows(cluster: Cluster, flow: RequestFlow, rt: FunctionRuntime, now: float, interval: float, rows: list[Row]) -> None:
    """One row per placed replica of ``rt`` for the sample at ``now`` over the last ``interval`` seconds."""
    t0 = now - interval
    request = rt.spec.cpu_millis / 1000.0
    memory_request = rt.spec.memory_mib * 2**20
    name = rt.name
    add = rows.append
    for r in rt.live():
        if r.placed_at is None or r.node_index < 0:
            continue
        span = max(now - max(t0, r.placed_at), 1e-9)
        busy = r.busy_seconds(t0, now) / span
        cores = flow.cores_when_busy(r, busy)  # what cpu_cores(r, t0, now) gives, busy computed once
        node_cores = int(cluster.cpu_capacity[r.node_index]) / 1000.0  # plain numbers: numpy scalars cost per operation
        _, gpu, ram = r.resources
        node_memory = float(cluster.memory_capacity[r.node_index])
        add(
            (
                now,
                "replica",
                r.node,
                r.id,
                name,
                cores / node_cores,
                cores / request,
                min(node_memory, max(memory_request, busy * ram * node_memory)),
                min(1.0, busy * gpu),
                busy,
            )
        )


def node_rows(cluster: Cluster, now: float, rows: list[Row]) -> None:
    """One row per node hosting replicas: the sums of its replica rows of this sample (``rows`` holds only those)."""
    per: dict[str, list[float]] = {}
    for _, _, node, _, _, cpu, _, memory, gpu, busy in rows:
        acc = per.setdefault(node, [0.0, 0.0, 0.0, 0.0])
        acc[0] += cpu
        acc[1] += memory
        acc[2] += gpu
        acc[3] += busy
    for node in sorted(per):
        cpu, memory, gpu, busy = per[node]
        i = cluster.index[node]
        capacity = int(cluster.cpu_capacity[i])
        allocated = (capacity - int(cluster.cpu_free[i])) / 1000.0
        cores = cpu * capacity / 1000.0
        rows.append(
            (
                now,
                "node",
                node,
                None,
                None,
                min(1.0, cpu),
                cores / allocated if allocated > 0 else math.nan,
                min(memory, float(cluster.memory_capacity[i])),
                min(1.0, gpu),
                busy,
            )
        )
