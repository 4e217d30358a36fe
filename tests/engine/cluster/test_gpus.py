"""GPUs device by device: shares of one device, whole devices, model constraints, through the cluster and the scheduler."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.model import ARCH, GPU_MODEL, Cluster, Container, ContainerRegistry, GiB, NodeSpec, Pod, gpu_request
from engine.scheduling import Scheduler, SchedulerParams


def gpu_cluster() -> Cluster:
    """a: 2 T4 devices; b: 1 V100 device; c: no GPU."""
    nodes = [
        NodeSpec("a", 64000, 64 * GiB, {ARCH: "amd64", GPU_MODEL: "T4"}, gpus=2),
        NodeSpec("b", 64000, 64 * GiB, {ARCH: "amd64", GPU_MODEL: "V100"}, gpus=1),
        NodeSpec("c", 64000, 64 * GiB, {ARCH: "amd64"}),
    ]
    return Cluster(nodes, ContainerRegistry({"app": {"amd64": 1}}))


def gpu_pod(name: str, gpus: float, models: tuple[str, ...] = ()) -> Pod:
    return Pod(name, (Container("app", 100, GiB),), gpus=gpus, gpu_models=models)


def test_requests_become_devices_and_shares():
    assert gpu_request(0) == (0, 0)
    assert gpu_request(0.6) == (1, 600)
    assert gpu_request(1) == (1, 1000) and gpu_request(4.0) == (4, 1000)
    assert gpu_request(2 * 500 / 1000, milli=500) == (2, 500)  # openb's num_gpu 2 x gpu_milli 500
    with pytest.raises(ValueError, match="below 1"):
        gpu_request(1.5)
    with pytest.raises(ValueError, match="below 1"):
        Pod("p", (Container("app"),), gpus=2.5)


def test_three_sixty_percent_pods_do_not_fit_on_two_gpus():
    # pooled GPUs let 3 x 0.6 onto 2 GPUs (1.8 <= 2); device by device only two fit
    c = gpu_cluster()
    s = Scheduler(c, SchedulerParams(mode="kube", weight_least_allocated=1.0))
    placed = [s.schedule(gpu_pod(f"p{i}", 0.6, ("T4",))) for i in range(3)]
    assert [d.node_name for d in placed] == ["a", "a", None]
    assert sorted(d.devices for d in placed[:2]) == [(0,), (1,)]
    assert c.gpu_milli_free[0].tolist() == [400, 400]


def test_a_share_goes_to_the_partly_used_device_and_is_refused_where_only_small_fragments_remain():
    c = gpu_cluster()
    c.place(gpu_pod("x", 0.7), 0, (1,))  # a: [1000, 300]
    assert c.default_devices(gpu_pod("y", 0.3), 0) == (1,)  # best fit: the partly used device
    assert c.default_devices(gpu_pod("y", 0.4), 0) == (0,)  # 300 left is too small
    c.place(gpu_pod("z", 0.8), 0, (0,))  # a: [200, 300]: 500 milli free, but no device has 400
    s = Scheduler(c)
    assert s.schedule(gpu_pod("w", 0.4, ("T4",)), bind=False).node is None
    assert s.schedule(gpu_pod("w", 0.3, ("T4",))).devices == (1,)
    assert c.gpu_milli_free[0].tolist() == [200, 0]


def test_whole_gpus_need_fully_free_devices_and_models_are_honoured():
    c = gpu_cluster()
    c.place(gpu_pod("x", 0.1), 0, (0,))
    s = Scheduler(c)
    assert s.schedule(gpu_pod("two", 2), bind=False).node is None  # a has one fully free device left
    assert s.schedule(gpu_pod("one", 1, ("T4",)), bind=False).devices == (1,)
    assert s.schedule(gpu_pod("v", 0.5, ("V100",)), bind=False).node_name == "b"
    assert s.schedule(gpu_pod("k", 0.5, ("K80",)), bind=False).node is None
    assert s.schedule(gpu_pod("any", 0.5, ("K80", "V100")), bind=False).node_name == "b"


def test_place_refuses_a_device_without_room_and_changes_nothing():
    c = gpu_cluster()
    c.place(gpu_pod("x", 0.7), 0, (0,))
    before = (c.cpu_free.copy(), c.gpu_milli_free.copy(), c.version.copy())
    with pytest.raises(ValueError, match="cannot take"):
        c.place(gpu_pod("y", 0.5), 0, (0,))
    with pytest.raises(ValueError, match="cannot take"):
        c.place(gpu_pod("y", 0.5), 1, (1,))  # b has one device
    assert all((a == b).all() for a, b in zip(before, (c.cpu_free, c.gpu_milli_free, c.version), strict=True))
    assert c.gpu_pods_by_kind[0].tolist() == [1, 0, 0]  # one sharing pod
    assert np.allclose(c.gpu_free, [1.3, 1.0, 0.0])
