"""Measured device types as node shapes (faas-sim's rpi3 ... xeongpu), and the device a node of any cluster stands for.

The shapes come from ``data/faas-sim/devices.csv`` (cpus, CPU architecture, memory, GPU generation, accelerator;
see the attribution there), read once when a cluster needs them. A device node carries ``node.scalelab.io/device``
(and the Kubernetes arch label in its Kubernetes spelling: x86 -> amd64, aarch64 -> arm64, arm32/arm32v7 -> arm);
GPU boards and the xeongpu VM have one GPU (model = the GPU generation, ``capability.skippy.io/nvidia-gpu``), the
coral board its Edge TPU (``capability.skippy.io/coral-tpu``). Nodes of other layouts (cloud regions, openb, a
kube dump) are mapped onto the nearest measured device by :func:`device_column`, so measured execution times
apply to every cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cluster.model import ARCH, CAPABILITY, CAPABILITY_GPU, GPU_MODEL, NODE_CLASS, NODE_DEVICE, Cluster, NodeSpec
from engine.cluster.quantity import parse_quantity, quantity_bytes
from engine.core import filecache

if TYPE_CHECKING:
    pass

DEVICES_FILE = Path(__file__).resolve().parents[2] / "data" / "faas-sim" / "devices.csv"
CAPABILITY_TPU = f"{CAPABILITY}/coral-tpu"
#: Image and device architecture names of the measurements, in Kubernetes' spelling.
ARCH_NAMES = {"x86": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "arm32v7": "arm", "arm32": "arm", "arm": "arm"}
#: Relative job speed by device kind (for the VM world's jobs on these nodes; function times are measured per device).
KIND_SPEED = {"sbc": 0.3, "embai": 0.5, "sffc": 1.0, "vm": 1.2}
#: Node classes of the other synthesizers and the measured device each stands for.
CLASS_DEVICE = {
    "rpi3": "rpi3",
    "rpi4": "rpi4",
    "jetson-nano": "nano",
    "xavier-nx": "nx",
    "nuc": "nuc",
    "edge-gateway": "rockpi",
    "vm-gpu": "xeongpu",
}


@dataclass(frozen=True)
class DeviceShape:
    """One measured device type."""

    device: str
    cpus: int
    arch: str  # Kubernetes spelling
    memory: int  # bytes
    kind: str  # sbc | embai | sffc | vm
    gpu: str  # GPU generation, '' without
    accelerator: str  # 'tpu' or ''


def device_shapes(path: Path = DEVICES_FILE) -> dict[str, DeviceShape]:
    """The device shapes of ``devices.csv`` by device name (read once per file version)."""
    import pandas as pd

    def build() -> dict[str, DeviceShape]:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        out = {}
        for row in df.itertuples(index=False):
            out[row.device] = DeviceShape(
                device=row.device,
                cpus=int(row.cpus),
                arch=ARCH_NAMES[row.arch],
                memory=quantity_bytes(parse_quantity(row.mem)),
                kind=row.type,
                gpu=row.gpu,
                accelerator=row.accelerator,
            )
        return out

    return filecache.cached("devices", path, (), build)


def device_node(
    name: str, device: str, labels: dict[str, str], registry_bandwidth: float, shapes: Mapping[str, DeviceShape] | None = None
) -> NodeSpec:
    """A node of a measured device type: its cpus, memory, arch, GPU or TPU (``shapes``: :func:`device_shapes`, read
    by the caller once for many nodes)."""
    shape = (device_shapes() if shapes is None else shapes)[device]
    labels = {ARCH: shape.arch, NODE_CLASS: device, NODE_DEVICE: device, **labels}
    gpus = 0.0
    if shape.gpu:
        gpus = 1.0
        labels.update({CAPABILITY_GPU: "true", GPU_MODEL: shape.gpu})
    if shape.accelerator == "tpu":
        labels[CAPABILITY_TPU] = "true"
    return NodeSpec(
        name,
        shape.cpus * 1000,
        shape.memory,
        labels,
        speed=KIND_SPEED.get(shape.kind, 1.0),
        gpus=gpus,
        registry_bandwidth=registry_bandwidth,
    )


def device_column(cluster: Cluster) -> np.ndarray:
    """The measured device each node stands for: its device label, else by node class, else xeongpu/xeoncpu by GPU."""
    labelled = cluster.label_column(NODE_DEVICE)
    classes = cluster.label_column(NODE_CLASS)
    out = np.empty(cluster.n, dtype=object)
    for i in range(cluster.n):
        if labelled[i]:
            out[i] = labelled[i]
        elif classes[i] in CLASS_DEVICE:
            out[i] = CLASS_DEVICE[classes[i]]
        else:
            out[i] = "xeongpu" if cluster.gpu_capacity[i] > 0 else "xeoncpu"
    return out


def label_devices(cluster: Cluster) -> np.ndarray:
    """Give every node without a device label the one :func:`device_column` maps it to; returns the column.

    Called by the function platform right after a cluster is built (before any placement), so that a function's
    node affinity on ``node.scalelab.io/device`` applies to every layout.
    """
    column = device_column(cluster)
    codes = cluster.label_codes.get(NODE_DEVICE)
    if codes is None:
        codes = cluster.label_codes[NODE_DEVICE] = np.full(cluster.n, -1, dtype=np.int32)
        cluster.label_values[NODE_DEVICE] = []
        cluster._value_code[NODE_DEVICE] = {}
    for i in np.flatnonzero(codes < 0):
        codes[i] = cluster._code(NODE_DEVICE, str(column[i]))
    cluster._mask_cache.clear()
    return column


def reference_speed(device: str) -> float:
    """The job speed a node of ``device`` has by default (its kind's), against which a node's own speed is relative."""
    shape = device_shapes().get(device)
    return KIND_SPEED.get(shape.kind, 1.0) if shape is not None else 1.0
