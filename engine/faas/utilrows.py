"""The ``utilization`` table's rows of one sample: one per placed replica, then one per node hosting replicas (the sums
of its replica rows), as tuples in the table's column order (one append per row; the world transposes them once); and
a sample's response percentiles of the requests since the last one (:func:`response_percentiles`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from engine.core.quantiles import sorted_linear_percentiles
from engine.faas.observations import cores_used

if TYPE_CHECKING:
    from engine.cluster.model import Cluster
    from engine.faas.runtime import FunctionRuntime

#: A row: time, scope, node, replica, function, cpu, cpu_request, memory, gpu, busy (the table's column order).
Row = tuple


class NodeCapacities:
    """The cluster's node capacity columns as plain numbers, read once per sample (a numpy element costs per read); or,
    for the compiled rows (``lists`` off), the cluster's int64 columns themselves, read in place (a sample binds and
    releases nothing, so they hold what the lists would)."""

    __slots__ = ("cpu", "memory", "free_cpu")

    def __init__(self, cluster: Cluster, lists: bool = True):
        if lists:
            self.cpu: list[int] | np.ndarray = cluster.cpu_capacity.tolist()
            self.memory: list[int] | np.ndarray = cluster.memory_capacity.tolist()
            self.free_cpu: list[int] | np.ndarray = cluster.cpu_free.tolist()
        else:
            self.cpu, self.memory, self.free_cpu = cluster.cpu_capacity, cluster.memory_capacity, cluster.cpu_free


def replica_rows(nodes: NodeCapacities, rt: FunctionRuntime, now: float, interval: float, rows: list[Row]) -> None:
    """One row per placed replica of ``rt`` for the sample at ``now`` over the last ``interval`` seconds (the reference
    of the compiled twin in :mod:`engine.faas._ready`, see :func:`engine.faas.ready_loop.chosen_ready`)."""
    t0 = now - interval
    request = rt.spec.cpu_millis / 1000.0
    memory_request = rt.spec.memory_mib * 2**20
    name = rt.name
    add = rows.append
    cpu, memory = nodes.cpu, nodes.memory
    for r in rt.replicas.values():
        i = r.node_index
        if r.placed_at is None or i < 0:
            continue
        span = max(now - max(t0, r.placed_at), 1e-9)
        busy = r.busy_seconds(t0, now) / span
        node_cores = int(cpu[i]) / 1000.0
        share, gpu, ram = r.resources
        cores = cores_used(share, node_cores, busy)  # what flow.cpu_cores(r, t0, now) gives, busy computed once
        node_memory = float(memory[i])
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


def node_rows(cluster: Cluster, nodes: NodeCapacities, now: float, rows: list[Row]) -> None:
    """One row per node hosting replicas: the sums of its replica rows of this sample (``rows`` holds only those)."""
    per: dict[str, list[float]] = {}
    for _, _, node, _, _, cpu, _, memory, gpu, busy in rows:
        acc = per.setdefault(node, [0.0, 0.0, 0.0, 0.0])
        acc[0] += cpu
        acc[1] += memory
        acc[2] += gpu
        acc[3] += busy
    index = cluster.index
    for node in sorted(per):
        cpu, memory, gpu, busy = per[node]
        i = index[node]
        capacity = int(nodes.cpu[i])
        allocated = (capacity - int(nodes.free_cpu[i])) / 1000.0
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
                min(memory, float(nodes.memory[i])),
                min(1.0, gpu),
                busy,
            )
        )


def response_percentiles(rep: list, arr: list, start: list, exe: list, lo: int = 0) -> tuple[float, float, float]:
    """p50, p95, p99 of the responses of the served rows ``lo:`` of the tail lists, as ``np.percentile(response,
    [50, 95, 99])`` gives them (:mod:`engine.core.quantiles`: the same bits without numpy's cost per call).

    A sample's usual share of rows is sorted in Python; many rows go to numpy arrays first. The reference of the
    compiled twin in :mod:`engine.faas._ready` (see :func:`engine.faas.ready_loop.chosen_ready`).
    """
    if len(rep) - lo > 256:
        r, a, s, e = (np.asarray(c[lo:], dtype=np.float64) for c in (rep, arr, start, exe))
        ordered = np.sort((s + e - a)[r >= 0]).tolist()
    else:
        ordered = sorted([s + e - a for r, a, s, e in zip(rep[lo:], arr[lo:], start[lo:], exe[lo:], strict=True) if r >= 0])
    if not ordered:
        return (math.nan, math.nan, math.nan)
    p50, p95, p99 = sorted_linear_percentiles(ordered, (50, 95, 99))
    return p50, p95, p99
