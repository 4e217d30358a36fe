"""Can any node of a cluster ever host the worker pod a cluster section describes?

Checked once the cluster is built (its nodes are known only then: synthesized layouts draw them from the run's
seed), against every node's capacity, not what is free: a worker no node can ever host would leave every worker
pending and the run without a job served, silently.
"""

from __future__ import annotations

import numpy as np

from engine.cluster.model import GPU_MODEL, Cluster, MiB, gpu_request
from engine.cluster.params import ClusterParams
from engine.core.params import ParamError


def _largest(cluster: Cluster, column: np.ndarray) -> str:
    return cluster.names[int(np.argmax(column))]


def check_worker_fits(cluster: Cluster, params: ClusterParams) -> None:
    """Raise :class:`ParamError` naming the field, its value and the largest node when no node can host the worker."""
    cpu, memory_mib = params.worker_cpu_millis, params.worker_memory_mib
    devices = gpu_request(params.worker_gpus)[0] if params.worker_gpus > 0 else 0
    if cpu > cluster.cpu_capacity.max():
        node = _largest(cluster, cluster.cpu_capacity)
        raise ParamError(
            "cluster.worker_cpu_millis",
            f"{cpu} millicores is more than any node has; allowed: at most {int(cluster.cpu_capacity.max())} (node {node}, the largest)",
        )
    if memory_mib * MiB > cluster.memory_capacity.max():
        node = _largest(cluster, cluster.memory_capacity)
        most = int(cluster.memory_capacity.max() // MiB)
        raise ParamError(
            "cluster.worker_memory_mib", f"{memory_mib} MiB is more than any node has; allowed: at most {most} (node {node}, the largest)"
        )
    if devices > cluster.gpu_count.max():
        node = _largest(cluster, cluster.gpu_count)
        most = int(cluster.gpu_count.max())
        raise ParamError(
            "cluster.worker_gpus",
            f"{params.worker_gpus:g} GPU(s) is more than any node has; allowed: at most {most}"
            + (f" (node {node}, the largest)" if most else ""),
        )
    hosts = (cluster.cpu_capacity >= cpu) & (cluster.memory_capacity >= memory_mib * MiB) & (cluster.gpu_count >= devices)
    models = [m for m in params.worker_gpu_models.split("|") if m]
    if models:
        known = sorted(set(cluster.label_values.get(GPU_MODEL, [])))
        if not set(models) & set(known):
            raise ParamError(
                "cluster.worker_gpu_models",
                f"{params.worker_gpu_models!r}: no node has that GPU model; allowed: "
                + (
                    f"models of this cluster's nodes ({'|'.join(known)}), or empty for any"
                    if known
                    else "empty (no node names a GPU model)"
                ),
            )
        hosts &= np.logical_or.reduce([cluster.label_equals(GPU_MODEL, m) for m in models])
    if not hosts.any():
        # each request fits some node, but no node has them all at once
        best = int(np.argmax(cluster.cpu_capacity * (cluster.gpu_count >= devices)))
        raise ParamError(
            "cluster.worker_cpu_millis",
            f"{cpu} millicores with {memory_mib} MiB"
            + (f" and {params.worker_gpus:g} GPU(s)" if devices else "")
            + (f" of model {params.worker_gpu_models}" if models else "")
            + " fit no single node; allowed: a smaller worker (node "
            + f"{cluster.names[best]}: {int(cluster.cpu_capacity[best])} millicores, {int(cluster.memory_capacity[best] // MiB)} MiB, "
            + f"{int(cluster.gpu_count[best])} GPU(s))",
        )
