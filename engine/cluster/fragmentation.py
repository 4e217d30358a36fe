"""GPU fragmentation as Weng et al. define it (USENIX ATC 2023, "Beware of Fragmentation"), measured on a cluster.

A node's free GPU capacity is a *fragment* for a kind of task when that task cannot use it: the task asks
for no GPU, for another GPU model, for more GPU or CPU than the node has left, or the capacity sits on
devices that each have less free than the task's share. The fragmentation of a node is the expected
fragment over a *target workload*, a set of task classes weighted by popularity. We read the paper's
artifact (``hkust-adsl/kubernetes-scheduler-simulator``: ``pkg/utils/frag.go``, ``GetTypicalPods`` and
``NodeGpuShareFragAmount``) as follows and implement exactly that:

* A task class is a distinct (cpu, GPU share per device, number of devices, GPU model constraint) of the
  pods the workload is built from; memory is not part of it. Classes are sorted by count, most popular
  first (equal counts: larger requests first), and the shortest prefix that covers ``threshold`` % of the
  pods is kept (95 % in the paper's runs; CPU-only classes are included); popularity is renormalised.
* F(node, m) for class m: all the node's free GPU milli when m asks for no GPU, for a model the node does
  not have, or when the node cannot host m (fewer than ``devices_m`` devices with ``share_m`` free, or less
  cpu left than ``cpu_m``); otherwise the free milli of the devices that each have less than ``share_m`` free.
  Memory is not considered.
* F(node) = sum over classes of popularity x F(node, m); the cluster's fragmentation amount is the sum over
  nodes, its fragmentation ratio that amount over the unallocated GPU milli.

Fragmentation is kept exact: ``sum_m count_m * F(node, m)`` is an integer (held in float64, exactly), divided
by the classes' total count only when reported, so two equal states always compare equal (the FGD score
truncates to an integer, where a rounding residue around zero would flip decisions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.cluster.model import GPU_MILLI, GPU_MODEL, Cluster


@dataclass
class TargetWorkload:
    """Task classes and their counts: ``cpu`` (millicores), ``milli`` (share per device), ``devices``, ``spec``
    (acceptable models joined by '|', '' for any) and ``count`` (pods of the class), most popular first."""

    cpu: np.ndarray
    milli: np.ndarray
    devices: np.ndarray
    spec: np.ndarray
    count: np.ndarray
    thresholds: np.ndarray = field(init=False, repr=False)
    class_threshold: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.cpu = np.asarray(self.cpu, dtype=np.int64)
        self.milli = np.asarray(self.milli, dtype=np.int64)
        self.devices = np.asarray(self.devices, dtype=np.int64)
        self.spec = np.asarray(self.spec, dtype=object)
        self.count = np.asarray(self.count, dtype=np.int64)
        self.count_f = self.count.astype(np.float64)
        self.total = float(self.count.sum())
        self.is_gpu = self.milli > 0
        # the distinct per-device shares the classes compare free capacity with (one comparison serves many classes)
        self.thresholds, self.class_threshold = np.unique(np.where(self.is_gpu, self.milli, GPU_MILLI), return_inverse=True)

    def __len__(self) -> int:
        return len(self.cpu)

    @property
    def popularity(self) -> np.ndarray:
        """Each class's share of the target workload (sums to 1)."""
        return self.count / self.total

    def table(self) -> dict[str, np.ndarray]:
        """The classes as columns (for a DataFrame)."""
        return {"cpu_milli": self.cpu, "gpu_milli": self.milli, "num_gpu": self.devices, "gpu_spec": self.spec, "pods": self.count}


def target_workload(
    cpu: Sequence[int] | np.ndarray,
    milli: Sequence[int] | np.ndarray,
    devices: Sequence[int] | np.ndarray,
    spec: Sequence[str] | np.ndarray,
    threshold: float = 95.0,
    include_cpu_pods: bool = True,
) -> TargetWorkload:
    """The task classes of a set of pods (one entry per pod), keeping the most popular that cover ``threshold`` %."""
    cpu, milli, devices = (np.asarray(a, dtype=np.int64) for a in (cpu, milli, devices))
    spec = np.asarray(spec, dtype=object)
    keep = np.ones(len(cpu), dtype=bool) if include_cpu_pods else milli > 0
    if not keep.any():
        raise ValueError("no pods to build a target workload from")
    counts: dict[tuple[int, int, int, str], int] = {}
    for key in zip(cpu[keep].tolist(), milli[keep].tolist(), devices[keep].tolist(), spec[keep].tolist(), strict=True):
        counts[key] = counts.get(key, 0) + 1
    items = sorted(((n, *key) for key, n in counts.items()), reverse=True)  # by count, then larger requests first
    sizes = np.array([it[0] for it in items], dtype=np.float64)
    cut = int(np.searchsorted(np.cumsum(sizes), threshold * sizes.sum() / 100.0, side="left")) + 1
    items = items[: min(cut, len(items))]
    return TargetWorkload(
        cpu=np.array([it[1] for it in items], dtype=np.int64),
        milli=np.array([it[2] for it in items], dtype=np.int64),
        devices=np.array([it[3] for it in items], dtype=np.int64),
        spec=np.array([it[4] for it in items], dtype=object),
        count=np.array([it[0] for it in items], dtype=np.int64),
    )


def model_access(cluster: Cluster, target: TargetWorkload) -> np.ndarray:
    """(nodes, classes) bool: the node has GPUs of a model the class accepts (an empty spec accepts any)."""
    has_gpu = cluster.gpu_count > 0
    masks: dict[str, np.ndarray] = {}
    for spec in set(target.spec.tolist()):
        models = [m for m in str(spec).split("|") if m]
        ok = np.logical_or.reduce([cluster.label_equals(GPU_MODEL, m) for m in models]) if models else np.ones(cluster.n, dtype=bool)
        masks[spec] = has_gpu & ok
    if not len(target):
        return np.zeros((cluster.n, 0), dtype=bool)
    return np.stack([masks[s] for s in target.spec.tolist()], axis=1)


def fragmentation_scaled(free: np.ndarray, cpu_left: np.ndarray, access: np.ndarray, target: TargetWorkload) -> np.ndarray:
    """Fragmentation of a batch of node states times the classes' total count (exact integers in float64).

    ``free`` is (B, devices) milli-GPU free per device (0 for absent ones), ``cpu_left`` (B,) and ``access``
    (B, classes) the model match. Returns (B,) values ``sum_m count_m * F(state, m)``.
    """
    free = np.asarray(free, dtype=np.int64)
    total = free.sum(axis=1)
    at_least = free[:, :, None] >= target.thresholds[None, None, :]  # (B, devices, distinct shares)
    usable = at_least.sum(axis=1)[:, target.class_threshold]  # devices each class could use
    fragments = np.where(at_least, 0, free[:, :, None]).sum(axis=1)[:, target.class_threshold]
    hosts = target.is_gpu & access & (usable >= target.devices) & (np.asarray(cpu_left)[:, None] >= target.cpu)
    return np.where(hosts, fragments, total[:, None]).astype(np.float64) @ target.count_f


class FragmentationTracker:
    """The fragmentation of every node of a cluster for one target workload, recomputed only for nodes that changed."""

    def __init__(self, cluster: Cluster, target: TargetWorkload):
        self.cluster = cluster
        self.target = target
        self.access = model_access(cluster, target)
        self._scaled = fragmentation_scaled(cluster.gpu_milli_free, cluster.cpu_free, self.access, target)
        self._seen = cluster.version.copy()

    def refresh(self) -> None:
        """Recompute the nodes whose resources changed since the last call."""
        stale = np.flatnonzero(self._seen != self.cluster.version)
        if len(stale):
            c = self.cluster
            self._scaled[stale] = fragmentation_scaled(c.gpu_milli_free[stale], c.cpu_free[stale], self.access[stale], self.target)
            self._seen[stale] = c.version[stale]

    def scaled(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Current ``sum_m count_m * F`` of ``nodes`` (all when None), exact."""
        self.refresh()
        return self._scaled.copy() if nodes is None else self._scaled[nodes]

    def node_milli(self) -> np.ndarray:
        """Fragmentation of every node now, milli-GPU."""
        return self.scaled() / self.target.total

    def total_milli(self) -> float:
        """The cluster's fragmentation amount now, milli-GPU."""
        self.refresh()
        return float(self._scaled.sum() / self.target.total)
