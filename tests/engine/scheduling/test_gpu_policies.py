"""The FGD paper's policies as scheduler plugins, each on a hand-worked two-node cluster (A is node 0, B node 1).

Scores are worked out in the comments with the artifact's normalisers: 128 CPUs (128000 millicores) and 8 GPUs
(8000 milli-GPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.fragmentation import TargetWorkload
from engine.cluster.model import ARCH, GPU_MODEL, Cluster, Container, ContainerRegistry, GiB, NodeSpec, Pod
from engine.scheduling import Scheduler, SchedulerParams
from engine.scheduling.framework import GPU_POLICIES
from engine.scheduling.params import GPU_POLICIES as GPU_POLICY_NAMES


def two_nodes(a: tuple[int, int], b: tuple[int, int], model: str = "T4") -> Cluster:
    """A and B as (cpu millicores, GPUs), 1 TiB of memory each."""
    specs = [
        NodeSpec(name, cpu, 1024 * GiB, {ARCH: "amd64", GPU_MODEL: model}, gpus=g) for name, (cpu, g) in zip("AB", (a, b), strict=True)
    ]
    return Cluster(specs, ContainerRegistry({"app": {"amd64": 1}}))


def pod(cpu: int, gpus: float = 0.0, name: str = "p") -> Pod:
    return Pod(name, (Container("app", cpu, GiB),), gpus=gpus)


def use(c: Cluster, node: int, per_device: list[int], cpu: int = 0) -> None:
    """Put usage on a node: per_device[d] milli-GPU on device d (separate sharing or whole pods), plus cpu."""
    for d, milli in enumerate(per_device):
        if milli:
            c.place(pod(0, milli / 1000), node, (d,))
    if cpu:
        c.place(pod(cpu), node)


def scheduler(c: Cluster, policy: str, rank=(0, 1), **params) -> Scheduler:
    s = Scheduler(c, SchedulerParams(mode="kube", gpu_policy=policy, **params), rng=np.random.default_rng(0))
    s.node_rank = np.array(rank)
    return s


def scores(s: Scheduler, p: Pod) -> list[float]:
    d = s.schedule(p, bind=False)
    return d.priorities[0].score.tolist()


def test_every_policy_is_registered_by_its_parameter_name():
    assert list(GPU_POLICIES) == list(GPU_POLICY_NAMES)


def test_random_is_uniform_over_feasible_nodes_and_fitting_devices():
    s = scheduler(two_nodes((64000, 2), (64000, 2)), "Random")
    picks = [s.schedule(pod(1000, 0.1), bind=False) for _ in range(2000)]
    nodes = np.array([d.node for d in picks])
    devices = np.array([d.devices[0] for d in picks])
    assert 0.45 < nodes.mean() < 0.55 and 0.45 < devices.mean() < 0.55
    c = s.cluster
    use(c, 0, [1000, 1000])  # A full: only B is feasible
    assert {s.schedule(pod(1000, 0.1), bind=False).node for _ in range(20)} == {1}


def test_dot_product_prefers_the_smallest_dot_product():
    # A: 32 CPU left, 8 free GPUs; B: 64 CPU left, GPUs [1000, 700] free. Pod: 8 CPU + 0.5 GPU.
    #  A: (0.25 * 0.0625 + 1.0 * 0.0625) / 2 = 0.0390625    -> int(100 * 0.9609) = 96
    #  B: (0.5 * 0.0625 + 0.2125 * 0.0625) / 2 = 0.0222656  -> int(100 * 0.9777) = 97: B, its best-fit device 1
    c = two_nodes((32000, 8), (64000, 2))
    use(c, 1, [0, 300])
    s = scheduler(c, "DotProd")
    assert scores(s, pod(8000, 0.5)) == [96, 97]
    d = s.schedule(pod(8000, 0.5))
    assert (d.node_name, d.devices) == ("B", (1,))


def test_gpu_clustering_keeps_kinds_together():
    # A runs a sharing pod (0.5 GPU), B a 1-GPU pod; both have 8 GPUs.
    #  a share:   A only this kind -> 75 + floor(25 * 500 / 8000) = 76;  B another kind -> 0 + floor(25 * 1000 / 8000) = 3
    #  two GPUs:  A 0 + 1 = 1;  B 0 + 3 = 3 (neither runs 2-GPU pods)
    c = two_nodes((64000, 8), (64000, 8))
    use(c, 0, [500])
    c.place(pod(0, 1), 1, (0,))
    s = scheduler(c, "GpuClustering")
    assert scores(s, pod(1000, 0.3)) == [76, 3] and s.schedule(pod(1000, 0.3), bind=False).node_name == "A"
    assert scores(s, pod(1000, 2)) == [1, 3]
    # an unused node scores 25 and beats a node of another kind; CPU-only pods score 0 everywhere
    c2 = two_nodes((64000, 8), (64000, 8))
    use(c2, 0, [500])
    s2 = scheduler(c2, "GpuClustering")
    assert scores(s2, pod(1000, 2)) == [1, 25] and scores(s2, pod(1000)) == [0, 0]


def test_gpu_packing_fills_used_devices_then_used_nodes_then_opens_nodes():
    # A: 8 fresh GPUs -> max(33 - 8, 8) = 25.  B: 8 GPUs, device 0 has 400 free.
    #  0.3 GPU: fits device 0 -> max(100 - floor(floor(400 * 100 / 1000) / 10), 50) = 96
    #  0.5 GPU: the tightest fit is a free device -> 49;  2 GPUs: free devices of a used node -> 50 - 2 = 48
    c = two_nodes((64000, 8), (64000, 8))
    use(c, 1, [600])
    s = scheduler(c, "GpuPacking")
    assert scores(s, pod(1000, 0.3)) == [25, 96]
    assert scores(s, pod(1000, 0.5)) == [25, 49]
    assert scores(s, pod(1000, 2)) == [25, 48]
    assert s.schedule(pod(1000, 0.3), bind=False).devices == (0,)
    assert s.schedule(pod(1000, 0.5), bind=False).devices == (1,)
    assert s.schedule(pod(1000, 2), bind=False).devices == (1, 2)


def test_best_fit_leaves_the_least():
    # Pod 4 CPU + 1 GPU.
    #  A (64 CPU, 8 GPUs): 0.5 * 60000 / 128000 + 0.5 * 7000 / 8000 = 0.671875 -> int(32.8) = 32
    #  B (16 CPU, 2 GPUs): 0.5 * 12000 / 128000 + 0.5 * 1000 / 8000 = 0.109375 -> int(89.06) = 89
    s = scheduler(two_nodes((64000, 8), (16000, 2)), "BestFit")
    assert scores(s, pod(4000, 1)) == [32, 89]
    d = s.schedule(pod(4000, 1))
    assert (d.node_name, d.devices) == ("B", (0,))


def share_target(cpu: int = 1000, milli: int = 500) -> TargetWorkload:
    return TargetWorkload([cpu], [milli], [1], [""], [1])


def test_fgd_takes_the_device_that_fragments_least():
    # Target: one class <1 CPU, 0.5 GPU>. A: 1 GPU [1000]; B: 2 GPUs [1000, 600]. Pod: 0.6 GPU.
    #  A dev 0 -> [400]: fragment 400, change -400 -> int(100 sigmoid(-0.4)) = 40
    #  B dev 0 -> [400, 600]: 400 -> 40;  B dev 1 -> [1000, 0]: 0 -> 50.  B wins, on device 1 (best fit would say device 1 too)
    c = two_nodes((64000, 1), (64000, 2))
    use(c, 1, [0, 400])
    s = scheduler(c, "FGD")
    s.set_target(share_target())
    d = s.schedule(pod(1000, 0.6))
    assert d.priorities[0].score.tolist() == [40, 50] and d.priorities[0].raw.tolist() == [-400, 0]
    assert (d.node_name, d.devices) == ("B", (1,))


def test_fgd_differs_from_best_fit_and_ties_follow_the_node_order():
    # Class <1 CPU, 0.5 GPU>. A: [1000, 1000]; B: [1000, 700]. Pod: 0.3 GPU.
    #  A -> [700, 1000]: no fragment, 50.  B dev 0 -> [700, 700]: 50;  B dev 1 -> [1000, 400]: 400 left under 500 -> 40.
    # Best fit would put it on B's device 1; FGD takes device 0. A and B tie at 50: the node order decides.
    for rank, expect in (((1, 0), "B"), ((0, 1), "A")):
        c = two_nodes((64000, 2), (64000, 2))
        use(c, 1, [0, 300])
        s = scheduler(c, "FGD", rank=rank)
        s.set_target(share_target())
        d = s.schedule(pod(1000, 0.3))
        assert (d.node_name, d.devices) == (expect, (0,))
    assert c.default_devices(pod(1000, 0.3), 1) == (1,)


def test_fgd_keeps_cpu_for_the_gpus_and_its_exact_score_is_the_change():
    # Class <4 CPU, 0.5 GPU>. A has 6 CPU left, B 20; both 1 free GPU. A CPU-only pod of 3 CPU:
    # on A the class no longer fits -> fragment 1000, change -1000 -> int(100 sigmoid(-1)) = 26; on B nothing changes -> 50
    c = two_nodes((64000, 1), (64000, 1))
    use(c, 0, [], cpu=58000)
    use(c, 1, [], cpu=44000)
    s = scheduler(c, "FGD")
    s.set_target(share_target(cpu=4000))
    assert scores(s, pod(3000)) == [26, 50] and s.schedule(pod(3000), bind=False).node_name == "B"
    s.params.fgd_score = "exact"
    assert scores(s, pod(3000)) == [-1000, 0]


def test_fgd_scores_follow_changes_of_the_cluster():
    c = two_nodes((64000, 2), (64000, 2))
    s = scheduler(c, "FGD")
    s.set_target(share_target())
    assert s.schedule(pod(1000, 0.3)).node_name == "A"  # a tie: the node order -> A
    use(c, 0, [700, 1000])  # A is full now
    assert s.schedule(pod(1000, 0.3), bind=False).node_name == "B"


def test_fgd_without_a_target_measures_against_the_pods_own_shape():
    # Shape <1 CPU, 0.4 GPU>. A: [1000, 500]: on device 1 it leaves 100 (a fragment: -100, score 47), on device 0
    # [600, 500] (none: 0, score 50); B: [1000, 1000] -> [600, 1000] (0, 50). A's device 0 and B tie; the order says A.
    c = two_nodes((64000, 2), (64000, 2))
    use(c, 0, [0, 500])
    d = scheduler(c, "FGD").schedule(pod(1000, 0.4), bind=False)
    assert (d.node_name, d.devices) == ("A", (0,)) and d.priorities[0].raw.tolist() == [0, 0]
    assert c.default_devices(pod(1000, 0.4), 0) == (1,)  # best fit would leave the fragment


def test_random_tie_break_spreads_over_the_tied_nodes():
    hits = set()
    s = scheduler(two_nodes((64000, 2), (64000, 2)), "BestFit", tie_break="random")
    for _ in range(50):
        hits.add(s.schedule(pod(1000, 0.5), bind=False).node_name)
    assert hits == {"A", "B"}
    s.params.tie_break = "node_order"
    assert {s.schedule(pod(1000, 0.5), bind=False).node_name for _ in range(20)} == {"A"}


@pytest.mark.parametrize("policy", GPU_POLICY_NAMES)
def test_every_policy_places_whole_gpus_on_the_lowest_free_devices_and_respects_the_filters(policy):
    c = two_nodes((64000, 4), (2000, 4))
    use(c, 0, [1000, 0, 300])
    s = scheduler(c, policy)
    d = s.schedule(pod(4000, 2))  # B lacks cpu; A has devices 1 and 3 fully free
    assert (d.node_name, d.devices) == ("A", (1, 3))
    assert s.schedule(pod(4000, 2), bind=False).node is None
