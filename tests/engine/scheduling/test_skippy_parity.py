"""Placement parity with edgerun-skippy-core 0.1.1 (installed from PyPI as a test dependency).

The same cluster is built in both (same node order, capacities, labels, image caches, fixed bandwidths,
storage index); a mixed workload of 200+ pods (images of different sizes and archs, sidecars, capability
and data-locality labels) is scheduled by both, with some pods removed along the way, and every placement,
feasible count and list of images to pull must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.build import build_cluster
from engine.cluster.model import Cluster
from engine.cluster.params import ClusterParams
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import catalogue_registry, cloud_regions
from engine.scheduling import Scheduler, SchedulerParams
from engine.scheduling.skippy_compat import silence_skippy_logging, skippy_context, skippy_pod, skippy_scheduler

pytestmark = pytest.mark.parity

CUSTOM_WEIGHTS = {
    "weight_balanced_resource": 2.5,
    "weight_latency_aware_image_locality": 0.7,
    "weight_locality_type": 3.0,
    "weight_data_locality": 1.3,
    "weight_capability": 0.1,
    "weight_image_locality": 1.9,
}


ARCH_SETS = [("amd64", "arm64", "arm"), ("amd64",), ("arm64", "amd64"), ("amd64", "arm64")]


def parity_cluster(n: int, storage: bool, seed: int) -> Cluster:
    """Cloud regions with 30% edge sites, registry links of a few fixed speeds and many images, so caches are often cold."""
    rng = np.random.default_rng(seed)
    registry = catalogue_registry()
    extra = [f"lib/img-{k}" for k in range(20)] + ["registry.local:5000/sensing/filter", "lib/tagged:2.1"]
    for k, image in enumerate(extra):
        registry.add(image, {arch: int(rng.integers(20, 3000)) * 2**20 for arch in ARCH_SETS[k % len(ARCH_SETS)]})
    cluster = cloud_regions(n, 10, rng, storage=storage, edge_fraction=0.3, registry=registry)
    # registry links within a factor of two of each other: LatencyAwareImageLocality's min/max quirk then matters
    cluster.registry_bandwidth[:] = rng.choice([20e6, 25e6, 30e6, 40e6], size=cluster.n)
    for row, s in enumerate(cluster.storage_nodes):
        cluster.storage.make_bucket(f"data-{row}", int(s))
        for j in range(3):
            cluster.storage.put(f"data-{row}", f"item-{j}", int(rng.integers(1, 2000)) * 2**20)
    if len(cluster.storage_nodes) > 1:  # one bucket replicated on two storage nodes
        cluster.storage.make_bucket("shared", int(cluster.storage_nodes[0]))
        cluster.storage.make_bucket("shared", int(cluster.storage_nodes[-1]))
        cluster.storage.put("shared", "blob", 700 * 2**20)
    for i in np.flatnonzero(rng.random(cluster.n) < 0.05):
        cluster.cache_image(cluster.registry.names[int(rng.integers(len(cluster.registry)))], int(i))
    return cluster


def run_both(cluster: Cluster, params: SchedulerParams, pods: int, seed: int) -> None:
    silence_skippy_logging()
    ctx = skippy_context(cluster)
    theirs = skippy_scheduler(ctx, params)
    ours = Scheduler(cluster, params)
    rng = np.random.default_rng(seed + 1)
    bound: list[tuple] = []
    placed = 0
    images = [name.removesuffix(":latest") for name in cluster.registry.names]  # raw names: both normalise them
    for step, pod in enumerate(mixed_pods(cluster, pods, rng, images)):
        sp = skippy_pod(pod)
        expected = theirs.schedule(sp)
        got = ours.schedule(pod)
        host = expected.suggested_host.name if expected.suggested_host else None
        assert (got.node_name, got.feasible, got.needed_images) == (host, expected.feasible_nodes, expected.needed_images), f"pod {step}"
        assert ours.start_index == theirs.last_scored_node_index
        if got.node is not None:
            placed += 1
            bound.append((pod, got.node, sp, expected.suggested_host))
        if step % 7 == 6 and bound:  # remove an earlier pod from both
            pod_, node, sp_, host_ = bound.pop(int(rng.integers(len(bound))))
            cluster.remove(pod_, node)
            ctx.remove_pod_from_node(sp_, host_)
    nodes = ctx.list_nodes()
    assert [nd.allocatable.cpu_millis for nd in nodes] == cluster.cpu_free.tolist()
    assert [nd.allocatable.memory for nd in nodes] == cluster.memory_free.tolist()
    assert [ctx.image_states[name].num_nodes for name in cluster.registry.names] == cluster.image_nodes.tolist()
    assert placed > 0


@pytest.mark.parametrize("weights", ["default", "custom"])
@pytest.mark.parametrize("percentage", [100, 0])
@pytest.mark.parametrize("storage", [True, False])
@pytest.mark.parametrize("n", [10, 100, 1000])
def test_placements_identical_to_skippy_core(n, storage, percentage, weights):
    params = SchedulerParams(percentage_of_nodes_to_score=percentage, **(CUSTOM_WEIGHTS if weights == "custom" else {}))
    seed = n * 10 + storage * 2 + (percentage == 0)
    run_both(parity_cluster(n, storage, seed), params, 200, seed)


def test_sampled_percentage_and_storage_nodes_allowed():
    params = SchedulerParams(percentage_of_nodes_to_score=30, avoid_storage_nodes=False, **CUSTOM_WEIGHTS)
    run_both(parity_cluster(1000, True, 7), params, 200, 7)


def test_urban_sensing_layout():
    cluster = build_cluster(ClusterParams(topology="urban_sensing", cells=8, devices_per_cell=10), np.random.default_rng(3))
    run_both(cluster, SchedulerParams(), 250, 3)
