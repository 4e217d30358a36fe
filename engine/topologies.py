"""Cluster synthesizers and importers, all seeded and parameterised, plus a mixed pod workload.

* :func:`cloud_regions`: Skippy's scalability layout, R regions of N/R VMs each (a storage node per region).
* :func:`urban_sensing`: cells of small ARM devices, cloudlets with accelerators, one cloud region, with
  uplink and backbone bandwidths.
* :func:`openb`: the Alibaba openb GPU cluster node list (``data/clusters``).
* :func:`kube_nodes`: a ``kubectl get nodes -o json`` dump (capacities, labels, cordons, image caches).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from engine import filecache
from engine.cluster import (
    ARCH,
    CAPABILITY,
    CAPABILITY_GPU,
    GPU_MODEL,
    IMAGE_CATALOGUE,
    LOCALITY,
    NODE_CLASS,
    RECEIVES_FROM,
    REGION,
    SENDS_TO,
    STORAGE,
    WORKER_INPUT,
    ZONE,
    Cluster,
    ClusterParams,
    Container,
    ContainerRegistry,
    GiB,
    MiB,
    NodeSpec,
    Pod,
    StorageIndex,
)

CLUSTER_DIR = Path(__file__).resolve().parent.parent / "data" / "clusters"
OPENB_NODES = CLUSTER_DIR / "openb_node_list_all_node.csv"
KUBE_NODES_SAMPLE = CLUSTER_DIR / "kube-nodes-sample.json"
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
    rng = rng or np.random.default_rng(0)
    uplink, backbone = uplink_mbps * MBIT, backbone_mbps * MBIT
    specs: list[NodeSpec] = []
    site: list[int] = []  # serving site per node: cloudlet index, -1 for the cloud
    device: list[bool] = []
    for c in range(cells):
        cell_uplink = uplink * rng.uniform(0.8, 1.2)
        for d in range(devices_per_cell):
            cls = str(rng.choice(["rpi3", "rpi4", "jetson-nano"], p=[0.3, 0.5, 0.2]))
            labels = {REGION: "city", ZONE: f"cell-{c}", LOCALITY: "edge"}
            specs.append(node(f"cell-{c}-{cls}-{d}", cls, labels, min(cell_uplink, backbone)))
            site.append(c % cloudlets if cloudlets else -2)  # -2: no cloudlet, not local to the cloud either
            device.append(True)
    for k in range(cloudlets):
        labels = {REGION: "city", ZONE: f"cloudlet-{k}", LOCALITY: "edge"}
        for j, cls in enumerate(("nuc", "nuc", "xavier-nx")):
            specs.append(node(f"cloudlet-{k}-{cls}-{j}", cls, labels, backbone))
            site.append(k)
            device.append(False)
        if storage:
            specs.append(node(f"cloudlet-{k}-storage", "storage", {**labels, STORAGE: "minio"}, backbone))
            site.append(k)
            device.append(False)
    for v in range(cloud_nodes):
        specs.append(node(f"cloud-{v}", "vm-large", {REGION: "cloud", ZONE: "cloud-a", LOCALITY: "cloud"}, 10000 * MBIT))
        site.append(-1)
        device.append(False)
    if storage:
        specs.append(node("cloud-storage", "storage", {REGION: "cloud", ZONE: "cloud-a", LOCALITY: "cloud", STORAGE: "minio"}, 10000 * MBIT))
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


def openb(path: Path | str = OPENB_NODES, nodes: int = 0, rng: np.random.Generator | None = None, storage: bool = True,
          registry: ContainerRegistry | None = None) -> Cluster:
    """The Alibaba openb nodes (cpu, memory, GPU count and model), one datacenter with a 10 Gbit/s registry link.

    ``nodes`` > 0 takes a seeded sample in file order; ``storage`` adds one storage node.
    """
    table = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8", missing_values="", filling_values=None)
    rows = np.arange(len(table))
    if 0 < nodes < len(table):
        rows = np.sort((rng or np.random.default_rng(0)).choice(len(table), size=nodes, replace=False))
    specs = []
    for r in rows:
        sn, cpu, mem, gpus, model = (table[f][r] for f in table.dtype.names)
        labels = {ARCH: "amd64", REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud",
                  NODE_CLASS: f"openb-{model}" if gpus else "openb-cpu"}
        if gpus:
            labels.update({CAPABILITY_GPU: "true", GPU_MODEL: str(model)})
        specs.append(NodeSpec(str(sn), int(cpu), int(mem) * MiB, labels, speed=1.0, gpus=float(gpus), registry_bandwidth=10000 * MBIT))
    if storage:
        specs.append(node("openb-storage", "storage", {REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud", STORAGE: "minio"}, 10000 * MBIT))
    cluster = Cluster(specs, registry or catalogue_registry(), StorageIndex())
    if storage:
        full = np.full((1, cluster.n), 10000 * MBIT)
        cluster.set_storage_bandwidth(full, full.copy())
    return cluster


# ------------------------------------------------------------------------ kubectl get nodes -o json

#: Multipliers of the Kubernetes quantity suffixes (resource.Quantity): decimal SI and binary SI.
QUANTITY_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?")
_MAX_EXPONENT = 40  # beyond 10**±40 no resource makes sense (and huge exponents would never finish)
_INT64_MAX = 2**63 - 1

KUBE_REGION = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
KUBE_ZONE = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
KUBE_ARCH = ("kubernetes.io/arch", "beta.kubernetes.io/arch")
KUBE_INSTANCE_TYPE = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
KUBE_GPU = "nvidia.com/gpu"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
KUBE_CLOUD_MBPS = 10000.0  # registry link of a cloud node (a dump says nothing about links)
KUBE_EDGE_MBPS = 100.0  # registry link of a node labelled locality.skippy.io/type=edge
_ALLOWED = {
    "cpu": "e.g. 4, 3920m, 0.5",
    "memory": "e.g. 16393856Ki, 16Gi, 512Mi, 1G, 1e9 or bytes",
    KUBE_GPU: "a whole number, e.g. 1 or 4",
}


def parse_quantity(value: str | int) -> Fraction:
    """The exact value of a Kubernetes quantity: ``<sign><number><suffix>`` with the decimal SI suffixes
    n u m k M G T P E, the binary ones Ki Mi Gi Ti Pi Ei, or a decimal exponent (``1e9``, ``5E-3``).

    ``"3920m"`` -> 3920/1000, ``"16Gi"`` -> 16 * 2**30, ``"0.5"`` -> 1/2. JSON integers are taken as they are.
    Raises ValueError for anything else (no blanks, no unit-less ``K``, no ``kB``).
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int):
        return Fraction(value)
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    if suffix not in QUANTITY_SUFFIXES:  # a decimal exponent
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"{value!r} is out of range (exponent beyond ±{_MAX_EXPONENT})")
        return Fraction(number) * Fraction(10) ** exponent
    return Fraction(number) * QUANTITY_SUFFIXES[suffix]


def cpu_millicores(quantity: Fraction) -> int:
    """Millicores of a cpu quantity, rounded up as Kubernetes' MilliValue does (``100n`` -> 1)."""
    return math.ceil(quantity * 1000)


def quantity_bytes(quantity: Fraction) -> int:
    """Bytes (or units) of a quantity, rounded up as Kubernetes' Value does."""
    return math.ceil(quantity)


class KubeNodesError(ValueError):
    """A node dump that cannot be imported; the message names the file, the item (index and node name),
    the field and what is allowed."""

    def __init__(self, path: Path | str, item: str, field: str, message: str):
        self.path, self.item, self.field = str(path), item, field
        super().__init__(": ".join(part for part in (self.path, item, field, message) if part))


@dataclass(frozen=True)
class KubeNode:
    """One node of a dump, checked and converted (cpu in millicores, memory in bytes)."""

    name: str
    cpu_millis: int
    memory: int
    gpus: int
    labels: Mapping[str, str]
    schedulable: bool
    images: tuple[tuple[tuple[str, ...], int], ...]  # (names, sizeBytes) per entry of status.images


def resolve_cluster_path(path: Path | str) -> Path:
    """A cluster file: absolute, or relative to ``data/clusters``."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else CLUSTER_DIR / p


def load_kube_nodes(path: Path | str) -> tuple[KubeNode, ...]:
    """Read and check a ``kubectl get nodes -o json`` dump (a v1 ``List`` of ``items``, or one ``Node``).

    Cached per file, size and modification time. Raises :class:`KubeNodesError` for bad input.
    """
    return filecache.cached("kube_nodes", Path(path).resolve(), (), lambda: _read_kube_nodes(path))


def _read_kube_nodes(path: Path | str) -> tuple[KubeNode, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise KubeNodesError(path, "", "", f"cannot be read ({getattr(e, 'strerror', None) or e}); allowed: a readable UTF-8 JSON file") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise KubeNodesError(path, "", "", f"not JSON (line {e.lineno}, column {e.colno}: {e.msg}); allowed: the output of kubectl get nodes -o json") from None
    if isinstance(doc, dict) and doc.get("kind") == "Node":
        items: list[tuple[str, Any]] = [("node", doc)]
    elif isinstance(doc, dict) and isinstance(doc.get("items"), list) and doc.get("kind", "List") in ("List", "NodeList"):
        items = [(f"items[{k}]", item) for k, item in enumerate(doc["items"])]
    else:
        raise KubeNodesError(path, "", "top level", "neither a List with items nor a Node; allowed: the output of kubectl get nodes -o json (kind List or NodeList, or a single kind Node)")
    if not items:
        raise KubeNodesError(path, "", "items", "empty; allowed: at least one Node")
    nodes: list[KubeNode] = []
    seen: dict[str, str] = {}
    for where, item in items:
        record = _kube_node(path, where, item)
        if record.name in seen:
            raise KubeNodesError(path, f"{where} ({record.name})", "metadata.name", f"repeats {seen[record.name]}; allowed: unique node names")
        seen[record.name] = where
        nodes.append(record)
    return tuple(nodes)


def _kube_node(path: Path | str, where: str, item: Any) -> KubeNode:
    def fail(field: str, message: str) -> KubeNodesError:
        return KubeNodesError(path, where, field, message)

    def obj(parent: Mapping, key: str, field: str) -> Mapping:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise fail(field, f"{type(value).__name__} is not allowed; allowed: an object")
        return value

    if not isinstance(item, dict):
        raise fail("", f"{type(item).__name__} is not allowed; allowed: a Node object")
    if item.get("kind", "Node") != "Node":
        raise fail("kind", f"{item.get('kind')!r} is not allowed; allowed: 'Node'")
    meta = obj(item, "metadata", "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise fail("metadata.name", f"{name!r} is not allowed; allowed: a non-empty string")
    where = f"{where} ({name})"
    labels = obj(meta, "labels", "metadata.labels")
    for key, value in labels.items():
        if not isinstance(value, str):
            raise fail(f"metadata.labels[{key!r}]", f"{value!r} is not allowed; allowed: a string")
    spec, status = obj(item, "spec", "spec"), obj(item, "status", "status")
    sections = (("allocatable", obj(status, "allocatable", "status.allocatable")), ("capacity", obj(status, "capacity", "status.capacity")))

    def resource(key: str, required: bool) -> tuple[Fraction | None, str]:
        for section, values in sections:
            if key in values:
                field = f"status.{section}.{key}"
                try:
                    quantity = parse_quantity(values[key])
                except ValueError:
                    raise fail(field, f"{values[key]!r} is not a Kubernetes quantity; allowed: {_ALLOWED[key]}") from None
                return quantity, field
        if required:
            raise fail(f"status.allocatable.{key}", f"missing (also from status.capacity); allowed: a quantity, {_ALLOWED[key]}")
        return None, ""

    cpu, field = resource("cpu", True)
    cpu_millis = cpu_millicores(cpu)
    if not 0 < cpu_millis <= _INT64_MAX:
        raise fail(field, f"{cpu_millis / 1000:g} cores is out of range; allowed: more than 0 ({_ALLOWED['cpu']})")
    memory, field = resource("memory", True)
    memory_bytes = quantity_bytes(memory)
    if not 0 < memory_bytes <= _INT64_MAX:
        raise fail(field, f"{memory_bytes} bytes is out of range; allowed: more than 0 ({_ALLOWED['memory']})")
    gpu, field = resource(KUBE_GPU, False)
    gpus = 0
    if gpu is not None:
        if gpu < 0 or gpu.denominator != 1 or gpu > 4096:
            raise fail(field, f"{float(gpu):g} GPUs is not allowed; allowed: {_ALLOWED[KUBE_GPU]} (at most 4096)")
        gpus = int(gpu)

    node_info = obj(status, "nodeInfo", "status.nodeInfo")
    arch = next((labels[k] for k in KUBE_ARCH if labels.get(k)), None) or node_info.get("architecture")
    if not isinstance(arch, str) or not arch:
        raise fail(f"metadata.labels[{KUBE_ARCH[0]!r}]", f"missing (also {KUBE_ARCH[1]} and status.nodeInfo.architecture); allowed: an architecture such as amd64 or arm64")
    out = {ARCH: arch, LOCALITY: labels.get(LOCALITY) or "cloud",
           NODE_CLASS: next((labels[k] for k in KUBE_INSTANCE_TYPE if labels.get(k)), "k8s-node")}
    for target, keys in ((REGION, KUBE_REGION), (ZONE, KUBE_ZONE)):
        value = next((labels[k] for k in keys if labels.get(k)), None)
        if value:
            out[target] = value
    out.update({k: v for k, v in labels.items() if k.startswith(CAPABILITY + "/") or k == STORAGE})
    if labels.get(GPU_MODEL):
        out[GPU_MODEL] = labels[GPU_MODEL]
    if gpus:
        out.setdefault(CAPABILITY_GPU, "true")

    unschedulable = spec.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        raise fail("spec.unschedulable", f"{unschedulable!r} is not allowed; allowed: true or false")
    taints = spec.get("taints") or []
    if not isinstance(taints, list) or not all(isinstance(t, dict) for t in taints):
        raise fail("spec.taints", "not a list of objects; allowed: [{key, effect}, ...]")
    cordoned = unschedulable or any(t.get("key") == UNSCHEDULABLE_TAINT and t.get("effect") == "NoSchedule" for t in taints)

    images = []
    entries = status.get("images") or []
    if not isinstance(entries, list):
        raise fail("status.images", f"{type(entries).__name__} is not allowed; allowed: a list of {{names, sizeBytes}}")
    for j, entry in enumerate(entries):
        names = entry.get("names", []) if isinstance(entry, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise fail(f"status.images[{j}].names", "not a list of strings; allowed: image names such as scalelab/worker:1.0")
        size = entry.get("sizeBytes", 0)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise fail(f"status.images[{j}].sizeBytes", f"{size!r} is not allowed; allowed: a whole number of bytes >= 0")
        images.append((tuple(names), size))
    return KubeNode(name, cpu_millis, memory_bytes, gpus, out, not cordoned, tuple(images))


def registry_image(registry: ContainerRegistry, name: str) -> str | None:
    """The registry's image a node-status image name refers to, or None.

    Digest references (``repo@sha256:...``) are skipped; Docker Hub prefixes (``docker.io/``,
    ``docker.io/library/``) are dropped when the plain name is in the registry.
    """
    if "@" in name:
        return None
    candidates = [name]
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/", "library/"):
        if name.startswith(prefix):
            candidates.append(name[len(prefix):])
    return next((c for c in candidates if c in registry), None)


def kube_nodes(path: Path | str = KUBE_NODES_SAMPLE, rng: np.random.Generator | None = None, storage: bool = True,
               registry: ContainerRegistry | None = None) -> Cluster:
    """The nodes of a ``kubectl get nodes -o json`` dump, in file order.

    Per node: cpu, memory and ``nvidia.com/gpu`` from ``status.allocatable`` (else ``status.capacity``);
    region and zone from the topology labels (or their failure-domain predecessors); arch from
    ``kubernetes.io/arch`` / ``beta.kubernetes.io/arch`` / ``status.nodeInfo.architecture``; locality from
    ``locality.skippy.io/type`` (default cloud); node class from the instance type (default ``k8s-node``);
    ``capability.skippy.io/*``, ``data.skippy.io/storage`` and ``nvidia.com/gpu.product`` are kept, and a
    node with GPUs gets ``capability.skippy.io/nvidia-gpu=true``. A cordoned node (``spec.unschedulable`` or
    the ``node.kubernetes.io/unschedulable:NoSchedule`` taint) is not schedulable; other taints are not
    modelled. ``status.images`` names that refer to registry images fill the node's image cache (their
    pull cost comes from the registry's per-arch size; other images are ignored).

    A dump says nothing about links: registry bandwidth is 10 Gbit/s (100 Mbit/s for edge nodes), storage
    links 10 Gbit/s within a zone, 5 Gbit/s within a region, 1 Gbit/s across, never above an edge node's
    uplink; speed is 1.0. ``storage=False`` drops the storage labels; ``storage=True`` with no storage
    node in the dump adds one (``kube-storage``) beside the first node. ``rng`` is unused: the import is
    deterministic (the argument keeps the importers alike).
    """
    del rng
    registry = registry or catalogue_registry()
    records = load_kube_nodes(path)
    specs = []
    for record in records:
        labels = dict(record.labels)
        if not storage:
            labels.pop(STORAGE, None)
        mbps = KUBE_EDGE_MBPS if labels[LOCALITY] == "edge" else KUBE_CLOUD_MBPS
        specs.append(NodeSpec(record.name, record.cpu_millis, record.memory, labels, speed=1.0, gpus=float(record.gpus),
                              registry_bandwidth=mbps * MBIT))
    if storage and not any(STORAGE in s.labels for s in specs):
        name = "kube-storage"
        while any(s.name == name for s in specs):
            name += "-x"
        first = {k: v for k, v in specs[0].labels.items() if k in (REGION, ZONE)}
        specs.append(node(name, "storage", {**first, LOCALITY: "cloud", STORAGE: "minio"}, KUBE_CLOUD_MBPS * MBIT))
    cluster = Cluster(specs, registry, StorageIndex())
    for i, record in enumerate(records):
        cluster.schedulable[i] = record.schedulable
        for names, _size in record.images:
            for name in names:
                image = registry_image(registry, name)
                if image is not None:
                    cluster.cache_image(image, i)
    region, zone = cluster.label_column(REGION), cluster.label_column(ZONE)
    s = cluster.storage_nodes
    same_zone = (zone[s][:, None] == zone[None, :]) & (zone[None, :] != "")
    same_region = (region[s][:, None] == region[None, :]) & (region[None, :] != "")
    bw = np.where(same_zone, 10000.0, np.where(same_region, 5000.0, 1000.0)) * MBIT
    edge = cluster.label_equals(LOCALITY, "edge")
    bw = np.minimum(bw, np.where(edge, cluster.registry_bandwidth, np.inf)[None, :])
    cluster.set_storage_bandwidth(bw, bw.copy())
    return cluster


def build_cluster(params: ClusterParams, rng: np.random.Generator) -> Cluster:
    """The cluster ``params`` describe, seeded from ``rng`` and ``params.seed_offset``."""
    seeded = np.random.default_rng([int(rng.integers(2**63)), params.seed_offset])
    if params.topology == "cloud_regions":
        cluster = cloud_regions(params.nodes, params.regions, seeded, params.storage_nodes, params.edge_fraction)
    elif params.topology == "urban_sensing":
        cluster = urban_sensing(params.cells, params.devices_per_cell, params.cloudlets, params.cloud_nodes, seeded,
                                params.storage_nodes, params.edge_uplink_mbps, params.backbone_mbps)
    elif params.topology == "kube_nodes":
        cluster = kube_nodes(resolve_cluster_path(params.kube_nodes_file), seeded, params.storage_nodes)
    else:
        cluster = openb(OPENB_NODES, params.openb_nodes, seeded, params.storage_nodes)
    _buckets(cluster, seeded, int(params.worker_input_mib * MiB))
    if params.topology != "kube_nodes":  # a dump's status.images is the image cache
        _prepull(cluster, params.worker_image, seeded, params.prepull_cloud, params.prepull_fraction)
    return cluster


def mixed_pods(cluster: Cluster, count: int, rng: np.random.Generator, images: Sequence[str] | None = None) -> list[Pod]:
    """A mixed workload: catalogue images of different sizes and archs, one or two containers, varied requests,
    capability labels, data-locality labels (existing and unknown items, receive and send)."""
    images = list(images or cluster.registry.names)
    items = [f"{b}/{i}" for b, i in cluster.storage.items] + ["nowhere/missing"]
    pods = []
    for p in range(count):
        containers = [Container(images[int(rng.integers(len(images)))], int(rng.choice([100, 250, 500, 1000, 2000])),
                      int(rng.choice([128, 256, 512, 1024, 2048])) * MiB)]
        if rng.random() < 0.2:  # a sidecar, sometimes of the same image
            image = containers[0].image if rng.random() < 0.5 else images[int(rng.integers(len(images)))]
            containers.append(Container(image, 100, 64 * MiB))
        labels: dict[str, str] = {}
        if rng.random() < 0.3:
            labels[CAPABILITY_GPU] = "true"
        if rng.random() < 0.4:
            labels[RECEIVES_FROM] = items[int(rng.integers(len(items)))]
        if rng.random() < 0.2:
            labels[SENDS_TO] = items[int(rng.integers(len(items)))]
        pods.append(Pod(f"pod-{p}", tuple(containers), labels))
    return pods
