"""What the scheduler knows of a cluster, and the one place its decisions are made.

:class:`ClusterState` holds the nodes and pods last seen (from lists and watch events, or from dumps), the
cluster model built from them with :func:`engine.cluster.importers.kube_snapshot.snapshot_cluster` (the
conversion the simulation's ``kube_snapshot`` topology uses) and the queue of pods waiting for this
scheduler. The daemon and plan mode drive it the same way: ``queue()``, ``decide(pod)``, then
``assume(pod, node)`` once bound (or ``mark_unschedulable(pod)``).

Capacity is counted from every pod bound to a node and not finished, in every namespace, whoever
scheduled it, plus the pods this scheduler bound whose binding the watch has not shown yet (kube-scheduler's
"assumed" pods). A pod bound here is added to the model in place (its requests and images, exactly what a
rebuild would give); a node change or a pod leaving rebuilds the model from the objects on the next decision,
so the model is always the one a snapshot of the same objects gives. The scheduler's round-robin start is
carried over a rebuild.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from engine.cluster.importers.kube import KubeNode
from engine.cluster.importers.kube_snapshot import KubePod, queue_order, register_pod_images, snapshot_cluster, snapshot_registry
from engine.cluster.model import ARCH, Cluster, Pod
from engine.scheduling.framework import PlacementDecision, Scheduler
from engine.scheduling.params import SchedulerParams

log = logging.getLogger(__name__)


class ClusterState:
    """Nodes and pods of one cluster as the scheduler sees them, the model built from them, and the scheduling queue.

    ``scheduler_name``: only pods naming it are queued (None: every pod). ``namespace``: only pods of that
    namespace are queued (None: all); capacity is counted from every namespace either way.
    """

    def __init__(self, params: SchedulerParams, scheduler_name: str | None = None, namespace: str | None = None):
        self.params = params
        self.scheduler_name = scheduler_name
        self.namespace = namespace
        self.nodes: dict[str, KubeNode] = {}
        self.pods: dict[str, KubePod] = {}
        self.assumed: dict[str, tuple[str, str]] = {}  # pod key -> (uid, node): bound here, not yet seen bound
        self.unschedulable: set[str] = set()  # fit nowhere at their last attempt; queued again when the cluster changes
        self.deferred: dict[str, float] = {}  # pod key -> time before which it is not retried (after an API error)
        self._allocations: dict[str, tuple[Pod, str]] = {}  # pod key -> (pod, node) taking capacity
        self._cluster: Cluster | None = None
        self._scheduler: Scheduler | None = None
        self._start_index = 0
        self._archs: list[str] = []

    # ------------------------------------------------------------------ feeding
    def set_nodes(self, records: Iterable[KubeNode]) -> None:
        """Replace every node (a list call's result)."""
        nodes = {r.name: r for r in records}
        if nodes != self.nodes:
            self.nodes = nodes
            self._changed()

    def put_node(self, record: KubeNode) -> None:
        """A node added or changed."""
        if self.nodes.get(record.name) != record:
            self.nodes[record.name] = record
            self._changed()

    def drop_node(self, name: str) -> None:
        """A node deleted."""
        if self.nodes.pop(name, None) is not None:
            self._changed()

    def set_pods(self, records: Iterable[KubePod]) -> None:
        """Replace every pod (a list call's result)."""
        pods = {r.key: r for r in records}
        for key in [k for k in self.pods if k not in pods]:
            self.drop_pod(key)
        for record in pods.values():
            self.put_pod(record)

    def put_pod(self, record: KubePod) -> None:
        """A pod added or changed."""
        old = self.pods.get(record.key)
        self.pods[record.key] = record
        if old != record:
            self.unschedulable.discard(record.key)  # its spec changed: worth another try
            self.deferred.pop(record.key, None)
        assumed = self.assumed.get(record.key)
        if assumed is not None and (assumed[0] != record.uid or record.node_name or not record.pending):
            del self.assumed[record.key]  # the binding is visible now (or the pod is another one, or gone)
        self._allocate(record.key)

    def drop_pod(self, key: str) -> None:
        """A pod deleted."""
        self.pods.pop(key, None)
        self.assumed.pop(key, None)
        self.unschedulable.discard(key)
        self.deferred.pop(key, None)
        self._allocate(key)

    def _allocation(self, key: str) -> tuple[Pod, str] | None:
        record = self.pods.get(key)
        if record is None:
            return None
        if record.holds_resources:
            return record.pod, record.node_name
        assumed = self.assumed.get(key)
        if assumed is not None and assumed[0] == record.uid:
            return record.pod, assumed[1]
        return None

    def _allocate(self, key: str) -> None:
        """Bring the capacity a pod takes up to date: added in place, or (when released or moved) a rebuild."""
        new, old = self._allocation(key), self._allocations.get(key)
        if new == old:
            return
        if new is None:
            del self._allocations[key]
        else:
            self._allocations[key] = new
        if old is not None:
            self._changed()  # capacity freed (or moved): rebuild, and the unschedulable pods may fit now
        elif self._cluster is not None:
            index = self._cluster.index.get(new[1])
            if index is not None:
                register_pod_images(self._cluster.registry, new[0], self._archs)
                self._cluster.place(new[0], index)

    def _changed(self) -> None:
        """Nodes changed or capacity was freed: rebuild the model before the next decision; retry the unschedulable."""
        if self._scheduler is not None:
            self._start_index = self._scheduler.start_index
        self._cluster = None
        self._scheduler = None
        self.unschedulable.clear()

    # ------------------------------------------------------------------ reading
    def cluster(self) -> Cluster:
        """The cluster model of the current nodes and allocations (built when something changed)."""
        if self._cluster is None:
            if not self.nodes:
                raise ValueError("the cluster has no nodes")
            nodes = list(self.nodes.values())
            self._archs = list(dict.fromkeys(n.labels[ARCH] for n in sorted(nodes, key=lambda n: n.name)))
            pods = [pod for pod, _ in self._allocations.values()]
            registry = snapshot_registry(nodes, pods)
            self._cluster = snapshot_cluster(nodes, self._allocations.values(), registry)
        return self._cluster

    def scheduler(self) -> Scheduler:
        """The scheduler on the current model (ties: first in scan order, so decisions are reproducible)."""
        cluster = self.cluster()
        if self._scheduler is None:
            self._scheduler = Scheduler(cluster, self.params, rng=None, explain=True)
            self._scheduler.start_index = self._start_index % cluster.n
        return self._scheduler

    def wants(self, record: KubePod) -> bool:
        """The pod waits for this scheduler: Pending, unbound, its scheduler name and namespace match."""
        return (
            record.pending
            and (self.scheduler_name is None or record.scheduler_name == self.scheduler_name)
            and (self.namespace is None or record.namespace == self.namespace)
        )

    def waiting(self, record: KubePod, now: float = 0.0) -> bool:
        """The pod is to be placed now: wanted, not bound here, not unschedulable, not deferred past ``now``."""
        key = record.key
        return self.wants(record) and key not in self.assumed and key not in self.unschedulable and self.deferred.get(key, 0.0) <= now

    def queue(self, now: float = 0.0) -> list[KubePod]:
        """The pods :meth:`waiting` now, in kube-scheduler's order (priority, then age)."""
        return sorted((r for r in self.pods.values() if self.waiting(r, now)), key=queue_order)

    def next_deferred(self, now: float) -> float | None:
        """The earliest time after ``now`` a deferred pod becomes due (None: none); forgets deferrals already due."""
        for key in [k for k, until in self.deferred.items() if until <= now]:
            del self.deferred[key]
        return min(self.deferred.values(), default=None)

    # ------------------------------------------------------------------ deciding
    def decide(self, record: KubePod) -> PlacementDecision:
        """Choose a node for the pod (None if none fits) without binding it."""
        scheduler = self.scheduler()
        register_pod_images(scheduler.cluster.registry, record.pod, self._archs)
        return scheduler.schedule(record.pod, bind=False)

    def assume(self, record: KubePod, node: str) -> None:
        """The pod is bound to ``node`` (here, or only planned): its capacity is taken until the watch shows it."""
        self.assumed[record.key] = (record.uid, node)
        self.deferred.pop(record.key, None)
        self._allocate(record.key)

    def forget(self, record: KubePod) -> None:
        """Drop the assumption that the pod is bound here (its binding failed): its capacity is free again."""
        assumed = self.assumed.get(record.key)
        if assumed is not None and assumed[0] == record.uid:
            del self.assumed[record.key]
            self._allocate(record.key)

    def mark_unschedulable(self, record: KubePod) -> None:
        """The pod fits nowhere: not queued again until the cluster changes (or :meth:`retry_unschedulable`)."""
        self.unschedulable.add(record.key)

    def retry_unschedulable(self) -> None:
        """Queue every unschedulable pod again (the daemon does this periodically, as kube-scheduler does)."""
        self.unschedulable.clear()

    def defer(self, record: KubePod, until: float) -> None:
        """Do not retry the pod before ``until`` (an API error or a conflict while binding it)."""
        self.deferred[record.key] = until
