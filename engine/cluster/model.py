"""The cluster the scheduler places pods on: nodes as numpy columns, a container registry, a storage index (pods,
containers, the registry, the storage index and the label keys are defined in :mod:`engine.cluster.objects`).

Nodes are fixed once the cluster is built (synthesizers in :mod:`engine.cluster.synth`, importers in
:mod:`engine.cluster.importers`);
what changes is their state: free cpu, memory and GPUs, the image cache, the pod count and whether a node
is schedulable. Every column is indexed by node position, which is also the scheduler's scan order.

Units: cpu in millicores, memory and image/data sizes in bytes, bandwidth in bytes per second, GPU shares in
milli-GPU (1000 is one device).

GPUs are devices, tracked one by one: ``gpu_milli_free[node, device]`` is what is left of each (absent devices
hold 0, which no request fits). A pod asking for less than one GPU shares one device with others (the
Alibaba GPU-sharing model of the openb traces); a pod asking for k GPUs takes k whole free devices. Which
devices a pod gets is the scheduler's choice (:meth:`Cluster.default_devices` unless a GPU policy says
otherwise); :meth:`Cluster.place` and :meth:`Cluster.remove` take them explicitly.
Labels follow Skippy (``locality.skippy.io/type``, ``capability.skippy.io/*``, ``data.skippy.io/storage``,
``beta.kubernetes.io/arch``) and Kubernetes (``topology.kubernetes.io/region`` and ``/zone``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.cluster.changes import ChangeLog
from engine.cluster.constraints import Taint
from engine.cluster.objects import (  # noqa: F401 - re-exported: the cluster's vocabulary, as before
    ARCH,
    CAPABILITY,
    CAPABILITY_GPU,
    DEFAULT_CPU_MILLIS,
    DEFAULT_MEMORY,
    GPU_MILLI,
    GPU_MODEL,
    LOCALITY,
    NODE_CLASS,
    NODE_DEVICE,
    RECEIVES_FROM,
    REGION,
    SENDS_TO,
    STORAGE,
    ZONE,
    Container,
    ContainerRegistry,
    GiB,
    KiB,
    MiB,
    Pod,
    StorageIndex,
    gpu_request,
    normalize_image_name,
)

if TYPE_CHECKING:
    import pandas as pd


# ------------------------------------------------------------------------------------------- nodes


@dataclass
class NodeSpec:
    """One node as a synthesizer or importer describes it, before it becomes a row of the columns."""

    name: str
    cpu_millis: int
    memory: int
    labels: dict[str, str]
    speed: float = 1.0
    gpus: float = 0.0
    registry_bandwidth: float = 125e6
    taints: tuple[Taint, ...] = ()  # Kubernetes node taints (any effect); synthesized nodes have none
    max_pods: int = 0  # status.allocatable.pods of a Kubernetes node; 0: no limit


class Cluster:
    """Nodes as numpy columns plus the registry, the per-node image cache and the storage index."""

    def __init__(self, nodes: Sequence[NodeSpec], registry: ContainerRegistry, storage: StorageIndex | None = None):
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        self.names: list[str] = [s.name for s in nodes]
        if len(set(self.names)) != len(self.names):
            raise ValueError("node names must be unique")
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.n = len(nodes)
        self.cpu_capacity = np.array([s.cpu_millis for s in nodes], dtype=np.int64)
        self.memory_capacity = np.array([s.memory for s in nodes], dtype=np.int64)
        for s in nodes:
            if s.gpus < 0 or s.gpus != int(s.gpus):
                raise ValueError(f"node {s.name}: gpus {s.gpus!r}; allowed: a whole number of GPU devices >= 0")
        self.gpu_count = np.array([int(s.gpus) for s in nodes], dtype=np.int64)  # devices per node
        self.gpu_capacity = self.gpu_count.astype(np.float64)
        self.cpu_free = self.cpu_capacity.copy()
        self.memory_free = self.memory_capacity.copy()
        devices = max(1, int(self.gpu_count.max()))
        self.gpu_milli_free = np.where(np.arange(devices)[None, :] < self.gpu_count[:, None], GPU_MILLI, 0).astype(np.int64)
        # GPU pods per node by kind, for policies that keep kinds together: column 0 sharing pods, k pods of k devices
        self.gpu_pods_by_kind = np.zeros((self.n, devices + 1), dtype=np.int64)
        self.version = np.zeros(self.n, dtype=np.int64)  # bumped whenever a node's free resources change
        self.changes = ChangeLog(self.n)  # the same changes in order: derived columns catch up at those nodes alone
        self._divisors: tuple[int, np.ndarray, np.ndarray] | None = None  # (changes mark, cpu, memory)
        self.speed = np.array([s.speed for s in nodes], dtype=np.float64)
        self.registry_bandwidth = np.array([s.registry_bandwidth for s in nodes], dtype=np.float64)
        self.pods = np.zeros(self.n, dtype=np.int64)
        self.schedulable = np.ones(self.n, dtype=bool)

        # labels: per key an int code column (-1 = absent) and the list of values
        self.label_values: dict[str, list[str]] = {}
        self.label_codes: dict[str, np.ndarray] = {}
        self._value_code: dict[str, dict[str, int]] = {}
        for i, spec in enumerate(nodes):
            for key, value in spec.labels.items():
                codes = self.label_codes.get(key)
                if codes is None:
                    codes = self.label_codes[key] = np.full(self.n, -1, dtype=np.int32)
                    self.label_values[key] = []
                    self._value_code[key] = {}
                codes[i] = self._code(key, value)
        if ARCH not in self.label_codes:
            raise ValueError(f"every node needs the {ARCH} label")
        self._mask_cache: dict[tuple, np.ndarray] = {}
        self._static_table: dict[str, np.ndarray] | None = None

        self.registry = registry
        self.image_cached = np.zeros((len(registry), self.n), dtype=bool)
        self.image_nodes = np.zeros(len(registry), dtype=np.int64)  # nodes holding each image
        self.image_pulls: dict[int, list[int]] = {}  # per image, the nodes that cached it, in order (images stay cached)
        self._size_tables: dict[int, tuple[np.ndarray, int, dict]] = {}
        self._size_columns: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._missing_rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}

        self.storage = storage or StorageIndex()
        self.storage_nodes = np.flatnonzero(self.has_label(STORAGE))
        self.storage_row = np.full(self.n, -1, dtype=np.int64)
        self.storage_row[self.storage_nodes] = np.arange(len(self.storage_nodes))
        # bandwidth storage node -> node ("down") and node -> storage node ("up"), rows by storage_row
        self.storage_down = np.full((len(self.storage_nodes), self.n), 125e6)
        self.storage_up = self.storage_down.copy()
        self._bucket_bw: dict[tuple[str, bool, bool, int], np.ndarray] = {}
        self._bucket_seconds: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._item_seconds: dict[tuple[str, bool, bool], tuple[int, np.ndarray | None]] = {}  # item_seconds(), kept

        # Kubernetes node facts (imported clusters only): taints per node, and the pod limit (0: none)
        self.taints: list[tuple[Taint, ...]] = [tuple(s.taints) for s in nodes]
        self.pod_capacity = np.array([s.max_pods for s in nodes], dtype=np.int64)

    # ---------------------------------------------------------------- labels
    def _code(self, key: str, value: str) -> int:
        codes = self._value_code[key]
        if value not in codes:
            codes[value] = len(self.label_values[key])
            self.label_values[key].append(value)
        return codes[value]

    def label_code(self, key: str, value: str) -> int:
        """Code of ``value`` in column ``key``; -2 (matches no node) when unknown."""
        return self._value_code.get(key, {}).get(value, -2)

    def has_label(self, key: str) -> np.ndarray:
        """Boolean mask: nodes that carry label ``key`` (cached; labels do not change)."""
        k = ("has", key)
        if k not in self._mask_cache:
            codes = self.label_codes.get(key)
            self._mask_cache[k] = np.zeros(self.n, dtype=bool) if codes is None else codes >= 0
        return self._mask_cache[k]

    def label_equals(self, key: str, value: str) -> np.ndarray:
        """Boolean mask: nodes whose label ``key`` equals ``value`` (cached)."""
        k = ("eq", key, value)
        if k not in self._mask_cache:
            codes = self.label_codes.get(key)
            self._mask_cache[k] = np.zeros(self.n, dtype=bool) if codes is None else codes == self.label_code(key, value)
        return self._mask_cache[k]

    def label_mask(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A node mask that depends on node labels alone (a pod's node affinity), cached under ``key`` as
        :meth:`label_equals` is; read-only (callers share it)."""
        mask = self._mask_cache.get(key)
        if mask is None:
            mask = self._mask_cache[key] = compute()
            mask.flags.writeable = False
        return mask

    def label_column(self, key: str, missing: str = "") -> np.ndarray:
        """Values of label ``key`` as an object array (for tables, not hot paths)."""
        codes = self.label_codes.get(key)
        if codes is None:
            return np.full(self.n, missing, dtype=object)
        values = np.array([*self.label_values[key], missing], dtype=object)
        return values[codes]  # code -1 picks the trailing ``missing``

    def node_labels(self, node: int) -> dict[str, str]:
        """All labels of one node as a dict."""
        return {k: self.label_values[k][c[node]] for k, c in self.label_codes.items() if c[node] >= 0}

    # ---------------------------------------------------------------- images
    def image_index(self, image: str) -> int:
        """Registry index of ``image``; grows the cache matrix when the registry gained images."""
        idx = self.registry.index(image)
        if idx >= self.image_cached.shape[0]:
            grow = len(self.registry) - self.image_cached.shape[0]
            self.image_cached = np.vstack([self.image_cached, np.zeros((grow, self.n), dtype=bool)])
            self.image_nodes = np.concatenate([self.image_nodes, np.zeros(grow, dtype=np.int64)])
        return idx

    def image_size_table(self, image: int) -> tuple[np.ndarray, int]:
        """(size per arch code, -1 where the image lacks that arch; code of the image's first arch)."""
        sizes = self.registry.sizes[image]
        cached = self._size_tables.get(image)
        if cached is not None and cached[2] is sizes and len(cached[0]) > len(self.label_values[ARCH]):
            return cached[0], cached[1]  # as made (or widened) before: the same table
        if cached is None or cached[2] is not sizes:
            codes = [self._code(ARCH, arch) for arch in sizes]
            table = np.full(len(self.label_values[ARCH]), -1, dtype=np.int64)
            table[codes] = list(sizes.values())
            cached = (table, codes[0] if codes else -1, sizes)
        width = len(self.label_values[ARCH]) + 1  # the trailing -1 also serves nodes without an arch label
        if len(cached[0]) < width:  # other images added archs since
            cached = (np.concatenate([cached[0], np.full(width - len(cached[0]), -1, dtype=np.int64)]), *cached[1:])
        self._size_tables[image] = cached
        return cached[0], cached[1]

    def image_size_column(self, image: int) -> np.ndarray:
        """Size of ``image`` for each node's arch (-1 where the image lacks it), cached per image."""
        table, _ = self.image_size_table(image)
        column = self._size_columns.get(image)
        if column is None or column[0] is not table:
            column = self._size_columns[image] = (table, table[self.label_codes[ARCH]])
        return column[1]

    def image_size_on(self, image: int, node: int) -> int:
        """Size of ``image`` for the node's arch (0 when the image lacks that arch)."""
        table, _ = self.image_size_table(image)
        return int(max(table[self.label_codes[ARCH][node]], 0))

    def missing_bytes_row(self, image: int) -> np.ndarray | None:
        """Per node, the bytes of ``image`` it must pull (0 where cached); None when the image lacks some node's arch.

        Kept up to date by :meth:`cache_image`, so scoring a pod's image pulls is one gather per image."""
        column = self.image_size_column(image)
        kept = self._missing_rows.get(image)
        if kept is None or kept[0] is not self.image_cached or kept[1] is not column:
            # float bytes (whole, exact): dividing by the float bandwidths then casts nothing
            row = np.where(self.image_cached[image], 0.0, column.astype(np.float64)) if column.min() >= 0 else None
            kept = self._missing_rows[image] = (self.image_cached, column, row)
        return kept[2]

    def cache_image(self, image: str | int, node: int) -> None:
        """Put an image into a node's cache (pre-pulled images)."""
        idx = self.image_index(image) if isinstance(image, str) else image
        if not self.image_cached[idx, node]:
            self.image_cached[idx, node] = True
            self.image_nodes[idx] = self.image_nodes.item(idx) + 1  # as Python ints (place's note)
            self.image_pulls.setdefault(idx, []).append(node)
            kept = self._missing_rows.get(idx)
            if kept is not None and kept[2] is not None:
                kept[2][node] = 0

    # ---------------------------------------------------------------- storage bandwidth
    def set_storage_bandwidth(self, down: np.ndarray, up: np.ndarray) -> None:
        """Bandwidth matrices (storage nodes x nodes): storage -> node and node -> storage."""
        shape = (len(self.storage_nodes), self.n)
        if down.shape != shape or up.shape != shape:
            raise ValueError(f"storage bandwidth must have shape {shape}")
        self.storage_down = np.asarray(down, dtype=np.float64)
        self.storage_up = np.asarray(up, dtype=np.float64)
        self._bucket_bw.clear()
        self._item_seconds.clear()

    def bucket_bandwidth(self, bucket: str, down: bool = True, slowest: bool = True) -> np.ndarray:
        """Per node the slowest (or fastest) bandwidth to/from the nodes of ``bucket`` (inf if it has none)."""
        key = (bucket, down, slowest, len(self.storage.buckets.get(bucket, [])))
        if key not in self._bucket_bw:
            rows = self.storage_row[self.storage.buckets.get(bucket, [])]
            rows = rows[rows >= 0]
            matrix = (self.storage_down if down else self.storage_up)[rows]
            if len(rows) == 0:
                self._bucket_bw[key] = np.full(self.n, np.inf)
            else:
                self._bucket_bw[key] = matrix.min(axis=0) if slowest else matrix.max(axis=0)
        return self._bucket_bw[key]

    def bucket_seconds(self, bucket: str, size: float, down: bool, slowest: bool, truncate: bool) -> np.ndarray:
        """Per node, ``size`` bytes over :meth:`bucket_bandwidth` in seconds (truncated to whole seconds, as floats, if asked), 0 on
        the bucket's own nodes; cached per item size until the bucket or the bandwidths change."""
        bandwidth, hosts = self.bucket_bandwidth(bucket, down=down, slowest=slowest), self.in_bucket(bucket)
        key = (bucket, size, down, slowest, truncate)
        kept = self._bucket_seconds.get(key)
        if kept is None or kept[0] is not bandwidth or kept[1] is not hosts:
            seconds = size / bandwidth
            seconds[hosts] = 0.0
            kept = self._bucket_seconds[key] = (bandwidth, hosts, np.trunc(seconds) if truncate else seconds)
        return kept[2]

    def item_seconds(self, path: str, down: bool, skippy: bool) -> np.ndarray | None:
        """:meth:`bucket_seconds` of the item at ``path`` (``"bucket/item"``; None: no such item), down from or up to its
        bucket (``skippy``: whole seconds, slowest link), kept per path until the storage index changes."""
        key, version = (path, down, skippy), self.storage.version
        kept = self._item_seconds.get(key)
        if kept is None or kept[0] != version:
            item = self.storage.stat(path)
            seconds = None if item is None else self.bucket_seconds(item[0], item[1], down, slowest=skippy, truncate=skippy)
            if len(self._item_seconds) >= 4096:  # paths no pod asks for any more
                self._item_seconds.clear()
            kept = self._item_seconds[key] = (version, seconds)
        return kept[1]

    def in_bucket(self, bucket: str) -> np.ndarray:
        """Boolean mask: nodes that host ``bucket`` (cached until the bucket gains a node)."""
        members = self.storage.buckets.get(bucket, [])
        key = ("bucket", bucket, len(members))
        if key not in self._mask_cache:
            mask = np.zeros(self.n, dtype=bool)
            mask[members] = True
            self._mask_cache[key] = mask
        return self._mask_cache[key]

    # ---------------------------------------------------------------- GPUs
    @property
    def gpu_free(self) -> np.ndarray:
        """Free GPUs per node (float: the free milli-GPU of its devices summed, / 1000)."""
        return self.gpu_milli_free.sum(axis=1) / GPU_MILLI

    @property
    def gpu_devices_max(self) -> int:
        """Columns of the device grid (the most devices any node has, at least 1)."""
        return int(self.gpu_milli_free.shape[1])

    def gpu_fits(self, pod: Pod) -> np.ndarray | None:
        """Boolean mask: nodes with ``devices`` devices that each have the pod's share free (None: no GPU asked)."""
        count, milli = pod.gpu_devices
        if count == 0:
            return None
        fits = self.gpu_milli_free >= milli
        return (fits.sum(axis=1) >= count) if count > 1 else fits.any(axis=1)

    def default_devices(self, pod: Pod, node: int) -> tuple[int, ...]:
        """The devices a pod takes on ``node`` unless a policy chooses: best fit for shares (the device with the least
        free milli-GPU that fits, lowest index on ties), the lowest-index free devices for whole GPUs."""
        count, milli = pod.gpu_devices
        if count == 0:
            return ()
        free = self.gpu_milli_free[node]
        fitting = np.flatnonzero(free >= milli)
        if len(fitting) < count:
            raise ValueError(f"node {self.names[node]}: {count} device(s) with {milli} milli-GPU free needed, {len(fitting)} have it")
        if milli < GPU_MILLI:
            fitting = fitting[np.argsort(free[fitting], kind="stable")]
        return tuple(int(d) for d in fitting[:count])

    def _take_gpus(self, pod: Pod, node: int, devices: Sequence[int] | None, sign: int) -> tuple[int, ...]:
        count, milli = pod.gpu_devices
        if count == 0:
            return ()
        if devices is None:
            if sign > 0:
                devices = self.default_devices(pod, node)
            else:
                raise ValueError(f"pod {pod.name}: removing a GPU pod needs the devices it was placed on")
        devices = tuple(int(d) for d in devices)
        if len(devices) != count or len(set(devices)) != count:
            raise ValueError(f"pod {pod.name}: {count} distinct device(s) expected, got {list(devices)}")
        row = self.gpu_milli_free[node]
        after = row[list(devices)] - sign * milli
        if (after < 0).any() or (after > GPU_MILLI).any() or any(d >= self.gpu_count[node] for d in devices):
            raise ValueError(
                f"node {self.names[node]}: devices {list(devices)} cannot {'take' if sign > 0 else 'return'} {milli} milli-GPU each"
            )
        row[list(devices)] = after
        self.gpu_pods_by_kind[node, 0 if (count == 1 and milli < GPU_MILLI) else count] += sign
        return devices

    # ---------------------------------------------------------------- placement state
    def missing_images(self, pod: Pod, node: int) -> list[str]:
        """The pod's images (normalised, one per container) that ``node`` does not hold."""
        indices = [self.image_index(image) for image in pod.images]  # first: image_index grows the cache for new images
        return [image for image, i in zip(pod.images, indices, strict=True) if not self.image_cached[i, node]]

    def place(self, pod: Pod, node: int, devices: Sequence[int] | None = None) -> list[str]:
        """Bind ``pod`` to ``node``: pull its images into the cache, take its requests (GPU shares on ``devices``,
        default :meth:`default_devices`: pass the same devices to :meth:`remove`). Returns the images pulled."""
        if pod.gpu_devices[0]:
            self._take_gpus(pod, node, devices, +1)
        images = pod.images
        if len(images) == 1:  # most pods: missing_images and cache_image for one image, without the lists
            i = self.image_index(images[0])  # first: image_index grows the cache for a new image
            needed = [] if self.image_cached[i, node] else [images[0]]
            if needed:
                self.cache_image(i, node)
        else:
            needed = self.missing_images(pod, node)
            for image in needed:
                self.cache_image(image, node)
        # item by item as Python numbers (what ``a[node] -= x`` computes, without numpy's scalar arithmetic)
        self.cpu_free[node] = self.cpu_free.item(node) - pod.cpu_millis
        self.memory_free[node] = self.memory_free.item(node) - pod.memory
        self.pods[node] = self.pods.item(node) + 1
        self.version[node] = self.version.item(node) + 1
        self.changes.record(node)
        return needed

    def remove(self, pod: Pod, node: int, devices: Sequence[int] | None = None) -> None:
        """Unbind ``pod`` from ``node``: give its requests back (GPU shares to the ``devices`` it was placed on); cached images stay."""
        if pod.gpu_devices[0]:
            self._take_gpus(pod, node, devices, -1)
        self.cpu_free[node] = self.cpu_free.item(node) + pod.cpu_millis
        self.memory_free[node] = self.memory_free.item(node) + pod.memory
        self.pods[node] = self.pods.item(node) - 1
        self.version[node] = self.version.item(node) + 1
        self.changes.record(node)

    def free_divisors(self) -> tuple[np.ndarray, np.ndarray]:
        """Free cpu and free memory per node as floats, 0 counted as 1: the denominators of Skippy's (and k8s 1.13's)
        request fractions, kept up to date through :attr:`changes`. Read them, do not change them.

        Dividing a positive request by the 1 that stands for 0 gives a fraction >= 1, as dividing by 0 would (inf):
        every score that caps fractions at 1 is the same, and nothing divides by zero."""
        kept, mark = self._divisors, self.changes.mark
        changed = None if kept is None else self.changes.since(kept[0])
        if changed is None:
            cpu, memory = self.cpu_free.astype(np.float64), self.memory_free.astype(np.float64)
            np.putmask(cpu, cpu == 0, 1.0)
            np.putmask(memory, memory == 0, 1.0)
        else:
            _, cpu, memory = kept
            for node in changed:
                cpu[node] = float(self.cpu_free[node]) or 1.0
                memory[node] = float(self.memory_free[node]) or 1.0
        self._divisors = (mark, cpu, memory)
        return cpu, memory

    def pull_seconds(self, images: Iterable[str], node: int) -> float:
        """Seconds to pull ``images`` (each once) to ``node`` over its registry bandwidth."""
        size = sum(self.image_size_on(self.image_index(image), node) for image in set(images))
        return float(size / self.registry_bandwidth[node]) if size else 0.0

    def transfer_seconds(self, pod: Pod, node: int) -> float:
        """Seconds a job on ``node`` spends reading its input (and writing its output) over the fastest link."""
        labels = pod.labels
        if RECEIVES_FROM not in labels and SENDS_TO not in labels:  # no data (every cold start of a function without any)
            return 0.0
        total = 0.0
        for key, down in ((RECEIVES_FROM, True), (SENDS_TO, False)):
            item = self.storage.stat(pod.labels.get(key, ""))
            if item is None or self.in_bucket(item[0])[node]:
                continue
            total += float(item[1] / self.bucket_bandwidth(item[0], down=down, slowest=False)[node])
        return total

    # ---------------------------------------------------------------- tables
    def node_table(self) -> pd.DataFrame:
        """One row per node: identity, labels that matter, capacity, allocation, pods, schedulable."""
        import pandas as pd

        return pd.DataFrame(self.node_columns())

    def node_columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`node_table` as numpy arrays (no pandas: the engine loads it only when a table is asked for)."""
        if self._static_table is None:  # labels and capacities never change: build their columns once
            self._static_table = {
                "name": np.array(self.names, dtype=object),
                "region": self.label_column(REGION),
                "zone": self.label_column(ZONE),
                "locality": self.label_column(LOCALITY, "cloud"),
                "node_class": self.label_column(NODE_CLASS),
                "arch": self.label_column(ARCH),
                "gpu_model": self.label_column(GPU_MODEL),
                "storage": self.has_label(STORAGE),
            }
        st = self._static_table
        return {
            **{k: st[k] for k in ("name", "region", "zone", "locality", "node_class", "arch", "storage")},
            "cpu_capacity": self.cpu_capacity,
            "cpu_allocated": self.cpu_capacity - self.cpu_free,
            "memory_capacity": self.memory_capacity,
            "memory_allocated": self.memory_capacity - self.memory_free,
            "gpu_capacity": self.gpu_capacity,
            "gpu_allocated": self.gpu_capacity - self.gpu_free,
            "gpu_count": self.gpu_count,
            "gpu_model": st["gpu_model"],
            "speed": self.speed,
            "replicas": self.pods.copy(),
            "schedulable": self.schedulable.copy(),
        }


def nodes_of(cluster: Cluster, nodes: Iterable[int | str]) -> np.ndarray:
    """Node positions for names or positions."""
    return np.array([cluster.index[n] if isinstance(n, str) else int(n) for n in nodes], dtype=np.int64)


# ------------------------------------------------------------------------------------------ images

#: Images every synthesized registry holds: size in bytes per architecture (first arch listed first).
IMAGE_CATALOGUE: dict[str, dict[str, int]] = {
    "scalelab/worker:1.0": {"amd64": 310 * MiB, "arm64": 290 * MiB, "arm": 270 * MiB},
    "scalelab/worker-slim:1.0": {"amd64": 45 * MiB, "arm64": 42 * MiB, "arm": 40 * MiB},
    "scalelab/preprocess:1.0": {"amd64": 120 * MiB, "arm64": 110 * MiB, "arm": 105 * MiB},
    "scalelab/inference-gpu:1.0": {"amd64": 2100 * MiB, "arm64": 1500 * MiB},
    "scalelab/analytics:1.0": {"amd64": 820 * MiB},
}

WORKER_INPUT = "worker-input/window"  # bucket/item the worker pods read when worker_input_mib > 0
