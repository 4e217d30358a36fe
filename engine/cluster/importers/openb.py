"""Import the Alibaba openb GPU cluster node list (``sn, cpu_milli, memory_mib, gpu, model``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.cluster.files import CLUSTER_DIR
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
    ContainerRegistry,
    MiB,
    NodeSpec,
    StorageIndex,
)
from engine.cluster.synth import MBIT, catalogue_registry, node

OPENB_NODES = CLUSTER_DIR / "openb_node_list_all_node.csv"


def openb(
    path: Path | str = OPENB_NODES,
    nodes: int = 0,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    registry: ContainerRegistry | None = None,
) -> Cluster:
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
        labels = {ARCH: "amd64", REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud", NODE_CLASS: f"openb-{model}" if gpus else "openb-cpu"}
        if gpus:
            labels.update({CAPABILITY_GPU: "true", GPU_MODEL: str(model)})
        specs.append(NodeSpec(str(sn), int(cpu), int(mem) * MiB, labels, speed=1.0, gpus=float(gpus), registry_bandwidth=10000 * MBIT))
    if storage:
        specs.append(
            node("openb-storage", "storage", {REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud", STORAGE: "minio"}, 10000 * MBIT)
        )
    cluster = Cluster(specs, registry or catalogue_registry(), StorageIndex())
    if storage:
        full = np.full((1, cluster.n), 10000 * MBIT)
        cluster.set_storage_bandwidth(full, full.copy())
    return cluster
