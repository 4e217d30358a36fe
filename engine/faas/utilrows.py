"""The ``utilization`` table's rows of one sample: one per placed replica, then one per node hosting replicas (the sums
of its replica rows), appended to plain column lists (cheap per sample; the world hands them to the recorder).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.cluster.model import Cluster
    from engine.faas.flow import RequestFlow
    from engine.faas.runtime import FunctionRuntime


def replica_rows(cluster: Cluster, flow: RequestFlow, rt: FunctionRuntime, now: float, interval: float, util: dict[str, list]) -> None:
    """One row per placed replica of ``rt`` for the sample at ``now`` over the last ``interval`` seconds."""
    t0 = now - interval
    for r in rt.live():
        if r.placed_at is None or r.node_index < 0:
            continue
        span = max(now - max(t0, r.placed_at), 1e-9)
        busy = r.busy_seconds(t0, now) / span
        cores = flow.cores_when_busy(r, busy)  # what cpu_cores(r, t0, now) gives, busy computed once
        node_cores = int(cluster.cpu_capacity[r.node_index]) / 1000.0  # plain numbers: numpy scalars cost per operation
        _, gpu, ram = r.resources
        request = rt.spec.cpu_millis / 1000.0
        memory_request = rt.spec.memory_mib * 2**20
        util["time"].append(now)
        util["scope"].append("replica")
        util["node"].append(r.node)
        util["replica"].append(r.id)
        util["function"].append(rt.name)
        util["cpu"].append(cores / node_cores)
        util["cpu_request"].append(cores / request)
        node_memory = float(cluster.memory_capacity[r.node_index])
        util["memory"].append(min(node_memory, max(memory_request, busy * ram * node_memory)))
        util["gpu"].append(min(1.0, busy * gpu))
        util["busy"].append(busy)


def node_rows(cluster: Cluster, now: float, util: dict[str, list]) -> None:
    """One row per node hosting replicas: the sums of its replica rows of this sample (plain dicts: cheap per tick)."""
    per: dict[str, list[float]] = {}
    for node, cpu, memory, gpu, busy in zip(util["node"], util["cpu"], util["memory"], util["gpu"], util["busy"], strict=True):
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
        util["time"].append(now)
        util["scope"].append("node")
        util["node"].append(node)
        util["replica"].append(None)
        util["function"].append(None)
        util["cpu"].append(min(1.0, cpu))
        util["cpu_request"].append(cores / allocated if allocated > 0 else math.nan)
        util["memory"].append(min(memory, float(cluster.memory_capacity[i])))
        util["gpu"].append(min(1.0, gpu))
        util["busy"].append(busy)
