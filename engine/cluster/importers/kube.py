"""Import a ``kubectl get nodes -o json`` dump as a cluster (capacities, labels, cordons, image caches)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from engine.cluster.constraints import TAINT_EFFECTS, Taint
from engine.cluster.files import CLUSTER_DIR
from engine.cluster.model import (
    ARCH,
    CAPABILITY,
    CAPABILITY_GPU,
    GPU_MODEL,
    LOCALITY,
    NODE_CLASS,
    REGION,
    STORAGE,
    ZONE,
    Cluster,
    ContainerRegistry,
    NodeSpec,
    StorageIndex,
)
from engine.cluster.quantity import _INT64_MAX, cpu_millicores, parse_quantity, quantity_bytes
from engine.cluster.synth import MBIT, catalogue_registry, node
from engine.core import filecache

KUBE_NODES_SAMPLE = CLUSTER_DIR / "kube-nodes-sample.json"
KUBE_REGION = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
KUBE_ZONE = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
KUBE_ARCH = ("kubernetes.io/arch", "beta.kubernetes.io/arch")
#: The architecture of a node that names none, where one is not required (the daemon, plan mode).
UNKNOWN_ARCH = "unknown"
KUBE_INSTANCE_TYPE = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
KUBE_GPU = "nvidia.com/gpu"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
KUBE_CLOUD_MBPS = 10000.0  # registry link of a cloud node (a dump says nothing about links)
KUBE_EDGE_MBPS = 100.0  # registry link of a node labelled locality.skippy.io/type=edge
_ALLOWED = {
    "cpu": "e.g. 4, 3920m, 0.5",
    "memory": "e.g. 16393856Ki, 16Gi, 512Mi, 1G, 1e9 or bytes",
    KUBE_GPU: "a whole number, e.g. 1 or 4",
    "pods": "a whole number of pods, e.g. 110",
}


class KubeObjectError(ValueError):
    """A Kubernetes object (from a dump or the API) that cannot be used; the message names the source (a file,
    or the API call), the item (index and object name), the field and what is allowed."""

    def __init__(self, path: Path | str, item: str, field: str, message: str):
        self.path, self.item, self.field = str(path), item, field
        super().__init__(": ".join(part for part in (self.path, item, field, message) if part))


class KubeNodesError(KubeObjectError):
    """A node (in a ``kubectl get nodes -o json`` dump or from the API) that cannot be imported."""


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
    taints: tuple[Taint, ...] = ()  # spec.taints, every effect (the scheduler filters on NoSchedule / NoExecute)
    max_pods: int = 0  # status.allocatable.pods (0: not given)
    node_labels: Mapping[str, str] = field(default_factory=dict)  # metadata.labels as they are (for nodeSelector)


def load_kube_nodes(path: Path | str, arch_required: bool = True) -> tuple[KubeNode, ...]:
    """Read and check a ``kubectl get nodes -o json`` dump (a v1 ``List`` of ``items``, or one ``Node``).

    Cached per file, size and modification time. Raises :class:`KubeNodesError` for bad input.
    ``arch_required=False``: a node without an architecture gets :data:`UNKNOWN_ARCH` (see :func:`parse_kube_node`).
    """
    return filecache.cached("kube_nodes", Path(path).resolve(), (arch_required,), lambda: _read_kube_nodes(path, arch_required))


def read_kube_items(path: Path | str, kind: str, error: type[KubeObjectError], command: str, allow_empty: bool) -> list[tuple[str, Any]]:
    """The objects of a ``kubectl get ... -o json`` dump as (where, object) pairs: a v1 ``List`` (or ``<kind>List``)
    of ``items``, or one object of ``kind``. Raises ``error`` naming the file for anything else."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise error(path, "", "", f"cannot be read ({getattr(e, 'strerror', None) or e}); allowed: a readable UTF-8 JSON file") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise error(path, "", "", f"not JSON (line {e.lineno}, column {e.colno}: {e.msg}); allowed: the output of {command}") from None
    if isinstance(doc, dict) and doc.get("kind") == kind:
        return [(kind.lower(), doc)]
    if isinstance(doc, dict) and isinstance(doc.get("items"), list) and doc.get("kind", "List") in ("List", f"{kind}List"):
        items = [(f"items[{k}]", item) for k, item in enumerate(doc["items"])]
        if not items and not allow_empty:
            raise error(path, "", "items", f"empty; allowed: at least one {kind}")
        return items
    raise error(
        path,
        "",
        "top level",
        f"neither a List with items nor a {kind}; allowed: the output of {command} (kind List or {kind}List, or a single kind {kind})",
    )


def read_unique_kube_objects[T](
    path: Path | str,
    kind: str,
    error: type[KubeObjectError],
    command: str,
    allow_empty: bool,
    parse: Callable[[Path | str, str, Any], T],
    key: Callable[[T], str],
    unique: str,
) -> tuple[T, ...]:
    """Every object of a dump (:func:`read_kube_items`) parsed, refusing a second object with the same ``key``
    (``unique`` says what must be unique, for the message)."""
    records: list[T] = []
    seen: dict[str, str] = {}
    for where, item in read_kube_items(path, kind, error, command, allow_empty=allow_empty):
        record = parse(path, where, item)
        k = key(record)
        if k in seen:
            raise error(path, f"{where} ({k})", "metadata.name", f"repeats {seen[k]}; allowed: unique {unique}")
        seen[k] = where
        records.append(record)
    return tuple(records)


def _read_kube_nodes(path: Path | str, arch_required: bool = True) -> tuple[KubeNode, ...]:
    def parse(source: Path | str, where: str, item: Any) -> KubeNode:
        return parse_kube_node(source, where, item, arch_required)

    return read_unique_kube_objects(path, "Node", KubeNodesError, "kubectl get nodes -o json", False, parse, lambda n: n.name, "node names")


def parse_kube_node(path: Path | str, where: str, item: Any, arch_required: bool = True) -> KubeNode:
    """One Node object (wire format, as in a dump or an API response) checked and converted; ``path`` names the
    source (a file, or the API) and ``where`` the item in error messages. Raises :class:`KubeNodesError`.

    ``arch_required``: a node without ``kubernetes.io/arch`` (and its fall-backs) is refused, as the simulation's
    importers need it for per-architecture image sizes; with False (the scheduler daemon and plan mode, as
    kube-scheduler, which never reads it) it gets :data:`UNKNOWN_ARCH` (images it lists count at their listed size).
    """

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
    if (not isinstance(arch, str) or not arch) and not arch_required:
        arch = UNKNOWN_ARCH
    if not isinstance(arch, str) or not arch:
        raise fail(
            f"metadata.labels[{KUBE_ARCH[0]!r}]",
            f"missing (also {KUBE_ARCH[1]} and status.nodeInfo.architecture); allowed: an architecture such as amd64 or arm64",
        )
    out = {
        ARCH: arch,
        LOCALITY: labels.get(LOCALITY) or "cloud",
        NODE_CLASS: next((labels[k] for k in KUBE_INSTANCE_TYPE if labels.get(k)), "k8s-node"),
    }
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
    taints = _taints(spec.get("taints"), fail)
    cordoned = unschedulable or any(t.key == UNSCHEDULABLE_TAINT and t.effect == "NoSchedule" for t in taints)
    pods, field = resource("pods", False)
    max_pods = 0
    if pods is not None:
        if pods < 0 or pods.denominator != 1 or pods > _INT64_MAX:
            raise fail(field, f"{float(pods):g} is not allowed; allowed: {_ALLOWED['pods']}")
        max_pods = int(pods)

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
    return KubeNode(name, cpu_millis, memory_bytes, gpus, out, not cordoned, tuple(images), taints, max_pods, dict(labels))


def _taints(value: Any, fail: Callable[[str, str], KubeObjectError]) -> tuple[Taint, ...]:
    """``spec.taints`` checked: a list of {key, value, effect} with a known effect."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise fail("spec.taints", "not a list of objects; allowed: [{key, value, effect}, ...]")
    taints = []
    for j, taint in enumerate(value):
        where = f"spec.taints[{j}]"
        key, text, effect = taint.get("key"), taint.get("value") or "", taint.get("effect")
        if not isinstance(key, str) or not key:
            raise fail(f"{where}.key", f"{key!r} is not allowed; allowed: a non-empty string")
        if not isinstance(text, str):
            raise fail(f"{where}.value", f"{text!r} is not allowed; allowed: a string")
        if effect not in TAINT_EFFECTS:
            raise fail(f"{where}.effect", f"{effect!r} is not allowed; allowed: {', '.join(TAINT_EFFECTS)}")
        taints.append(Taint(key, text, effect))
    return tuple(taints)


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
            candidates.append(name[len(prefix) :])
    return next((c for c in candidates if c in registry), None)


def kube_nodes(
    path: Path | str = KUBE_NODES_SAMPLE,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    registry: ContainerRegistry | None = None,
) -> Cluster:
    """The nodes of a ``kubectl get nodes -o json`` dump, in file order.

    Per node: cpu, memory and ``nvidia.com/gpu`` from ``status.allocatable`` (else ``status.capacity``);
    region and zone from the topology labels (or their failure-domain predecessors); arch from
    ``kubernetes.io/arch`` / ``beta.kubernetes.io/arch`` / ``status.nodeInfo.architecture``; locality from
    ``locality.skippy.io/type`` (default cloud); node class from the instance type (default ``k8s-node``);
    ``capability.skippy.io/*``, ``data.skippy.io/storage`` and ``nvidia.com/gpu.product`` are kept, and a
    node with GPUs gets ``capability.skippy.io/nvidia-gpu=true``. A cordoned node (``spec.unschedulable`` or
    the ``node.kubernetes.io/unschedulable:NoSchedule`` taint) is not schedulable; every taint is kept on its
    node (``NoSchedule`` / ``NoExecute`` ones keep off pods that do not tolerate them, see
    :mod:`engine.scheduling.taint_toleration`), and ``status.allocatable.pods`` is the node's pod limit.
    ``status.images`` names that refer to registry images fill the node's image cache (their
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
        specs.append(kube_node_spec(record, labels))
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
    set_kube_storage_links(cluster)
    return cluster


def kube_node_spec(record: KubeNode, labels: Mapping[str, str]) -> NodeSpec:
    """A Kubernetes node as the cluster model's :class:`NodeSpec` with ``labels``: its capacity, GPUs, taints and pod
    limit; registry link 10 Gbit/s (100 Mbit/s for an edge node), speed 1.0 (a node object says nothing of either)."""
    mbps = KUBE_EDGE_MBPS if labels.get(LOCALITY) == "edge" else KUBE_CLOUD_MBPS
    return NodeSpec(
        record.name,
        record.cpu_millis,
        record.memory,
        dict(labels),
        speed=1.0,
        gpus=float(record.gpus),
        registry_bandwidth=mbps * MBIT,
        taints=record.taints,
        max_pods=record.max_pods,
    )


def set_kube_storage_links(cluster: Cluster) -> None:
    """Storage links of a Kubernetes cluster: 10 Gbit/s within a zone, 5 Gbit/s within a region, 1 Gbit/s across,
    never above an edge node's registry uplink."""
    region, zone = cluster.label_column(REGION), cluster.label_column(ZONE)
    s = cluster.storage_nodes
    same_zone = (zone[s][:, None] == zone[None, :]) & (zone[None, :] != "")
    same_region = (region[s][:, None] == region[None, :]) & (region[None, :] != "")
    bw = np.where(same_zone, 10000.0, np.where(same_region, 5000.0, 1000.0)) * MBIT
    edge = cluster.label_equals(LOCALITY, "edge")
    bw = np.minimum(bw, np.where(edge, cluster.registry_bandwidth, np.inf)[None, :])
    cluster.set_storage_bandwidth(bw, bw.copy())
