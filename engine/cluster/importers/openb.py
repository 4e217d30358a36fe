"""Import an Alibaba openb node list (``sn, cpu_milli, memory_mib, gpu, model``) as a cluster.

Any node list in that format (``cluster.openb_file``, relative to ``data/clusters`` or absolute): columns are
read by header name, in any order; ``model`` may be left out when no node has a GPU; columns the format does
not name are kept (:attr:`OpenbNodes.extra`) and become node labels ``openb.scalelab.io/<column>``. Every
node is one datacenter's, with a 10 Gbit/s registry link; a node's ``gpu`` devices (1000 milli-GPU each) are
of its ``model`` (label ``nvidia.com/gpu.product``). Bad input raises a :class:`~engine.core.csvfile.FileError`
naming ``cluster.openb_file``, the file, the line and the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
from engine.core import filecache
from engine.core.csvfile import FileError, file_line, numeric_column, read_csv, require_columns, text_column

OPENB_NODES = CLUSTER_DIR / "openb_node_list_all_node.csv"
FIELD = "cluster.openb_file"
COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
EXTRA_LABEL = "openb.scalelab.io/"


@dataclass(frozen=True)
class OpenbNodes:
    """The rows of a node list, in file order: every column, checked; ``line`` is each row's line in the file."""

    path: str
    sn: np.ndarray  # str, unique
    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    gpu: np.ndarray  # int64, devices
    model: np.ndarray  # str, '' without GPUs
    line: np.ndarray  # int64
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # other columns, as text

    def __len__(self) -> int:
        return len(self.sn)


def read_openb_nodes(path: Path | str) -> OpenbNodes:
    """Read and check a node list (cached while the file is unchanged)."""
    path = Path(path)
    return filecache.cached("openb-nodes", path, (), lambda: _read(path))


def _read(path: Path) -> OpenbNodes:
    df = read_csv(path, FIELD, text_columns=("sn", "model"), base=str(CLUSTER_DIR), noun="node list")
    require_columns(df, path, COLUMNS[:4], "openb node list", FIELD)
    sn = text_column(df, "sn")
    empty = sn == ""
    if empty.any():
        raise FileError(path, f"line {file_line(int(np.argmax(empty)))}, column 'sn'", "an empty cell; allowed: a node name", FIELD)
    seen: dict[str, int] = {}
    for i, name in enumerate(sn.tolist()):
        if name in seen:
            raise FileError(
                path,
                f"line {file_line(i)}, column 'sn'",
                f"{name!r} is the name of line {file_line(seen[name])} too; allowed: unique names",
                FIELD,
            )
        seen[name] = i
    cpu = numeric_column(df, "cpu_milli", path, "a number of millicores", FIELD, integer=True)
    memory = numeric_column(df, "memory_mib", path, "a number of MiB", FIELD, integer=True)
    gpu = numeric_column(df, "gpu", path, "a number of GPU devices", FIELD, integer=True)
    model = text_column(df, "model")
    missing = (gpu > 0) & (model == "")
    if missing.any():
        i = int(np.argmax(missing))
        where = f"line {file_line(i)}, column 'model'"
        what = "missing" if "model" not in df.columns else "an empty cell"
        raise FileError(path, where, f"{what} for a node with {gpu[i]} GPU(s); allowed: its GPU model, e.g. T4 or V100M16", FIELD)
    extra = {c: text_column(df, c) for c in df.columns if c not in COLUMNS}
    return OpenbNodes(str(path), sn, cpu, memory, gpu, model, np.arange(len(df), dtype=np.int64) + 2, extra)


def openb(
    path: Path | str = OPENB_NODES,
    nodes: int = 0,
    rng: np.random.Generator | None = None,
    storage: bool = True,
    registry: ContainerRegistry | None = None,
    gpu_nodes_only: bool = False,
) -> Cluster:
    """The nodes of an openb node list (cpu, memory, GPU devices and model), one datacenter with a 10 Gbit/s registry link.

    ``gpu_nodes_only`` keeps the nodes with GPUs; ``nodes`` > 0 then takes a seeded sample in file order;
    ``storage`` adds one storage node.
    """
    table = read_openb_nodes(path)
    rows = np.flatnonzero(table.gpu > 0) if gpu_nodes_only else np.arange(len(table))
    if 0 < nodes < len(rows):
        rows = np.sort((rng or np.random.default_rng(0)).choice(rows, size=nodes, replace=False))
    specs = []
    for r in rows.tolist():
        gpus, model = int(table.gpu[r]), str(table.model[r])
        labels = {ARCH: "amd64", REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud", NODE_CLASS: f"openb-{model}" if gpus else "openb-cpu"}
        if gpus:
            labels.update({CAPABILITY_GPU: "true", GPU_MODEL: model})
        labels.update({EXTRA_LABEL + k: str(v[r]) for k, v in table.extra.items() if v[r] != ""})
        specs.append(
            NodeSpec(
                str(table.sn[r]),
                int(table.cpu_milli[r]),
                int(table.memory_mib[r]) * MiB,
                labels,
                speed=1.0,
                gpus=float(gpus),
                registry_bandwidth=10000 * MBIT,
            )
        )
    if storage:
        specs.append(
            node("openb-storage", "storage", {REGION: "openb", ZONE: "openb-a", LOCALITY: "cloud", STORAGE: "minio"}, 10000 * MBIT)
        )
    cluster = Cluster(specs, registry or catalogue_registry(), StorageIndex())
    if storage:
        full = np.full((1, cluster.n), 10000 * MBIT)
        cluster.set_storage_bandwidth(full, full.copy())
    return cluster
