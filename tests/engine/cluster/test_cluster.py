"""The cluster columns, registry, storage index, topologies and the openb importer."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.build import build_cluster
from engine.cluster.importers.openb import OPENB_NODES, openb
from engine.cluster.model import (
    ARCH,
    CAPABILITY_GPU,
    GPU_MODEL,
    LOCALITY,
    NODE_CLASS,
    REGION,
    STORAGE,
    ZONE,
    Cluster,
    Container,
    ContainerRegistry,
    GiB,
    NodeSpec,
    Pod,
    StorageIndex,
    normalize_image_name,
)
from engine.cluster.params import ClusterParams
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import cloud_regions, urban_sensing
from engine.core.params import ParamError, apply_checked
from engine.sim.registry import SECTION_CLASSES


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [("nginx", "nginx:latest"), ("nginx:1.2", "nginx:1.2"), ("host:5000/app", "host:5000/app:latest"), ("a/b:c", "a/b:c")],
)
def test_image_names_are_normalised(raw, normalised):
    assert normalize_image_name(raw) == normalised


def test_registry_keeps_arch_order_and_normalises():
    registry = ContainerRegistry({"app": {"arm64": 2, "amd64": 3}})
    assert registry.index("app:latest") == 0 and "app" in registry
    assert list(registry.sizes[0]) == ["arm64", "amd64"]


def test_storage_index_needs_a_bucket_node():
    storage = StorageIndex()
    with pytest.raises(KeyError):
        storage.put("b", "x", 1)
    storage.make_bucket("b", 2)
    storage.put("b", "x", 5)
    assert storage.stat("b/x") == ("b", 5) and storage.stat("b/y") is None and storage.stat("bad") is None


def small() -> Cluster:
    nodes = [NodeSpec("a", 1000, 2 * GiB, {ARCH: "arm64", ZONE: "z1"}), NodeSpec("b", 2000, 4 * GiB, {ARCH: "amd64", STORAGE: "x"}, gpus=2)]
    return Cluster(nodes, ContainerRegistry({"app": {"amd64": 100, "arm64": 80}, "x86": {"amd64": 50}}))


def test_columns_and_labels():
    c = small()
    assert c.cpu_capacity.tolist() == [1000, 2000] and c.memory_free.tolist() == [2 * GiB, 4 * GiB]
    assert c.has_label(STORAGE).tolist() == [False, True] and c.storage_nodes.tolist() == [1]
    assert c.label_equals(ZONE, "z1").tolist() == [True, False]
    assert c.label_column(ZONE).tolist() == ["z1", ""]
    assert c.node_labels(1) == {ARCH: "amd64", STORAGE: "x"}


def test_place_and_remove_update_one_node():
    c = small()
    pod = Pod("p", (Container("app", 300, GiB), Container("app", 100, 1)), gpus=1)
    assert c.place(pod, 1) == ["app:latest", "app:latest"]
    assert c.cpu_free.tolist() == [1000, 1600] and c.gpu_free.tolist() == [0, 1] and c.pods.tolist() == [0, 1]
    assert c.image_nodes[c.image_index("app")] == 1
    assert c.gpu_milli_free[1].tolist() == [0, 1000]  # the lowest-index free device
    assert c.place(pod, 1) == []
    assert c.gpu_milli_free[1].tolist() == [0, 0] and c.version.tolist() == [0, 2]
    with pytest.raises(ValueError, match="needs the devices"):
        c.remove(pod, 1)
    c.remove(pod, 1, (1,))
    c.remove(pod, 1, (0,))
    assert c.cpu_free.tolist() == [1000, 2000] and c.gpu_milli_free[1].tolist() == [1000, 1000] and c.image_cached[c.image_index("app"), 1]


def test_pull_seconds_use_the_node_arch_and_skip_cached():
    c = small()
    c.registry_bandwidth[:] = [10.0, 50.0]
    assert c.pull_seconds(["app:latest"], 0) == 8.0  # arm64 size
    assert c.pull_seconds(["app:latest", "x86:latest"], 1) == 3.0
    c.cache_image("app", 0)
    assert c.missing_images(Pod("p", (Container("app"),)), 0) == []


def test_node_table_has_one_row_per_node():
    table = small().node_table()
    assert table.name.tolist() == ["a", "b"] and table.storage.tolist() == [False, True]
    assert table.locality.tolist() == ["cloud", "cloud"]


def test_cloud_regions_splits_nodes_evenly():
    c = cloud_regions(1000, 10, np.random.default_rng(1))
    regions = c.node_table().query("not storage").region.value_counts()
    assert len(regions) == 10 and set(regions) == {100}
    assert len(c.storage_nodes) == 10
    s_region = c.label_column(REGION)[c.storage_nodes]
    same = s_region[:, None] == c.label_column(REGION)[None, :]
    assert c.storage_down[same].min() > c.storage_down[~same].max()  # within a region beats across regions


def test_cloud_regions_is_seeded():
    a, b = (cloud_regions(300, 10, np.random.default_rng(4), edge_fraction=0.3) for _ in range(2))
    assert a.names == b.names and (a.registry_bandwidth == b.registry_bandwidth).all()
    assert 0 < a.label_equals(LOCALITY, "edge").sum() < a.n


def test_urban_sensing_layout():
    c = urban_sensing(cells=4, devices_per_cell=5, cloudlets=2, cloud_nodes=3, rng=np.random.default_rng(2))
    table = c.node_table()
    assert len(table) == 4 * 5 + 2 * 4 + 3 + 1
    devices = table.zone.str.startswith("cell")
    assert set(table.arch[devices]) <= {"arm", "arm64"}
    assert (table.locality[devices] == "edge").all() and (table.locality[table.region == "cloud"] == "cloud").all()
    assert (c.registry_bandwidth[devices] < c.registry_bandwidth[table.zone.str.startswith("cloudlet").to_numpy()].min()).all()
    assert c.label_equals(CAPABILITY_GPU, "true")[table.node_class.isin(["xavier-nx", "jetson-nano"]).to_numpy()].all()
    # a cell reaches its own cloudlet's storage faster than another cloudlet's
    cell0 = np.flatnonzero(table.zone == "cell-0")
    rows = c.storage_row[c.storage_nodes[:2]]
    assert (c.storage_down[rows[0], cell0] > c.storage_down[rows[1], cell0]).all()


def test_openb_import():
    c = openb(OPENB_NODES, storage=False)
    assert c.n == 1523
    assert c.gpu_capacity.sum() == 2 * 1 + 3 + 19 + 2 * 131 + 2 * 387 + 4 * 17 + 4 * 28 + 4 * 9 + 8 * 549 + 8 * 39 + 8 * 8 + 8 * 21
    assert c.label_equals(GPU_MODEL, "T4").sum() == 387 + 17
    assert c.cpu_capacity[0] == 32000 and c.memory_capacity[0] == 262144 * 2**20
    sample = openb(OPENB_NODES, nodes=100, rng=np.random.default_rng(0))
    assert sample.n == 101 and len(sample.storage_nodes) == 1


def test_build_cluster_follows_params_and_seed():
    params = ClusterParams(topology="cloud_regions", nodes=50, regions=5, prepull_fraction=0.5)
    a, b = build_cluster(params, np.random.default_rng(9)), build_cluster(params, np.random.default_rng(9))
    assert a.names == b.names and (a.image_cached == b.image_cached).all()
    other = build_cluster(
        ClusterParams(topology="cloud_regions", nodes=50, regions=5, prepull_fraction=0.5, seed_offset=1), np.random.default_rng(9)
    )
    assert (other.label_column(NODE_CLASS) != a.label_column(NODE_CLASS)).any()
    assert build_cluster(ClusterParams(topology="openb", openb_nodes=20), np.random.default_rng(1)).n == 21


def test_cluster_params_are_registered_and_checked():
    assert SECTION_CLASSES["cluster"] is ClusterParams and "scheduler" in SECTION_CLASSES
    params = ClusterParams()
    with pytest.raises(ParamError):
        apply_checked({"cluster": params}, {"cluster.topology": "cloud_regions", "cluster.nodes": 5})
    with pytest.raises(ParamError):
        apply_checked({"cluster": params}, {"cluster.worker_gpu_models": "T4"})
    pod = ClusterParams(worker_capability="nvidia-gpu", worker_input_mib=10.0, worker_gpus=1.0, worker_gpu_models="T4|V100M16").worker_pod(
        "w"
    )
    assert pod.gpu_models == ("T4", "V100M16") and CAPABILITY_GPU in pod.labels and pod.cpu_millis == 500


def test_mixed_pods_cover_the_features():
    c = cloud_regions(100, 10, np.random.default_rng(1))
    c.storage.make_bucket("b", int(c.storage_nodes[0]))
    c.storage.put("b", "x", 10)
    pods = mixed_pods(c, 200, np.random.default_rng(2))
    assert len({p.images[0] for p in pods}) == len(c.registry)
    assert any(len(p.containers) == 2 for p in pods) and any(CAPABILITY_GPU in p.labels for p in pods)
    assert any("b/x" in p.labels.values() for p in pods)


def test_item_seconds_follow_the_storage_index():
    """Kept per path, an item's seconds follow a new size, a new bucket node and new bandwidths."""
    c = cloud_regions(40, 4, np.random.default_rng(3), storage=True)
    first, second = (int(s) for s in c.storage_nodes[:2])
    c.storage.make_bucket("b", first)
    c.storage.put("b", "x", 250_000_000)
    seconds = c.item_seconds("b/x", True, True)
    assert seconds[first] == 0 and seconds.max() > 0 and c.item_seconds("b/x", True, True) is seconds
    assert c.item_seconds("b/missing", True, True) is None
    c.storage.put("b", "x", 500_000_000)  # a new size
    assert c.item_seconds("b/x", True, True).max() > seconds.max()
    c.storage.make_bucket("b", second)  # a second node holds the bucket: no seconds there
    assert c.item_seconds("b/x", True, True)[second] == 0 and seconds[second] > 0
    before = c.item_seconds("b/x", False, False)
    c.set_storage_bandwidth(c.storage_down * 2, c.storage_up * 2)
    after = c.item_seconds("b/x", False, False)
    assert np.allclose(after[after > 0] * 2, before[after > 0])


def test_a_pod_derives_its_requests_in_one_pass():
    pod = Pod("p", (Container("app", 300, GiB), Container("host:5000/side", 100, 1)))
    assert pod.images == ("app:latest", "host:5000/side:latest") and pod.cpu_millis == 400 and pod.memory == GiB + 1
    assert Pod("q", (Container("a:1"),)).memory == Container("a:1").memory


def test_placing_a_pod_of_an_image_registered_since_the_cluster_was_built():
    c = small()
    c.registry.add("late", {"amd64": 10})  # the cache matrix grows at the image's first use: here, the bind
    assert c.place(Pod("p", (Container("late"),)), 1) == ["late:latest"] and c.image_cached[c.image_index("late"), 1]
    c.registry.add("later:1", {"amd64": 1})
    assert c.place(Pod("q", (Container("later:1"), Container("late"))), 1) == ["later:1"]
