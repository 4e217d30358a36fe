"""Build the cluster a :class:`~engine.cluster.params.ClusterParams` section describes, and check its files.

:func:`check_files` is the only place the cluster section touches the disk before a run: the scenario
loader and live parameter changes call it, so a bad dump fails with one line before anything runs.
"""

from __future__ import annotations

import numpy as np

from engine.cluster.files import CLUSTER_DIR, resolve_cluster_path
from engine.cluster.importers.kube import KubeNodesError, kube_nodes, load_kube_nodes
from engine.cluster.importers.openb import openb, read_openb_nodes
from engine.cluster.model import Cluster, MiB
from engine.cluster.params import ClusterParams
from engine.cluster.synth import _buckets, _prepull, cloud_regions, urban_sensing
from engine.core.params import ParamError


def check_files(params: ClusterParams) -> None:
    """Raise :class:`ParamError` when a file the section names is missing or unreadable (cached per file version)."""
    if params.topology == "openb":
        if not params.openb_file.strip():
            raise ParamError(
                "cluster.openb_file", f"topology openb needs a node list; allowed: a CSV file, relative to {CLUSTER_DIR} or absolute"
            )
        read_openb_nodes(resolve_cluster_path(params.openb_file))
        return
    if params.topology != "kube_nodes":
        return
    allowed_file = f"allowed: a kubectl get nodes -o json dump, relative to {CLUSTER_DIR} or absolute"
    if not params.kube_nodes_file.strip():
        raise ParamError("cluster.kube_nodes_file", f"topology kube_nodes needs a node dump; {allowed_file}")
    path = resolve_cluster_path(params.kube_nodes_file)
    if not path.is_file():
        raise ParamError("cluster.kube_nodes_file", f"{path}: no such file; {allowed_file}")
    try:
        load_kube_nodes(path)
    except KubeNodesError as e:
        raise ParamError("cluster.kube_nodes_file", str(e)) from None


def build_cluster(params: ClusterParams, rng: np.random.Generator) -> Cluster:
    """The cluster ``params`` describe, seeded from ``rng`` and ``params.seed_offset``."""
    seeded = np.random.default_rng([int(rng.integers(2**63)), params.seed_offset])
    if params.topology == "cloud_regions":
        cluster = cloud_regions(params.nodes, params.regions, seeded, params.storage_nodes, params.edge_fraction)
    elif params.topology == "urban_sensing":
        cluster = urban_sensing(
            params.cells,
            params.devices_per_cell,
            params.cloudlets,
            params.cloud_nodes,
            seeded,
            params.storage_nodes,
            params.edge_uplink_mbps,
            params.backbone_mbps,
        )
    elif params.topology == "kube_nodes":
        cluster = kube_nodes(resolve_cluster_path(params.kube_nodes_file), seeded, params.storage_nodes)
    else:
        path = resolve_cluster_path(params.openb_file)
        cluster = openb(path, params.openb_nodes, seeded, params.storage_nodes, gpu_nodes_only=params.openb_gpu_nodes_only)
    _buckets(cluster, seeded, int(params.worker_input_mib * MiB))
    if params.topology != "kube_nodes":  # a dump's status.images is the image cache
        _prepull(cluster, params.worker_image, seeded, params.prepull_cloud, params.prepull_fraction)
    return cluster
