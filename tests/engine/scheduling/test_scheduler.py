"""Each priority on hand-computed cases in both modes, predicates, sampling, start index, breakdown, live weights."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.model import (
    ARCH,
    CAPABILITY_GPU,
    GPU_MODEL,
    LOCALITY,
    RECEIVES_FROM,
    STORAGE,
    Cluster,
    Container,
    ContainerRegistry,
    GiB,
    NodeSpec,
    Pod,
    StorageIndex,
)
from engine.scheduling import PRIORITIES, Scheduler, SchedulerParams, feasible_nodes_to_find
from engine.scheduling.base import ScoringContext
from engine.scheduling.framework import scan

IMAGES = {
    "app": {"amd64": 100_000_000, "arm64": 50_000_000},
    "big": {"amd64": 1_000_000_000},
    "x86only": {"amd64": 30_000_000},
    "filler": {"amd64": 10},
}


def tiny_cluster(cached: dict[str, list[int]] | None = None) -> Cluster:
    """edge-a (arm64, edge, GPU), cloud-b, cloud-c (half its cpu taken by a filler pod), store (storage)."""
    nodes = [
        NodeSpec(
            "edge-a",
            2000,
            4 * GiB,
            {ARCH: "arm64", LOCALITY: "edge", CAPABILITY_GPU: "true", GPU_MODEL: "nano"},
            gpus=1,
            registry_bandwidth=1e7,
        ),
        NodeSpec("cloud-b", 4000, 8 * GiB, {ARCH: "amd64", LOCALITY: "cloud"}, registry_bandwidth=1e8),
        NodeSpec("cloud-c", 8000, 8 * GiB, {ARCH: "amd64", LOCALITY: "cloud"}, registry_bandwidth=5e7),
        NodeSpec("store", 4000, 8 * GiB, {ARCH: "amd64", LOCALITY: "cloud", STORAGE: "minio"}, registry_bandwidth=1e8),
    ]
    storage = StorageIndex()
    cluster = Cluster(nodes, ContainerRegistry(IMAGES), storage)
    storage.make_bucket("b", 3)
    storage.put("b", "x", 20_000_000)
    down = np.array([[1e6, 2e7, 1e7, 1e9]])
    cluster.set_storage_bandwidth(down, down / 2)
    cluster.place(Pod("filler", (Container("filler", 4000, 2 * GiB),)), 2)
    for image, where in (cached or {}).items():
        for node in where:
            cluster.cache_image(image, node)
    return cluster


def pod(*images: str, labels: dict[str, str] | None = None, cpu: int = 1000, memory: int = 1 * GiB, **kw) -> Pod:
    return Pod("p", tuple(Container(i, cpu if j == 0 else 100, memory if j == 0 else 64) for j, i in enumerate(images)), labels or {}, **kw)


def scores(cluster: Cluster, p: Pod, key: str, mode: str, nodes=(0, 1, 2)) -> tuple[list, list]:
    priority = next(pr for pr in PRIORITIES if pr.key == key)
    ctx = ScoringContext(cluster, p, np.array(nodes), mode)
    raw = priority.raw(ctx)
    return raw.tolist(), priority.normalize(ctx, raw).tolist()


# ------------------------------------------------------------------------------------ priorities


def test_balanced_resource_uses_remaining_capacity_in_skippy_mode():
    # edge-a: cf 1000/2000, mf 1/4 -> trunc(7.5); cloud-b: .25/.125 -> 8; cloud-c (4000 cpu, 6 GiB left): .25 vs 1/6 -> 9
    assert scores(tiny_cluster(), pod("app"), "balanced_resource", "skippy")[1] == [7, 8, 9]


def test_balanced_resource_and_allocation_in_kube_mode_use_capacity():
    # the change in balance (kubernetes PR #135573): 50 + (50 + after - before) // 2, balances on 50-100.
    # edge-a: empty (100) -> .5 vs .25 (87): 68; cloud-b: 100 -> .25 vs .125 (93): 71;
    # cloud-c: 4000/8000 vs 2/8 (87) -> (4000+1000)/8000 = .625 vs (2+1)/8 = .375 (87): no change, 75
    assert scores(tiny_cluster(), pod("app"), "balanced_resource", "kube")[1] == [68, 71, 75]
    assert scores(tiny_cluster(), pod("app"), "balanced_allocation", "kube")[1] == [68, 71, 75]


def test_balanced_allocation_skippy_mode_is_k8s_1_13():
    # cloud-c: |.625 - .375| = .25 -> trunc(7.5)
    assert scores(tiny_cluster(), pod("app"), "balanced_allocation", "skippy")[1] == [7, 8, 7]


def test_balanced_resource_is_zero_when_the_pod_takes_all_that_is_left():
    assert scores(tiny_cluster(), pod("app", cpu=2000), "balanced_resource", "skippy")[1][0] == 0


def test_least_allocated_both_modes():
    # kube: edge-a (50+75)//2; cloud-b (75+87)//2; cloud-c (37+62)//2
    assert scores(tiny_cluster(), pod("app"), "least_allocated", "kube")[1] == [62, 81, 49]
    assert scores(tiny_cluster(), pod("app"), "least_allocated", "skippy")[1] == [6, 7, 4]


def test_latency_aware_image_locality_skippy_keeps_min_over_max_for_the_slowest():
    # pull times 50e6/1e7 = 5, 100e6/1e8 = 1, 100e6/5e7 = 2; score trunc(10 (5 - t + 1) / 5)
    raw, norm = scores(tiny_cluster(), pod("app"), "latency_aware_image_locality", "skippy")
    assert raw == [5, 1, 2]
    assert norm == [2, 10, 8]


def test_latency_aware_image_locality_kube_reverses_by_max():
    raw, norm = scores(tiny_cluster(), pod("app"), "latency_aware_image_locality", "kube")
    assert raw == [5.0, 1.0, 2.0]
    assert norm == [0, 80, 60]


def test_latency_aware_image_locality_cached_image_costs_nothing():
    raw, norm = scores(tiny_cluster({"app": [1]}), pod("app"), "latency_aware_image_locality", "skippy")
    assert raw == [5, 0, 2]
    assert norm == [0, 10, 6]


def test_latency_aware_image_locality_missing_arch_quirk_sticks_for_later_containers():
    # edge-a is arm64: x86only lacks it -> amd64 (30e6) and app then also counts amd64 (100e6): 13 s, not 8 s
    raw, _ = scores(tiny_cluster(), pod("x86only", "app"), "latency_aware_image_locality", "skippy")
    assert raw[0] == 13


def test_latency_aware_all_cached_scores_zero_in_skippy_mode():
    assert scores(tiny_cluster({"app": [0, 1, 2]}), pod("app"), "latency_aware_image_locality", "skippy")[1] == [0, 0, 0]


def test_image_locality_spread_factor_both_modes():
    # big cached on 2 of 4 nodes: 1e9 * .5 = 5e8 on cloud-b and cloud-c; edge-a holds nothing (clamped to 23 MiB)
    cluster = tiny_cluster({"big": [1, 2]})
    assert scores(cluster, pod("big"), "image_locality", "skippy")[1] == [0, 4, 4]
    assert scores(cluster, pod("big"), "image_locality", "kube")[1] == [0, 46, 46]


def test_image_locality_kube_upper_clamp_grows_with_containers():
    cluster = tiny_cluster({"big": [0, 1, 2, 3]})  # spread 1: 1e9 per container
    # skippy: 2e9 clamped at 1000 MiB -> 10; kube: 2e9 within 2000 MiB -> 100 * (2e9 - 23Mi) // (2000Mi - 23Mi) = 95
    assert scores(cluster, pod("big", "big"), "image_locality", "skippy")[1][1] == 10
    assert scores(cluster, pod("big", "big"), "image_locality", "kube")[1][1] == 95


def test_locality_type_both_modes():
    assert scores(tiny_cluster(), pod("app"), "locality_type", "skippy")[1] == [10, 0, 0]
    assert scores(tiny_cluster(), pod("app"), "locality_type", "kube")[1] == [100, 0, 0]


def test_data_locality_both_modes():
    p = pod("app", labels={RECEIVES_FROM: "b/x"})
    raw, norm = scores(tiny_cluster(), p, "data_locality", "skippy")
    assert raw == [20, 1, 2]  # 20e6 over 1e6, 2e7, 1e7
    assert norm == [0, 10, 9]  # inverse min-max: (2 - 20) / (1 - 20) * 10 = 9.47
    raw, norm = scores(tiny_cluster(), p, "data_locality", "kube")
    assert norm == [0, 95, 90]


def test_data_locality_is_zero_on_the_bucket_node_and_for_unknown_items():
    assert scores(tiny_cluster(), pod("app", labels={RECEIVES_FROM: "b/x"}), "data_locality", "skippy", nodes=(1, 3))[0] == [1, 0]
    assert scores(tiny_cluster(), pod("app", labels={RECEIVES_FROM: "b/nope"}), "data_locality", "skippy")[1] == [0, 0, 0]


def test_capability_both_modes():
    p = pod("app", labels={CAPABILITY_GPU: "true"})
    assert scores(tiny_cluster(), p, "capability", "skippy") == ([1, 0, 0], [10, 0, 0])
    assert scores(tiny_cluster(), p, "capability", "kube")[1] == [100, 0, 0]
    assert scores(tiny_cluster(), pod("app"), "capability", "skippy")[1] == [0, 0, 0]


# ------------------------------------------------------------------------------------ predicates and loop


def only(key: str, mode: str = "skippy", weight: float = 1.0, **kw) -> SchedulerParams:
    weights = {k: 0.0 for k in SchedulerParams.preset("skippy default")}
    weights.update({f"weight_{key}": weight})
    return SchedulerParams(mode=mode, **weights, **kw)


def test_storage_nodes_are_filtered_unless_allowed():
    d = Scheduler(tiny_cluster(), only("locality_type")).schedule(pod("app", cpu=2500), bind=False)
    assert d.nodes.tolist() == [1, 2]
    d = Scheduler(tiny_cluster(), only("locality_type", avoid_storage_nodes=False)).schedule(pod("app", cpu=2500), bind=False)
    assert d.nodes.tolist() == [1, 2, 3]


def test_gpu_and_gpu_model_predicates():
    s = Scheduler(tiny_cluster(), only("balanced_resource"))
    assert s.schedule(pod("app", gpus=1), bind=False).nodes.tolist() == [0]
    assert s.schedule(pod("app", gpus=1, gpu_models=("T4",)), bind=False).node is None
    assert s.schedule(pod("app", gpus=1, gpu_models=("T4", "nano")), bind=False).node_name == "edge-a"


def test_label_presence_and_absence_of_the_pod():
    s = Scheduler(tiny_cluster(), only("balanced_resource"))
    assert s.schedule(pod("app", node_labels_present=(CAPABILITY_GPU,)), bind=False).nodes.tolist() == [0]
    assert s.schedule(pod("app", node_labels_absent=(CAPABILITY_GPU,)), bind=False).nodes.tolist() == [1, 2]


def test_unschedulable_nodes_take_nothing():
    cluster = tiny_cluster()
    cluster.schedulable[2] = False
    assert Scheduler(cluster, only("balanced_resource")).schedule(pod("app"), bind=False).nodes.tolist() == [0, 1]


def test_first_maximum_in_scan_order_wins_in_skippy_mode():
    s = Scheduler(tiny_cluster(), only("capability"))  # all zero: a tie everywhere
    assert s.schedule(pod("app")).node_name == "edge-a"


def test_binding_updates_columns_and_cache():
    cluster = tiny_cluster()
    d = Scheduler(cluster, only("locality_type")).schedule(pod("app"))
    assert d.node == 0 and d.needed_images == ["app:latest"]
    assert cluster.cpu_free[0] == 1000 and cluster.memory_free[0] == 3 * GiB and cluster.pods[0] == 1
    assert cluster.image_cached[cluster.image_index("app"), 0] and cluster.image_nodes[cluster.image_index("app")] == 1
    cluster.remove(d.pod, 0)
    assert cluster.cpu_free[0] == 2000 and cluster.image_cached[cluster.image_index("app"), 0]


@pytest.mark.parametrize(
    ("n", "percentage", "mode", "expected"),
    [
        (1000, 0, "skippy", 420),
        (5000, 0, "skippy", 500),
        (15000, 0, "skippy", 750),
        (4, 10, "skippy", 4),
        (50, 10, "skippy", 100),
        (50, 10, "kube", 50),
        (1000, 100, "kube", 1000),
        (1000, 30, "kube", 300),
        (5000, 0, "kube", 500),
    ],
)
def test_feasible_nodes_to_find(n, percentage, mode, expected):
    assert feasible_nodes_to_find(n, percentage, mode) == expected


def test_scan_is_cyclic_from_the_start_index():
    passes = np.array([True, False, True, True, False, True])
    assert scan(passes, 3, 10)[0].tolist() == [3, 5, 0, 2]
    nodes, visited = scan(passes, 3, 2)
    assert nodes.tolist() == [3, 5] and visited == 3


def uniform_cluster(n: int) -> Cluster:
    return Cluster([NodeSpec(f"n{i}", 4000, 8 * GiB, {ARCH: "amd64"}) for i in range(n)], ContainerRegistry(IMAGES))


def test_sampling_walks_round_robin():
    s = Scheduler(uniform_cluster(300), only("balanced_resource", percentage_of_nodes_to_score=10))
    first = s.schedule(pod("app"))
    second = s.schedule(pod("app"))
    assert first.nodes.tolist() == list(range(100)) and second.nodes.tolist() == list(range(100, 200))
    assert s.start_index == 200


def test_skippy_start_index_restarts_after_last_feasible_and_kube_after_visited():
    cluster = uniform_cluster(5)
    cluster.schedulable[4] = False
    s = Scheduler(cluster, only("balanced_resource"))
    s.schedule(pod("app"))
    assert s.start_index == 4  # after n3, the last feasible
    s.schedule(pod("app"))
    assert s.start_index == 4
    k = Scheduler(cluster, only("balanced_resource", mode="kube"))
    k.schedule(pod("app"))
    assert k.start_index == 0  # all 5 visited


def test_weights_change_live_and_presets():
    cluster = tiny_cluster()
    params = only("locality_type")
    s = Scheduler(cluster, params)
    assert s.schedule(pod("app"), bind=False).node_name == "edge-a"
    params.param.update(weight_locality_type=0.0, weight_latency_aware_image_locality=5.0)
    assert s.schedule(pod("app"), bind=False).node_name == "cloud-b"
    params.apply_preset("kube default")
    assert params.weights()["least_allocated"] == 1 and params.weights()["locality_type"] == 0


def test_kube_ties_are_broken_with_the_generator():
    picks = {
        Scheduler(uniform_cluster(20), only("capability", mode="kube"), rng=np.random.default_rng(seed)).schedule(pod("app")).node
        for seed in range(10)
    }
    assert len(picks) > 1


# ------------------------------------------------------------------------------------ breakdown


def test_breakdown_lists_every_node_and_priority():
    cluster = tiny_cluster()
    s = Scheduler(cluster, SchedulerParams(), explain=True)
    d = s.schedule(pod("app", cpu=2500))
    df = d.breakdown()
    assert len(df) == cluster.n * len(PRIORITIES)
    assert list(df.columns) == [
        "node",
        "node_index",
        "scan_position",
        "priority",
        "raw",
        "score",
        "weight",
        "weighted",
        "total",
        "feasible",
        "reason",
        "winner",
    ]
    per_node = df.drop_duplicates("node").set_index("node")
    assert per_node.loc["edge-a", "reason"] == "PodFitsResources"
    assert per_node.loc["store", "reason"] == "NoStorageNode"
    assert per_node.loc[d.node_name, "winner"] and per_node["winner"].sum() == 1
    scored = df[df.feasible]
    sums = scored.groupby("node")["weighted"].sum()
    totals = scored.groupby("node")["total"].first()
    assert np.allclose(sums, totals)
    assert totals.max() == d.score
    assert df.loc[df.priority == "ImageLocality", "weight"].iloc[0] == 0


def test_breakdown_of_a_decision_that_found_nothing():
    d = Scheduler(tiny_cluster(), SchedulerParams()).schedule(pod("app", cpu=100_000))
    assert d.node is None and d.feasible == 0
    assert set(d.breakdown().reason) == {"PodFitsResources"}
