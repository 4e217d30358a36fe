"""Cluster synthesizers, seeded and parameterised.

* :func:`cloud_regions`: Skippy's scalability layout, R regions of N/R VMs each (a storage node per region).
* :func:`urban_sensing`: cells of small ARM devices, cloudlets with accelerators, one cloud region, with
  uplink and backbone bandwidths.
* :func:`faas_edge`: the same layout on faas-sim's measured device types (rpi3 ... xeongpu).

Importers of real clusters are in :mod:`engine.cluster.importers`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import partial

import numpy as np

from engine.cluster.model import (
    ARCH,
    CAPABILITY_GPU,
    GPU_MODEL,
    IMAGE_CATALOGUE,
    LOCALITY,
    NODE_CLASS,
    REGION,
    STORAGE,
    WORKER_INPUT,
    ZONE,
    Cluster,
    ContainerRegistry,
    GiB,
    MiB,
    NodeSpec,
    StorageIndex,
)

MBIT = 1e6 / 8  # bytes per second in one Mbit/s

#: Node classes: (cpu millicores, memory bytes, arch, GPUs, GPU model, speed factor for job service time).
NODE_CLASSES: dict[str, tuple[int, int, str, float, str, float]] = {
    "rpi3": (4000, 1 * GiB, "arm", 0, "", 0.25),
    "rpi4": (4000, 4 * GiB, "arm64", 0, "", 0.4),
    "jetson-nano": (4000, 4 * GiB, "arm64", 1, "nano", 0.5),
    "nuc": (8000, 16 * GiB, "amd64", 0, "", 1.0),
    "xavier-nx": (6000, 8 * GiB, "arm64", 1, "xavier", 0.9),
    "vm-small": (2000, 4 * GiB, "amd64", 0, "", 1.0),
    "vm-medium": (4000, 16 * GiB, "amd64", 0, "", 1.2),
    "vm-large": (8000, 32 * GiB, "amd64", 0, "", 1.5),
    "vm-arm": (4000, 8 * GiB, "arm64", 0, "", 1.1),
    "vm-gpu": (8000, 32 * GiB, "amd64", 1, "T4", 1.5),
    "edge-gateway": (4000, 8 * GiB, "arm64", 0, "", 0.6),
    "storage": (8000, 32 * GiB, "amd64", 0, "", 1.0),
}


def node(name: str, node_class: str, labels: dict[str, str], registry_bandwidth: float) -> NodeSpec:
    """A node of a known class with the class's capacity, arch, GPUs and speed."""
    cpu, memory, arch, gpus, model, speed = NODE_CLASSES[node_class]
    labels = {ARCH: arch, NODE_CLASS: node_class, **labels}
    if gpus:
        labels.update({CAPABILITY_GPU: "true", GPU_MODEL: model})
    return NodeSpec(name, cpu, memory, labels, speed=speed, gpus=gpus, registry_bandwidth=registry_bandwidth)


def catalogue_registry() -> ContainerRegistry:
    return ContainerRegistry(IMAGE_CATALOGUE)


def _prepull(cluster: Cluster, image: str, rng: np.random.Generator, cloud: bool, fraction: float) -> None:
    is_cloud = ~cluster.label_equals(LOCALITY, "edge") & ~cluster.has_label(STORAGE)
    chosen = (is_cloud & cloud) | ((rng.random(cluster.n) < fraction) & ~cluster.has_label(STORAGE))
    for i in np.flatnonzero(chosen):
        cluster.cache_image(image, int(i))


def _buckets(cluster: Cluster, rng: np.random.Generator, worker_input: int) -> None:
    """A data bucket on every storage node with a few items, and the worker input on the first one."""
    for row, s in enumerate(cluster.storage_nodes):
        bucket = f"data-{row}"
        cluster.storage.make_bucket(bucket, int(s))
        for j in range(3):
            cluster.storage.put(bucket, f"item-{j}", int(rng.integers(1, 500)) * MiB)
    if len(cluster.storage_nodes):
        bucket, item = WORKER_INPUT.split("/")
        cluster.storage.make_bucket(bucket, int(cluster.storage_nodes[0]))
        cluster.storage.put(bucket, item, worker_input)


def cloud_regions(
    nodes: int,
    regions: int = 10,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    edge_fraction: float = 0.0,
    registry: ContainerRegistry | None = None,
) -> Cluster:
    """``regions`` regions of ``nodes // regions`` VMs (the first regions take the remainder), region-major order.

    VM classes are drawn per node; registry bandwidth is fixed per region (the registry sits in region 0);
    storage links are 10 Gbit/s within a region and the slower region's WAN link across regions.
    """
    rng = rng or np.random.default_rng(0)
    wan = np.concatenate([[10000.0], rng.choice([200.0, 500.0, 1000.0, 2000.0], size=regions - 1)]) * MBIT
    classes = ["vm-small", "vm-medium", "vm-large", "vm-arm", "vm-gpu"]
    specs: list[NodeSpec] = []
    region_of: list[int] = []
    for r in range(regions):
        count = nodes // regions + (1 if r < nodes % regions else 0)
        base = {REGION: f"region-{r}"}
        if storage:
            specs.append(node(f"storage-{r}", "storage", {**base, ZONE: f"region-{r}-a", STORAGE: "minio"}, wan[r]))
            region_of.append(r)
        for i in range(count):
            zone = {ZONE: f"region-{r}-{'abc'[int(rng.integers(3))]}"}
            if rng.random() < edge_fraction:
                specs.append(node(f"edge-{r}-{i}", "edge-gateway", {**base, **zone, LOCALITY: "edge"}, wan[r] / 4))
            else:
                cls = classes[int(rng.choice(len(classes), p=[0.3, 0.3, 0.2, 0.1, 0.1]))]
                specs.append(node(f"vm-{r}-{i}", cls, {**base, **zone, LOCALITY: "cloud"}, wan[r]))
            region_of.append(r)
    cluster = Cluster(specs, registry or catalogue_registry(), StorageIndex())
    if storage:
        region = np.array(region_of)
        s_region = region[cluster.storage_nodes]
        same = s_region[:, None] == region[None, :]
        link = np.minimum(wan[s_region][:, None], wan[region][None, :])
        bw = np.where(same, 10000 * MBIT, link)
        cluster.set_storage_bandwidth(bw, bw.copy())
    return cluster


def urban_sensing(
    cells: int = 6,
    devices_per_cell: int = 8,
    cloudlets: int = 3,
    cloud_nodes: int = 10,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    uplink_mbps: float = 50.0,
    backbone_mbps: float = 1000.0,
    registry: ContainerRegistry | None = None,
) -> Cluster:
    """Cells of Raspberry Pis and Jetson Nanos, cloudlets (NUCs and Xavier NX boards) each serving some cells,
    and a cloud region with the image registry.

    Registry links: cloud 10 Gbit/s, cloudlets the backbone, devices their cell's uplink (+-20%, seeded).
    Storage sits at each cloudlet site (and in the cloud): a cell reaches its cloudlet's storage over its
    uplink, other sites over the backbone, capped by the device uplink.
    """
    return _edge_layout(
        cells,
        devices_per_cell,
        cloudlets,
        cloud_nodes,
        rng,
        storage,
        uplink_mbps,
        backbone_mbps,
        registry,
        cell_classes=(["rpi3", "rpi4", "jetson-nano"], [0.3, 0.5, 0.2]),
        cloudlet_classes=("nuc", "nuc", "xavier-nx"),
        cloud_class=lambda v: "vm-large",
        make_node=node,
    )


#: The faas_edge layout's device mix: cells of single-board computers and AI boards, cloudlets, cloud VMs.
FAAS_EDGE_CELL = (["rpi3", "rpi4", "rockpi", "coral", "nano", "tx2"], [0.15, 0.3, 0.15, 0.15, 0.15, 0.1])
FAAS_EDGE_CLOUDLET = ("nuc", "nuc", "nx", "tx2")


def faas_edge(
    cells: int = 6,
    devices_per_cell: int = 8,
    cloudlets: int = 3,
    cloud_nodes: int = 10,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    uplink_mbps: float = 50.0,
    backbone_mbps: float = 1000.0,
    registry: ContainerRegistry | None = None,
) -> Cluster:
    """faas-sim's urban-sensing layout on the measured device types (:mod:`engine.cluster.devices`).

    Cells of rpi3/rpi4/rockpi/coral/nano/tx2 devices (seeded mix), cloudlets of two NUCs, a Jetson NX and a TX2,
    and cloud VMs, one in four a xeongpu, the rest xeoncpu. Links and storage as in :func:`urban_sensing`.
    """
    # the device table (and its kube quantity parser, fractions, decimal) loads with the first such cluster, not with
    # every cluster
    from engine.cluster.devices import device_node, device_shapes

    return _edge_layout(
        cells,
        devices_per_cell,
        cloudlets,
        cloud_nodes,
        rng,
        storage,
        uplink_mbps,
        backbone_mbps,
        registry,
        cell_classes=FAAS_EDGE_CELL,
        cloudlet_classes=FAAS_EDGE_CLOUDLET,
        cloud_class=lambda v: "xeongpu" if v % 4 == 3 else "xeoncpu",
        make_node=partial(device_node, shapes=device_shapes()),  # the device table read once, not once per node
    )


def class_picker(rng: np.random.Generator, classes: list[str], p: list[float]) -> Callable[[], str]:
    """``str(rng.choice(classes, p=p))`` one call at a time, as numpy draws it: one ``rng.random()`` per pick and the
    first class whose bound (the cumulative ``p`` divided by its last value) exceeds it (``searchsorted`` on the
    right). The same classes from the same stream, without ``choice``'s checks and arrays per call (~20 us each: a
    1,000-device layout spent most of its construction there)."""
    cdf = np.asarray(p, dtype=np.float64).cumsum()
    cdf /= cdf[-1]
    bounds = cdf.tolist()
    draw = rng.random
    return lambda: classes[bisect_right(bounds, draw())]


def _edge_layout(
    cells: int,
    devices_per_cell: int,
    cloudlets: int,
    cloud_nodes: int,
    rng: np.random.Generator | None,
    storage: bool,
    uplink_mbps: float,
    backbone_mbps: float,
    registry: ContainerRegistry | None,
    cell_classes: tuple[list[str], list[float]],
    cloudlet_classes: tuple[str, ...],
    cloud_class: Callable[[int], str],
    make_node: Callable[[str, str, dict[str, str], float], NodeSpec],
) -> Cluster:
    """The urban-sensing layout with the given node classes: cells, cloudlets (with storage), a cloud region."""
    rng = rng or np.random.default_rng(0)
    uplink, backbone = uplink_mbps * MBIT, backbone_mbps * MBIT
    specs: list[NodeSpec] = []
    site: list[int] = []  # serving site per node: cloudlet index, -1 for the cloud
    device: list[bool] = []
    pick = class_picker(rng, cell_classes[0], cell_classes[1])
    for c in range(cells):
        cell_uplink = uplink * rng.uniform(0.8, 1.2)
        for d in range(devices_per_cell):
            cls = pick()
            labels = {REGION: "city", ZONE: f"cell-{c}", LOCALITY: "edge"}
            specs.append(make_node(f"cell-{c}-{cls}-{d}", cls, labels, min(cell_uplink, backbone)))
            site.append(c % cloudlets if cloudlets else -2)  # -2: no cloudlet, not local to the cloud either
            device.append(True)
    for k in range(cloudlets):
        labels = {REGION: "city", ZONE: f"cloudlet-{k}", LOCALITY: "edge"}
        for j, cls in enumerate(cloudlet_classes):
            specs.append(make_node(f"cloudlet-{k}-{cls}-{j}", cls, labels, backbone))
            site.append(k)
            device.append(False)
        if storage:
            specs.append(node(f"cloudlet-{k}-storage", "storage", {**labels, STORAGE: "minio"}, backbone))
            site.append(k)
            device.append(False)
    for v in range(cloud_nodes):
        specs.append(make_node(f"cloud-{v}", cloud_class(v), {REGION: "cloud", ZONE: "cloud-a", LOCALITY: "cloud"}, 10000 * MBIT))
        site.append(-1)
        device.append(False)
    if storage:
        specs.append(
            node("cloud-storage", "storage", {REGION: "cloud", ZONE: "cloud-a", LOCALITY: "cloud", STORAGE: "minio"}, 10000 * MBIT)
        )
        site.append(-1)
        device.append(False)
    cluster = Cluster(specs, registry or catalogue_registry(), StorageIndex())
    if storage:
        site_arr, dev = np.array(site), np.array(device)
        s_site = site_arr[cluster.storage_nodes]
        same = s_site[:, None] == site_arr[None, :]
        cap = np.where(dev, cluster.registry_bandwidth, np.inf)[None, :]  # a device never beats its own uplink
        local = np.where(dev[None, :], cap * 2, 10000 * MBIT)  # LAN to the site's devices: twice the WAN uplink
        bw = np.minimum(np.where(same, local, backbone), np.where(same, np.inf, cap))
        cluster.set_storage_bandwidth(bw, bw.copy())
    return cluster
