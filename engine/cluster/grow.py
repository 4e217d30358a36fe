"""A built cluster with more nodes appended: the nodes a node autoscaler may launch, known before the run starts.

The cluster's columns have a fixed length (the scheduler scans them as arrays), so every node a node group can
ever have is appended once, when the world is built; which of them exist at a given time is their state (see
:mod:`engine.nodescaling`). The existing nodes keep their positions, labels and state (free resources, GPU
devices, pods, image caches, storage links); the appended ones start empty, with no image cached and the
default storage bandwidth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.cluster.model import Cluster, NodeSpec


def node_specs(cluster: Cluster) -> list[NodeSpec]:
    """The nodes of ``cluster`` as specs again (capacities, labels, speed, GPUs, bandwidth, taints, pod limit)."""
    return [
        NodeSpec(
            name,
            int(cluster.cpu_capacity[i]),
            int(cluster.memory_capacity[i]),
            cluster.node_labels(i),
            speed=float(cluster.speed[i]),
            gpus=float(cluster.gpu_count[i]),
            registry_bandwidth=float(cluster.registry_bandwidth[i]),
            taints=cluster.taints[i],
            max_pods=int(cluster.pod_capacity[i]),
        )
        for i, name in enumerate(cluster.names)
    ]


def with_nodes(cluster: Cluster, extra: Sequence[NodeSpec]) -> Cluster:
    """A new cluster: ``cluster``'s nodes (state kept) followed by ``extra`` (empty); ``cluster`` itself is unchanged."""
    if not extra:
        return cluster
    n = cluster.n
    grown = Cluster([*node_specs(cluster), *extra], cluster.registry, cluster.storage)
    grown.cpu_free[:n] = cluster.cpu_free
    grown.memory_free[:n] = cluster.memory_free
    devices = cluster.gpu_milli_free.shape[1]
    grown.gpu_milli_free[:n] = 0
    grown.gpu_milli_free[:n, :devices] = cluster.gpu_milli_free
    kinds = cluster.gpu_pods_by_kind.shape[1]
    grown.gpu_pods_by_kind[:n, :kinds] = cluster.gpu_pods_by_kind
    grown.pods[:n] = cluster.pods
    grown.schedulable[:n] = cluster.schedulable
    grown.version[:n] = cluster.version
    grown.image_cached = np.zeros((cluster.image_cached.shape[0], grown.n), dtype=bool)
    grown.image_cached[:, :n] = cluster.image_cached
    grown.image_nodes = cluster.image_nodes.copy()
    # storage links: the new nodes get the default bandwidth to and from every storage node
    down = np.full((len(grown.storage_nodes), grown.n), 125e6)
    up = down.copy()
    down[:, :n] = cluster.storage_down
    up[:, :n] = cluster.storage_up
    grown.set_storage_bandwidth(down, up)
    return grown
