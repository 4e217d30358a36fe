"""A Kubernetes cluster snapshot (``kubectl get nodes -o json`` + ``kubectl get pods -A -o json``) as a cluster.

One conversion serves the simulation (``topology: kube_snapshot``), ``python -m engine.kube plan`` and the
scheduler daemon, so all three see the same cluster for the same objects:

* nodes (checked by :func:`engine.cluster.importers.kube.parse_kube_node`) in name order (as kubectl and the
  API list them; the order is the scheduler's scan order), with all their labels plus the model's own
  (region, zone, arch, locality, node class), their taints and pod limit, and ``status.images`` as the
  node's image cache; an image's size per architecture is the ``sizeBytes`` a node of that architecture
  reports (the first in name order);
* pods bound to a node and not finished (phase neither Succeeded nor Failed) as allocations on it: their
  requests are taken and their images are on the node;
* a pod is read the way kube-scheduler sees it (:func:`parse_kube_pod`): requests per container (a missing
  request falls back to its limit, as the API defaults it, else to Skippy's defaults of 100 millicores and
  200 MiB), init containers and ``spec.overhead`` raise the pod's effective request as in Kubernetes
  (carried on its first container), ``nvidia.com/gpu``, tolerations, ``nodeSelector`` and required node
  affinity. What the model has no place for (pod affinity and anti-affinity, topology spread, preferred
  node affinity, host ports) is listed in :attr:`KubePod.unmodelled` and ignored.

An image no node reports has no known size: it counts as 0 bytes on every architecture (no registry is
asked), so Skippy's LatencyAwareImageLocality sees no pull cost for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.cluster.constraints import (
    FIELD_OPERATORS,
    SELECTOR_OPERATORS,
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Toleration,
)
from engine.cluster.files import CLUSTER_DIR
from engine.cluster.importers.kube import (
    KUBE_GPU,
    KubeNode,
    KubeObjectError,
    kube_node_spec,
    load_kube_nodes,
    read_unique_kube_objects,
    set_kube_storage_links,
)
from engine.cluster.model import ARCH, Cluster, Container, ContainerRegistry, Pod, StorageIndex, normalize_image_name
from engine.cluster.quantity import _INT64_MAX, cpu_millicores, parse_quantity, quantity_bytes
from engine.core import filecache

KUBE_SNAPSHOT_DIR = CLUSTER_DIR / "kube-snapshot"
KUBE_SNAPSHOT_NODES = KUBE_SNAPSHOT_DIR / "nodes.json"
KUBE_SNAPSHOT_PODS = KUBE_SNAPSHOT_DIR / "pods.json"
DEFAULT_SCHEDULER = "default-scheduler"
FINISHED_PHASES = ("Succeeded", "Failed")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_DOCKER_HUB = ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/", "library/")
_ALLOWED = {
    "cpu": "a quantity such as 500m, 0.5, 2 or 1e3 (cores)",
    "memory": "a quantity such as 256Mi, 1Gi, 1.5G, 1e9 (bytes)",
    KUBE_GPU: "a whole number of GPUs, e.g. 1",
}


class KubePodsError(KubeObjectError):
    """A pod (in a ``kubectl get pods -A -o json`` dump or from the API) that cannot be read."""


def canonical_image(name: str) -> str:
    """One name per image, however it is written: Docker Hub prefixes dropped, ``:latest`` added when untagged.

    ``docker.io/library/nginx:1.27``, ``library/nginx:1.27`` and ``nginx:1.27`` are the same image (kubelet
    reports the long form; pods usually use the short one). Digest references are kept as they are.
    """
    for prefix in _DOCKER_HUB:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return normalize_image_name(name)


@dataclass(frozen=True)
class KubePod:
    """One pod as the scheduler sees it: identity, scheduling state and the model's :class:`Pod`."""

    namespace: str
    name: str
    uid: str
    scheduler_name: str
    node_name: str  # "" while unbound
    phase: str
    priority: int
    created: str  # metadata.creationTimestamp (RFC 3339; "" when absent)
    deleting: bool  # metadata.deletionTimestamp is set
    pod: Pod
    unmodelled: tuple[str, ...] = ()  # fields the model ignores (pod affinity, topology spread, ...)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def holds_resources(self) -> bool:
        """Bound to a node and not finished: its requests are taken on that node."""
        return bool(self.node_name) and self.phase not in FINISHED_PHASES

    @property
    def pending(self) -> bool:
        """Waiting for a scheduler: Pending, unbound, not being deleted."""
        return not self.node_name and self.phase == "Pending" and not self.deleting


def queue_order(pod: KubePod) -> tuple:
    """kube-scheduler's queue order: higher priority first, then older, then by namespace/name (deterministic)."""
    return (-pod.priority, pod.created, pod.namespace, pod.name)


# ----------------------------------------------------------------------------------------- reading pods


def parse_kube_pod(source: Path | str, where: str, item: Any) -> KubePod:
    """One Pod object (wire format, as in a dump or an API response) checked and converted.

    ``source`` names the file (or the API) and ``where`` the item in error messages; raises
    :class:`KubePodsError` naming the object and field and what is allowed.
    """

    def fail(field: str, message: str) -> KubePodsError:
        return KubePodsError(source, where, field, message)

    def obj(parent: Mapping, key: str, field: str) -> Mapping:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise fail(field, f"{type(value).__name__} is not allowed; allowed: an object")
        return value

    def objects(parent: Mapping, key: str, field: str) -> list[Mapping]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise fail(field, "not a list of objects; allowed: a list of objects")
        return value

    def text(parent: Mapping, key: str, field: str, default: str = "") -> str:
        value = parent.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise fail(field, f"{value!r} is not allowed; allowed: a string")
        return value

    def strings(value: Any, field: str) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise fail(field, f"{type(value).__name__} is not allowed; allowed: an object of strings")
        for key, v in value.items():
            if not isinstance(v, str):
                raise fail(f"{field}[{key!r}]", f"{v!r} is not allowed; allowed: a string")
        return dict(value)

    if not isinstance(item, dict):
        raise fail("", f"{type(item).__name__} is not allowed; allowed: a Pod object")
    if item.get("kind", "Pod") != "Pod":
        raise fail("kind", f"{item.get('kind')!r} is not allowed; allowed: 'Pod'")
    meta = obj(item, "metadata", "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise fail("metadata.name", f"{name!r} is not allowed; allowed: a non-empty string")
    namespace = text(meta, "namespace", "metadata.namespace", "default") or "default"
    where = f"{where} ({namespace}/{name})" if where else f"pod {namespace}/{name}"
    labels = strings(meta.get("labels"), "metadata.labels")
    spec, status = obj(item, "spec", "spec"), obj(item, "status", "status")

    def requests(container: Mapping, field: str) -> tuple[int | None, int | None, int]:
        """(millicores or None, bytes or None, GPUs) a container asks for; a missing request falls back to its limit."""
        resources = obj(container, "resources", f"{field}.resources")
        asked = obj(resources, "requests", f"{field}.resources.requests")
        limits = obj(resources, "limits", f"{field}.resources.limits")
        out: list = []
        for key in ("cpu", "memory", KUBE_GPU):
            section, values = ("requests", asked) if key in asked else ("limits", limits)
            if key not in values:
                out.append(None)
                continue
            where_field = f"{field}.resources.{section}.{key}"
            try:
                quantity = parse_quantity(values[key])
            except ValueError:
                raise fail(where_field, f"{values[key]!r} is not a Kubernetes quantity; allowed: {_ALLOWED[key]}") from None
            if quantity < 0:
                raise fail(where_field, f"{values[key]!r} is negative; allowed: {_ALLOWED[key]}, at least 0")
            if key == KUBE_GPU and quantity.denominator != 1:
                raise fail(where_field, f"{values[key]!r} is not allowed; allowed: {_ALLOWED[key]}")
            amount = cpu_millicores(quantity) if key == "cpu" else quantity_bytes(quantity)
            if amount > _INT64_MAX:
                raise fail(where_field, f"{values[key]!r} is out of range; allowed: {_ALLOWED[key]}")
            out.append(amount)
        return out[0], out[1], out[2] or 0

    containers = objects(spec, "containers", "spec.containers")
    if not containers:
        raise fail("spec.containers", "missing or empty; allowed: at least one container with an image")
    built: list[Container] = []
    gpus = 0
    for j, container in enumerate(containers):
        field = f"spec.containers[{j}]"
        image = container.get("image")
        if not isinstance(image, str) or not image.strip():
            raise fail(f"{field}.image", f"{image!r} is not allowed; allowed: an image reference such as nginx:1.27")
        cpu, memory, gpu = requests(container, field)
        gpus += gpu
        defaults = Container(image)
        built.append(
            Container(
                canonical_image(image),
                defaults.cpu_millis if cpu is None else cpu,
                defaults.memory if memory is None else memory,
            )
        )
    # Kubernetes' effective request: the larger of the containers' sum and any init container, plus the overhead
    init_cpu = init_memory = init_gpus = 0
    for j, container in enumerate(objects(spec, "initContainers", "spec.initContainers")):
        cpu, memory, gpu = requests(container, f"spec.initContainers[{j}]")
        init_cpu, init_memory, init_gpus = max(init_cpu, cpu or 0), max(init_memory, memory or 0), max(init_gpus, gpu)
    overhead = obj(spec, "overhead", "spec.overhead")
    extra_cpu = max(0, init_cpu - sum(c.cpu_millis for c in built))
    extra_memory = max(0, init_memory - sum(c.memory for c in built))
    for key in ("cpu", "memory"):
        if key in overhead:
            try:
                quantity = parse_quantity(overhead[key])
            except ValueError:
                raise fail(f"spec.overhead.{key}", f"{overhead[key]!r} is not a Kubernetes quantity; allowed: {_ALLOWED[key]}") from None
            if key == "cpu":
                extra_cpu += cpu_millicores(quantity)
            else:
                extra_memory += quantity_bytes(quantity)
    if extra_cpu or extra_memory:
        first = built[0]
        built[0] = Container(first.image, first.cpu_millis + extra_cpu, first.memory + extra_memory)
    gpus = max(gpus, init_gpus)

    tolerations = []
    for j, tol in enumerate(objects(spec, "tolerations", "spec.tolerations")):
        field = f"spec.tolerations[{j}]"
        key = text(tol, "key", f"{field}.key")
        operator = text(tol, "operator", f"{field}.operator") or "Equal"
        value = text(tol, "value", f"{field}.value")
        effect = text(tol, "effect", f"{field}.effect")
        if operator not in TOLERATION_OPERATORS:
            raise fail(f"{field}.operator", f"{operator!r} is not allowed; allowed: {', '.join(TOLERATION_OPERATORS)}")
        if effect and effect not in TAINT_EFFECTS:
            raise fail(f"{field}.effect", f"{effect!r} is not allowed; allowed: empty (every effect) or {', '.join(TAINT_EFFECTS)}")
        if not key and operator != "Exists":
            raise fail(f"{field}.operator", f"{operator!r} with an empty key is not allowed; allowed: Exists (tolerates every taint)")
        if operator == "Exists" and value:
            raise fail(f"{field}.value", f"{value!r} is not allowed with operator Exists; allowed: empty")
        tolerations.append(Toleration(key, operator, value, effect))

    node_selector = strings(spec.get("nodeSelector"), "spec.nodeSelector")
    affinity = obj(spec, "affinity", "spec.affinity")
    node_affinity = obj(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms: list[NodeSelectorTerm] = []
    if required is not None:
        base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(required, dict):
            raise fail(base, f"{type(required).__name__} is not allowed; allowed: an object with nodeSelectorTerms")
        raw_terms = objects(required, "nodeSelectorTerms", f"{base}.nodeSelectorTerms")
        if not raw_terms:
            raise fail(f"{base}.nodeSelectorTerms", "missing or empty; allowed: at least one term")
        for t, term in enumerate(raw_terms):
            reqs = []
            for section, is_field in (("matchExpressions", False), ("matchFields", True)):
                for r, req in enumerate(objects(term, section, f"{base}.nodeSelectorTerms[{t}].{section}")):
                    reqs.append(_requirement(req, is_field, f"{base}.nodeSelectorTerms[{t}].{section}[{r}]", fail))
            terms.append(NodeSelectorTerm(tuple(reqs)))

    unmodelled = [f"spec.affinity.{k}" for k in ("podAffinity", "podAntiAffinity") if affinity.get(k)]
    if node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"):
        unmodelled.append("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution")
    if spec.get("topologySpreadConstraints"):
        unmodelled.append("spec.topologySpreadConstraints")
    if any(isinstance(port, dict) and port.get("hostPort") for c in containers for port in (c.get("ports") or [])):
        unmodelled.append("spec.containers[].ports[].hostPort")

    priority = spec.get("priority", 0)
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise fail("spec.priority", f"{priority!r} is not allowed; allowed: a whole number")
    phase = text(status, "phase", "status.phase", "Pending") or "Pending"
    if phase not in POD_PHASES:
        raise fail("status.phase", f"{phase!r} is not allowed; allowed: {', '.join(POD_PHASES)}")
    created = text(meta, "creationTimestamp", "metadata.creationTimestamp")
    pod = Pod(
        name=f"{namespace}/{name}",
        containers=tuple(built),
        labels=labels,
        gpus=float(gpus),
        tolerations=tuple(tolerations),
        node_selector=node_selector,
        node_affinity=tuple(terms),
    )
    return KubePod(
        namespace=namespace,
        name=name,
        uid=text(meta, "uid", "metadata.uid"),
        scheduler_name=text(spec, "schedulerName", "spec.schedulerName", DEFAULT_SCHEDULER) or DEFAULT_SCHEDULER,
        node_name=text(spec, "nodeName", "spec.nodeName"),
        phase=phase,
        priority=priority,
        created=created,
        deleting=meta.get("deletionTimestamp") is not None,
        pod=pod,
        unmodelled=tuple(unmodelled),
    )


def _requirement(req: Mapping, is_field: bool, field: str, fail: Callable[[str, str], KubePodsError]) -> NodeSelectorRequirement:
    """One matchExpressions / matchFields entry, checked as the API validates it."""
    key, operator, values = req.get("key"), req.get("operator"), req.get("values") or []
    if not isinstance(key, str) or not key:
        raise fail(f"{field}.key", f"{key!r} is not allowed; allowed: a label key")
    allowed = FIELD_OPERATORS if is_field else SELECTOR_OPERATORS
    if operator not in allowed:
        raise fail(f"{field}.operator", f"{operator!r} is not allowed; allowed: {', '.join(allowed)}")
    if is_field and key != "metadata.name":
        raise fail(f"{field}.key", f"{key!r} is not allowed; allowed: metadata.name")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise fail(f"{field}.values", "not a list of strings; allowed: a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise fail(f"{field}.values", f"empty; allowed: at least one value for {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise fail(f"{field}.values", f"{values!r} is not allowed; allowed: no values for {operator}")
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or not values[0].lstrip("-").isdigit():
            raise fail(f"{field}.values", f"{values!r} is not allowed; allowed: exactly one integer for {operator}")
    return NodeSelectorRequirement(key, operator, tuple(values), field=is_field)


def load_kube_pods(path: Path | str) -> tuple[KubePod, ...]:
    """Read and check a ``kubectl get pods -A -o json`` dump (a v1 ``List`` of ``items``, or one ``Pod``); cached per file version."""
    return filecache.cached("kube_pods", Path(path).resolve(), (), lambda: _read_kube_pods(path))


def _read_kube_pods(path: Path | str) -> tuple[KubePod, ...]:
    return read_unique_kube_objects(
        path, "Pod", KubePodsError, "kubectl get pods -A -o json", True, parse_kube_pod, lambda p: p.key, "names per namespace"
    )


# ------------------------------------------------------------------------------------ building a cluster


def snapshot_registry(nodes: Sequence[KubeNode], pods: Iterable[Pod] = (), base: ContainerRegistry | None = None) -> ContainerRegistry:
    """The images of a snapshot: every ``status.images`` name with its size per architecture (from the first node of
    that architecture in name order reporting it), then ``base``'s images (their sizes fill the architectures the
    nodes did not report), then the pods' other images at 0 bytes on every architecture of the cluster."""
    sizes: dict[str, dict[str, int]] = {}
    for record in sorted(nodes, key=lambda r: r.name):
        arch = record.labels[ARCH]
        for names, size in record.images:
            for name in names:
                sizes.setdefault(canonical_image(name), {}).setdefault(arch, size)
    registry = ContainerRegistry(sizes)
    if base is not None:
        for name, base_sizes in zip(base.names, base.sizes, strict=True):
            registry.add(name, {**base_sizes, **sizes.get(name, {})})
    archs = list(dict.fromkeys(r.labels[ARCH] for r in sorted(nodes, key=lambda r: r.name)))
    for pod in pods:
        register_pod_images(registry, pod, archs)
    return registry


def register_pod_images(registry: ContainerRegistry, pod: Pod, archs: Sequence[str]) -> None:
    """Add the pod's images the registry lacks, at 0 bytes on each of ``archs`` (their size is unknown)."""
    for image in pod.images:
        if image not in registry:
            registry.add(image, dict.fromkeys(archs, 0))


def snapshot_cluster(nodes: Sequence[KubeNode], allocations: Iterable[tuple[Pod, str]], registry: ContainerRegistry) -> Cluster:
    """The cluster of ``nodes`` (in name order) with ``allocations`` (pod, node name) placed: their requests taken and
    their images cached; allocations on nodes not in the snapshot are skipped. ``registry`` must hold every image."""
    records = sorted(nodes, key=lambda r: r.name)
    if not records:
        raise ValueError("a cluster needs at least one node")
    specs = [kube_node_spec(r, {**r.node_labels, **r.labels}) for r in records]
    cluster = Cluster(specs, registry, StorageIndex())
    for i, record in enumerate(records):
        cluster.schedulable[i] = record.schedulable
        for names, _size in record.images:
            for name in names:
                cluster.cache_image(canonical_image(name), i)
    set_kube_storage_links(cluster)
    for pod, node in allocations:
        index = cluster.index.get(node)
        if index is not None:
            cluster.place(pod, index)
    return cluster


def kube_snapshot(
    nodes_path: Path | str = KUBE_SNAPSHOT_NODES, pods_path: Path | str = KUBE_SNAPSHOT_PODS, registry: ContainerRegistry | None = None
) -> Cluster:
    """The cluster of a ``kubectl get nodes -o json`` and a ``kubectl get pods -A -o json`` dump: the running pods are
    existing allocations, the nodes' ``status.images`` their pre-pulled images. ``registry``'s images are added
    (the simulation's worker images). Raises :class:`KubeNodesError` / :class:`KubePodsError` for bad input."""
    nodes = load_kube_nodes(nodes_path)
    pods = load_kube_pods(pods_path)
    reg = snapshot_registry(nodes, (p.pod for p in pods), registry)
    return snapshot_cluster(nodes, ((p.pod, p.node_name) for p in pods if p.holds_resources), reg)
