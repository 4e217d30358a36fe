"""GPU fragmentation (Weng et al., ATC 2023) on hand-worked node states, and the target workload of the openb trace."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.fragmentation import FragmentationTracker, TargetWorkload, fragmentation_scaled, model_access, target_workload
from engine.cluster.model import ARCH, GPU_MODEL, Cluster, Container, ContainerRegistry, GiB, NodeSpec, Pod
from engine.workload.traces.openb import read_openb_pod_list


def classes(*rows: tuple[int, int, int, str, int]) -> TargetWorkload:
    """rows of (cpu, milli, devices, spec, count)."""
    cpu, milli, devices, spec, count = zip(*rows, strict=True)
    return TargetWorkload(cpu, milli, devices, spec, count)


def cluster_of(*nodes: tuple[int, int, str]) -> Cluster:
    """nodes of (cpu, gpus, model)."""
    specs = [
        NodeSpec(f"n{i}", cpu, 64 * GiB, {ARCH: "amd64", **({GPU_MODEL: m} if m else {})}, gpus=g) for i, (cpu, g, m) in enumerate(nodes)
    ]
    return Cluster(specs, ContainerRegistry({"app": {"amd64": 1}}))


def frag(free, cpu_left, target, access=None) -> float:
    free = np.atleast_2d(free)
    access = np.ones((len(free), len(target)), dtype=bool) if access is None else np.atleast_2d(access)
    return float(fragmentation_scaled(free, np.atleast_1d(cpu_left), access, target)[0] / target.total)


def test_a_hand_worked_node():
    # m1 = 4 CPU + 0.5 GPU (2 pods), m2 = 8 CPU + 1 GPU (1 pod), m3 = 2 CPU, no GPU (1 pod): popularity 1/2, 1/4, 1/4
    target = classes((4000, 500, 1, "", 2), (8000, 1000, 1, "", 1), (2000, 0, 0, "", 1))
    free = [1000, 600, 300, 0]  # 1900 milli free
    # 6 CPU left: m1 fits, fragment = devices under 500 = 300; m2 lacks CPU: 1900; m3 asks no GPU: 1900
    assert frag(free, 6000, target) == pytest.approx(0.5 * 300 + 0.25 * 1900 + 0.25 * 1900)  # 1100
    # 10 CPU left: m2 fits on device 0, fragment = 600 + 300
    assert frag(free, 10000, target) == pytest.approx(0.5 * 300 + 0.25 * 900 + 0.25 * 1900)  # 850
    assert frag([0, 0, 0, 0], 10000, target) == 0.0  # nothing free, nothing fragmented


def test_the_artifacts_unit_test_value():
    # hkust-adsl/kubernetes-scheduler-simulator pkg/utils/frag_test.go, last case: a class <6 CPU, 0.465 GPU> of
    # popularity 9.33 % on a node with 1 CPU and devices [200, 1000, 1000, 500] free lacks CPU: all 2700 milli count,
    # 0.0933 * 2700 = 251.91; the other 90.67 % (<0.5 CPU, 0.1 GPU>) fits and leaves no fragment
    target = classes((6000, 465, 1, "", 933), (500, 100, 1, "", 9067))
    assert frag([200, 1000, 1000, 500], 1000, target) == pytest.approx(251.91)


def test_another_model_counts_every_free_milli():
    c = cluster_of((32000, 2, "T4"), (32000, 2, "V100"), (32000, 0, ""))
    target = classes((1000, 500, 1, "V100", 1))
    access = model_access(c, target)
    assert access[:, 0].tolist() == [False, True, False]
    free = np.array([[1000, 300], [1000, 300], [0, 0]])
    assert (fragmentation_scaled(free, np.full(3, 8000), access, target) / target.total).tolist() == [1300, 300, 0]


def test_target_workload_keeps_the_popular_classes_and_breaks_count_ties_by_size():
    cpu = np.array([1, 1, 1, 1, 1, 2, 2, 2, 3, 4]) * 1000
    milli = np.array([500] * 5 + [1000] * 3 + [0, 0])
    devices = np.array([1] * 8 + [0, 0])
    t = target_workload(cpu, milli, devices, [""] * 10, threshold=80)
    assert t.count.tolist() == [5, 3] and t.popularity.tolist() == [5 / 8, 3 / 8]
    t = target_workload(cpu, milli, devices, [""] * 10, threshold=85)
    assert t.cpu.tolist() == [1000, 2000, 4000]  # <3 CPU> and <4 CPU> tie at one pod: the larger first
    assert len(target_workload(cpu, milli, devices, [""] * 10, threshold=95, include_cpu_pods=False)) == 2


def test_the_openb_default_trace_has_35_classes_covering_7766_pods():
    pods = read_openb_pod_list("alibaba-openb/openb_pod_list_default.csv")
    devices, milli = pods.gpu_request()
    t = target_workload(pods.cpu_milli, milli, devices, pods.gpu_spec)
    assert (len(t), int(t.count.sum())) == (35, 7766)
    assert (t.cpu[0], t.milli[0], t.count[0]) == (3152, 810, 1047)
    assert t.popularity[t.milli == 0].sum() == pytest.approx(0.136, abs=0.001) and not (t.devices > 1).any()


def test_the_tracker_recomputes_only_what_changed_and_matches_a_fresh_measure():
    c = cluster_of((16000, 2, "T4"), (16000, 2, "T4"))
    target = classes((4000, 500, 1, "", 1), (1000, 0, 0, "", 1))
    tracker = FragmentationTracker(c, target)
    assert tracker.total_milli() == pytest.approx(2 * 0.5 * 2000)  # the CPU class finds every free milli a fragment
    pod = Pod("p", (Container("app", 13000, GiB),), gpus=0.7)
    c.place(pod, 0, (1,))  # node 0: [1000, 300] free, 3 CPU left: the GPU class lacks CPU
    assert tracker.node_milli().tolist() == pytest.approx([1300.0, 1000.0])
    assert tracker.total_milli() == pytest.approx(FragmentationTracker(c, target).total_milli())
    c.remove(pod, 0, (1,))
    assert tracker.total_milli() == pytest.approx(2000.0)
