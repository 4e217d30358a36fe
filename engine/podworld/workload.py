"""From a pod list to the pod world's workload: which pods take part, in which order, and the target workload.

* :func:`select_phases`: the pods a phase rule keeps (``pods.phases``).
* :func:`tune_workload`: the FGD artifact's workload tuning for the cluster-filling experiment (its
  ``SortClusterPods`` with ``shufflePod`` and ``TunePodsByNodeTotalResource``, ``pkg/simulator/simulator.go``):
  the pods, sorted by name and (optionally) shuffled, then, while the GPU demand is below ``ratio`` x the
  cluster's GPUs, pods drawn uniformly with replacement from the name-sorted list are appended until the
  next draw would pass the target; above it, random pods are removed until it fits. CPU-only draws never
  stop the loop, so the workload keeps the trace's share of CPU-only pods.
* :func:`pod_target`: the target workload fragmentation is measured against (the pods' own shapes).
* :func:`trace_pod`: one pod of the list as the scheduler sees it.
"""

from __future__ import annotations

import numpy as np

from engine.cluster.fragmentation import TargetWorkload, target_workload
from engine.cluster.model import Container, MiB, Pod
from engine.workload.traces.openb import OpenbPodList

#: The image a trace's pod runs (the trace names none); the pod world registers it with size 0, so placing costs no pull.
POD_IMAGE = "openb/pod:latest"


def select_phases(pods: OpenbPodList, rule: str) -> np.ndarray:
    """Rows (file order) of the pods ``rule`` keeps: ``all``, ``skip_pending`` or ``ran_only`` (see ``PodsParams.phases``)."""
    phase = pods.pod_phase
    if rule == "all":
        keep = np.ones(len(pods), dtype=bool)
    elif rule == "skip_pending":
        keep = phase != "Pending"
    elif rule == "ran_only":
        keep = np.isin(phase, ("Running", "Succeeded"))
    else:
        raise ValueError(f"unknown phase rule {rule!r}")
    return np.flatnonzero(keep)


def tune_workload(
    names: np.ndarray,
    gpu_milli_each: np.ndarray,
    gpu_milli_total: np.ndarray,
    capacity_milli: int,
    ratio: float,
    rng: np.random.Generator,
    shuffle: bool = True,
    stop: str = "artifact",
) -> np.ndarray:
    """Indices into the given pods, in submission order, whose GPU demand reaches ``ratio`` x ``capacity_milli``.

    ``gpu_milli_each`` is each pod's share per device, ``gpu_milli_total`` its whole GPU request. ``stop``:
    ``artifact`` tests the next draw with its per-device share (as the artifact does), ``total`` with its
    whole request.
    """
    by_name = np.argsort(names, kind="stable")
    order = list(by_name[rng.permutation(len(by_name))] if shuffle else by_name)
    demand = int(gpu_milli_total.sum())
    target = ratio * capacity_milli
    if demand > target:
        while demand > target and order:
            j = int(rng.integers(len(order)))
            demand -= int(gpu_milli_total[order[j]])
            del order[j]
        return np.array(order, dtype=np.int64)
    test = gpu_milli_each if stop == "artifact" else gpu_milli_total
    if not (gpu_milli_total > 0).any():
        return np.array(order, dtype=np.int64)  # CPU-only pods could be drawn forever
    while True:
        i = int(by_name[rng.integers(len(by_name))])
        if demand + int(test[i]) > target:
            break
        demand += int(gpu_milli_total[i])
        order.append(i)
    return np.array(order, dtype=np.int64)


def pod_target(pods: OpenbPodList, rows: np.ndarray, threshold: float, include_cpu_pods: bool) -> TargetWorkload:
    """The target workload of the pods ``rows``: their most popular shapes covering ``threshold`` % (see fragmentation)."""
    devices, milli = pods.gpu_request()
    return target_workload(pods.cpu_milli[rows], milli[rows], devices[rows], pods.gpu_spec[rows], threshold, include_cpu_pods)


def trace_pod(pods: OpenbPodList, row: int) -> Pod:
    """Row ``row`` of the pod list as a pod: its cpu and memory requests, GPU devices and share, and model constraint."""
    devices, milli = (int(a[row]) for a in pods.gpu_request())
    spec = str(pods.gpu_spec[row])
    return Pod(
        str(pods.name[row]),
        (Container(POD_IMAGE, int(pods.cpu_milli[row]), int(pods.memory_mib[row]) * MiB),),
        gpus=devices * milli / 1000.0,
        gpu_models=tuple(m for m in spec.split("|") if m),
        gpu_milli=milli if devices else 0,
    )
