"""Where worker VMs / replicas land: the adapter the simulation engine calls.

Interface (the engine keeps to it)::

    service = PlacementService(cluster_params, scheduler_params, rng)   # builds the cluster (seeded) and scheduler
    service.request(vm_id, now) -> Placement | None   # place a worker pod; None: pending (FIFO, retried later)
    service.release(vm_id, now) -> list[Placement]    # VM deleted (not on suspend): frees capacity, retries pending
    service.retry_pending(now) -> list[Placement]     # pending pods placed now, in FIFO order
    service.fail_node(node, now) -> list[int]         # node unschedulable; returns the vm_ids that were on it
    service.recover_node(node, now) -> list[Placement]  # node schedulable again; retries pending
    service.pending                                   # vm_ids waiting for capacity, oldest first
    service.last_breakdown() -> DataFrame | None      # node x priority breakdown of the latest decision
    service.node_table() -> DataFrame                 # one row per node (placement heatmap)
    service.occupancy() -> ndarray                    # replicas per node, node_table order

A :class:`Placement` tells the engine what the node means for the worker: ``pull_seconds`` (missing image
bytes over the registry bandwidth, added to its start-up), ``schedule_seconds`` (the scheduler's simulated
cost: fixed + per node scored; never wall clock), ``speed_factor`` (divide job service times by it) and
``storage_seconds_per_job`` (transfer of each job's input over the node's fastest link to the data).

The worker pod spec comes from ``ClusterParams`` at each request and the scheduler's weights and mode from
``SchedulerParams`` at each decision, so changes made live apply to the next placement; the topology
parameters take effect only when a new service is built.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from engine.cluster import WORKER_INPUT, ClusterParams, MiB, Pod
from engine.scheduler import Decision, Scheduler, SchedulerParams
from engine.topologies import build_cluster


@dataclass(frozen=True)
class Placement:
    """A worker pod bound to a node, with what that node costs the worker."""

    vm_id: int
    node: str
    node_index: int
    feasible: int
    score: float
    pull_seconds: float
    schedule_seconds: float
    speed_factor: float
    storage_seconds_per_job: float

    def event(self) -> dict:
        """The placement as a flat dict for the recorder's event log."""
        return asdict(self)


class PlacementService:
    """Places worker pods with the scheduler, keeps unplaceable ones pending and retries them when capacity frees."""

    def __init__(self, cluster_params: ClusterParams, scheduler_params: SchedulerParams, rng: np.random.Generator):
        self.cluster_params = cluster_params
        self.scheduler_params = scheduler_params
        self.cluster = build_cluster(cluster_params, rng)
        self.scheduler = Scheduler(self.cluster, scheduler_params, rng=np.random.default_rng(int(rng.integers(2**63))), explain=True)
        self.pending: list[int] = []
        self._bound: dict[int, tuple[Pod, int]] = {}
        self._last: Decision | None = None

    def _pod(self, vm_id: int) -> Pod:
        params = self.cluster_params
        if params.worker_input_mib > 0:
            bucket, item = WORKER_INPUT.split("/")
            if self.cluster.storage.buckets.get(bucket):
                self.cluster.storage.put(bucket, item, int(params.worker_input_mib * MiB))
        return params.worker_pod(f"worker-{vm_id}")

    def _try(self, vm_id: int) -> Placement | None:
        pod = self._pod(vm_id)
        decision = self._last = self.scheduler.schedule(pod)
        if decision.node is None:
            return None
        node = decision.node
        self._bound[vm_id] = (pod, node)
        return Placement(
            vm_id=vm_id,
            node=self.cluster.names[node],
            node_index=node,
            feasible=decision.feasible,
            score=decision.score,
            pull_seconds=self.cluster.pull_seconds(decision.needed_images or [], node),
            schedule_seconds=self.scheduler.cost_seconds(decision),
            speed_factor=float(self.cluster.speed[node]),
            storage_seconds_per_job=self.cluster.transfer_seconds(pod, node),
        )

    def request(self, vm_id: int, now: float) -> Placement | None:
        """Place a worker pod for ``vm_id``; None when no node fits (it waits in :attr:`pending`)."""
        if vm_id in self._bound:
            raise ValueError(f"VM {vm_id} is already placed")
        placement = self._try(vm_id)
        if placement is None and vm_id not in self.pending:
            self.pending.append(vm_id)
        return placement

    def release(self, vm_id: int, now: float) -> list[Placement]:
        """The VM is gone: free its node's capacity (images stay cached) and retry the pending pods."""
        if vm_id in self.pending:
            self.pending.remove(vm_id)
            return []
        bound = self._bound.pop(vm_id, None)
        if bound is None:
            return []
        self.cluster.remove(*bound)
        return self.retry_pending(now)

    def retry_pending(self, now: float) -> list[Placement]:
        """Place pending pods oldest first; stop at the first that still fits nowhere (they share one spec)."""
        placed = []
        while self.pending:
            placement = self._try(self.pending[0])
            if placement is None:
                break
            self.pending.pop(0)
            placed.append(placement)
        return placed

    def fail_node(self, node: str | int, now: float) -> list[int]:
        """Mark ``node`` unschedulable and unbind its pods; returns their vm_ids (the engine fails those VMs)."""
        index = self.cluster.index[node] if isinstance(node, str) else int(node)
        self.cluster.schedulable[index] = False
        lost = [vm for vm, (_, n) in self._bound.items() if n == index]
        for vm in lost:
            self.cluster.remove(*self._bound.pop(vm))
        return lost

    def recover_node(self, node: str | int, now: float) -> list[Placement]:
        """Make ``node`` schedulable again and retry the pending pods."""
        index = self.cluster.index[node] if isinstance(node, str) else int(node)
        self.cluster.schedulable[index] = True
        return self.retry_pending(now)

    def node_of(self, vm_id: int) -> str | None:
        """Name of the node a VM is placed on (None if pending or unknown)."""
        bound = self._bound.get(vm_id)
        return None if bound is None else self.cluster.names[bound[1]]

    def last_breakdown(self) -> pd.DataFrame | None:
        """Node x priority breakdown of the latest decision (also of one that found no node)."""
        return None if self._last is None else self._last.breakdown()

    def node_table(self) -> pd.DataFrame:
        return self.cluster.node_table()

    def occupancy(self) -> np.ndarray:
        """Replicas per node, in node_table order."""
        return self.cluster.pods.copy()
