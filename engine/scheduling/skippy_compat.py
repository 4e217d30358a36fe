"""Bridge to edgerun-skippy-core 0.1.1 (a test and benchmark dependency, imported lazily).

Builds skippy's ClusterContext from a :class:`Cluster` (same node order, capacities, labels, image caches,
bandwidths and storage index), translates pods, and builds a skippy Scheduler with our weights, so that
placements can be compared pod for pod.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.model import Cluster, Pod
from engine.scheduling.params import SchedulerParams

SKIPPY_PRIORITY_CLASSES = {
    "balanced_resource": "BalancedResourcePriority",
    "latency_aware_image_locality": "LatencyAwareImageLocalityPriority",
    "locality_type": "LocalityTypePriority",
    "data_locality": "DataLocalityPriority",
    "capability": "CapabilityPriority",
    "image_locality": "ImageLocalityPriority",
}


def skippy_context(cluster: Cluster) -> Any:
    """A skippy ``ClusterContext`` holding the same cluster state."""
    from skippy.core.clustercontext import ClusterContext
    from skippy.core.model import Capacity, ImageState, Node
    from skippy.core.storage import DataItem, StorageIndex

    names = cluster.names
    nodes = [
        Node(
            names[i],
            capacity=Capacity(int(cluster.cpu_capacity[i]), int(cluster.memory_capacity[i])),
            allocatable=Capacity(int(cluster.cpu_free[i]), int(cluster.memory_free[i])),
            labels=cluster.node_labels(i),
        )
        for i in range(cluster.n)
    ]
    states = {
        name: ImageState(dict(sizes), int(cluster.image_nodes[i]))
        for i, (name, sizes) in enumerate(zip(cluster.registry.names, cluster.registry.sizes, strict=True))
    }
    bandwidth: dict[str, dict[str, float]] = {"registry": dict(zip(names, map(float, cluster.registry_bandwidth), strict=True))}
    for row, s in enumerate(cluster.storage_nodes):
        bandwidth[names[s]] = dict(zip(names, map(float, cluster.storage_down[row]), strict=True))
    for i, name in enumerate(names):
        up = {names[s]: float(cluster.storage_up[row, i]) for row, s in enumerate(cluster.storage_nodes)}
        bandwidth.setdefault(name, {}).update(up)

    class Context(ClusterContext):
        def get_init_image_states(self):
            return states

        def get_bandwidth_graph(self):
            return bandwidth

        def list_nodes(self):
            return nodes

        def get_next_storage_node(self, node):
            raise NotImplementedError

    ctx = Context()
    for idx, image in enumerate(cluster.registry.names):
        if idx < cluster.image_cached.shape[0]:
            for i in cluster.image_cached[idx].nonzero()[0]:
                ctx.images_on_nodes[names[i]][image] = states[image]
    ctx.storage_index = StorageIndex()
    for bucket, members in cluster.storage.buckets.items():
        for i in members:
            ctx.storage_index.mb(bucket, names[i])
    for (bucket, item), size in cluster.storage.items.items():
        ctx.storage_index.put(DataItem(bucket, item, size))
    return ctx


def skippy_pod(pod: Pod) -> Any:
    """The same pod in skippy's model."""
    from skippy.core.model import Container, PodSpec, ResourceRequirements
    from skippy.core.model import Pod as SkippyPod

    containers = [Container(c.image, ResourceRequirements({"cpu": c.cpu_millis, "memory": c.memory})) for c in pod.containers]
    return SkippyPod(pod.name, "default", PodSpec(containers, dict(pod.labels)))


def skippy_scheduler(ctx: Any, params: SchedulerParams) -> Any:
    """A skippy Scheduler with the weights (non-zero only, in our order) and sampling of ``params``."""
    from skippy.core import predicates as sp
    from skippy.core import priorities as pr
    from skippy.core.scheduler import Scheduler

    weights = params.weights()
    unsupported = [k for k, w in weights.items() if w and k not in SKIPPY_PRIORITY_CLASSES]
    if unsupported:
        raise ValueError(f"skippy-core has no priority for: {', '.join(unsupported)}")
    priorities = [(w, getattr(pr, SKIPPY_PRIORITY_CLASSES[k])()) for k, w in weights.items() if w]
    predicates = [sp.PodFitsResourcesPred()]
    if params.avoid_storage_nodes:
        predicates.append(sp.CheckNodeLabelPresencePred(["data.skippy.io/storage"], False))
    return Scheduler(ctx, percentage_of_nodes_to_score=params.percentage_of_nodes_to_score, predicates=predicates, priorities=priorities)


def silence_skippy_logging() -> None:
    """skippy-core logs an error per node whenever an image lacks the node's arch; keep test and benchmark output readable."""
    import logging

    logging.getLogger("skippy").setLevel(logging.CRITICAL)
