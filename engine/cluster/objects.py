"""What the scheduler places and where images and data come from: pods and their containers, the container registry
and the storage index, with the label keys and units the cluster uses (:mod:`engine.cluster.model` re-exports them).

Units: cpu in millicores, memory and image/data sizes in bytes; GPU shares in milli-GPU (1000 is one device).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from engine.cluster.constraints import NodeSelectorTerm, Toleration

KiB, MiB, GiB = 2**10, 2**20, 2**30

ARCH = "beta.kubernetes.io/arch"
LOCALITY = "locality.skippy.io/type"
STORAGE = "data.skippy.io/storage"
CAPABILITY = "capability.skippy.io"
CAPABILITY_GPU = "capability.skippy.io/nvidia-gpu"
REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
NODE_CLASS = "node.scalelab.io/class"
NODE_DEVICE = "node.scalelab.io/device"  # a measured device type (engine.cluster.devices), for function characterisations
GPU_MODEL = "nvidia.com/gpu.product"
RECEIVES_FROM = "data.skippy.io/receives-from-storage/path"
SENDS_TO = "data.skippy.io/sends-to-storage/path"

GPU_MILLI = 1000  # milli-GPU of one whole device
DEFAULT_CPU_MILLIS = 100  # Kubernetes' non-zero defaults, as in Skippy
DEFAULT_MEMORY = 200 * MiB


def gpu_request(gpus: float, milli: int = 0) -> tuple[int, int]:
    """(devices, milli-GPU on each) of a GPU request: below 1 GPU a share of one device, otherwise whole devices.

    ``milli`` > 0 states the share of each device explicitly (openb's ``num_gpu`` x ``gpu_milli``: ``gpus`` is then
    ``devices * milli / 1000``). Raises ValueError for a request no device split can serve (1.5 GPUs).
    """
    if gpus <= 0:
        return 0, 0
    if milli > 0:
        devices = round(gpus * GPU_MILLI / milli)
        if devices < 1 or milli > GPU_MILLI or abs(devices * milli - gpus * GPU_MILLI) > 1e-6 * GPU_MILLI:
            raise ValueError(f"{gpus!r} GPUs in shares of {milli} milli-GPU; allowed: a whole number of shares of at most {GPU_MILLI}")
        return devices, int(milli)
    if gpus < 1:
        return 1, max(1, round(gpus * GPU_MILLI))
    if gpus != int(gpus):
        raise ValueError(f"{gpus!r} GPUs; allowed: below 1 (a share of one GPU) or a whole number of GPUs")
    return int(gpus), GPU_MILLI


def normalize_image_name(image: str) -> str:
    """Kubernetes-style image name: ``:latest`` is appended when there is no tag after the last ``/``."""
    return image if image.rfind(":") > image.rfind("/") else image + ":latest"


# --------------------------------------------------------------------------------------------- pods


@dataclass(frozen=True)
class Container:
    """One container of a pod: its image and its requests."""

    image: str
    cpu_millis: int = DEFAULT_CPU_MILLIS
    memory: int = DEFAULT_MEMORY


@dataclass(frozen=True)
class Pod:
    """What the scheduler places: containers, labels (capability and data-locality hints), GPU needs.

    ``gpus`` is the GPU request (below 1: a share of one device; else whole devices; ``gpu_milli`` states the
    share of each device when several partial devices are asked for); ``gpu_models`` lists acceptable GPU
    models (empty: any); ``node_labels_present`` / ``_absent`` are label keys a node must have / must not have.
    The Kubernetes constraints (empty for synthesized pods):
    ``tolerations`` of node taints, ``node_selector`` (labels a node must carry with these values) and
    ``node_affinity`` (required node affinity: any term must hold).
    """

    name: str
    containers: tuple[Container, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    gpus: float = 0.0
    gpu_models: tuple[str, ...] = ()
    node_labels_present: tuple[str, ...] = ()
    node_labels_absent: tuple[str, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple[NodeSelectorTerm, ...] = ()
    gpu_milli: int = 0

    def __post_init__(self) -> None:
        # refuse a request no device split can serve, at once; the split is kept (the cached_property below reads it)
        self.__dict__["gpu_devices"] = gpu_request(self.gpus, self.gpu_milli)

    @cached_property
    def gpu_devices(self) -> tuple[int, int]:
        """(devices, milli-GPU taken on each): (0, 0) without GPUs, (1, share) for a sharing pod, (k, 1000) for k GPUs."""
        return gpu_request(self.gpus, self.gpu_milli)

    @cached_property
    def cpu_millis(self) -> int:
        return self._requests()[0]

    @cached_property
    def memory(self) -> int:
        return self._requests()[1]

    @cached_property
    def images(self) -> tuple[str, ...]:
        """Normalised image names, one per container (duplicates kept)."""
        return self._requests()[2]

    def _requests(self) -> tuple[int, int, tuple[str, ...]]:
        """The three cached values above in one pass over the containers, all kept at the first ask of any (a
        scheduler asks for all three of every new pod): the sums as ``sum`` adds them, 0 first."""
        containers = self.containers
        if len(containers) == 1:  # most pods
            c = containers[0]
            image = c.image  # normalize_image_name, inline
            found = 0 + c.cpu_millis, 0 + c.memory, (image if image.rfind(":") > image.rfind("/") else image + ":latest",)
        else:
            cpu = memory = 0
            for c in containers:
                cpu += c.cpu_millis
                memory += c.memory
            found = cpu, memory, tuple([normalize_image_name(c.image) for c in containers])
        fields = self.__dict__
        fields["cpu_millis"], fields["memory"], fields["images"] = found
        return found


# ------------------------------------------------------------------------------ registry and storage


class ContainerRegistry:
    """Images with their size per architecture; names are normalised, arch order is kept."""

    def __init__(self, images: Mapping[str, Mapping[str, int]] | None = None):
        self.names: list[str] = []
        self.sizes: list[dict[str, int]] = []
        self._index: dict[str, int] = {}
        for name, sizes in (images or {}).items():
            self.add(name, sizes)

    def add(self, image: str, sizes: Mapping[str, int]) -> int:
        """Register (or replace) an image; returns its index."""
        name = normalize_image_name(image)
        if name in self._index:
            self.sizes[self._index[name]] = dict(sizes)
        else:
            self._index[name] = len(self.names)
            self.names.append(name)
            self.sizes.append(dict(sizes))
        return self._index[name]

    def index(self, image: str) -> int:
        """Index of an image (raises KeyError for an unknown one)."""
        idx = self._index.get(image)  # a pod's images are normalised already (normalising is idempotent)
        return idx if idx is not None else self._index[normalize_image_name(image)]

    def __contains__(self, image: str) -> bool:
        return normalize_image_name(image) in self._index

    def __len__(self) -> int:
        return len(self.names)


class StorageIndex:
    """Buckets on storage nodes and the data items in them (an in-memory object store index)."""

    def __init__(self) -> None:
        self.buckets: dict[str, list[int]] = {}
        self.items: dict[tuple[str, str], int] = {}
        self.version = 0  # bumped by every change below: what is derived from the index is kept until it moves

    def make_bucket(self, bucket: str, node: int) -> None:
        """Create ``bucket`` on node ``node`` (a bucket may live on several nodes)."""
        nodes = self.buckets.setdefault(bucket, [])
        if node not in nodes:
            nodes.append(node)
            self.version += 1

    def put(self, bucket: str, item: str, size: int) -> None:
        """Store an item of ``size`` bytes on every node of its bucket."""
        if not self.buckets.get(bucket):
            raise KeyError(f"no nodes host bucket {bucket!r}")
        self.items[(bucket, item)] = int(size)
        self.version += 1

    def stat(self, path: str) -> tuple[str, int] | None:
        """``"bucket/item"`` -> (bucket, size), or None when there is no such item."""
        parts = path.split("/")
        if len(parts) != 2 or tuple(parts) not in self.items:
            return None
        return parts[0], self.items[(parts[0], parts[1])]
