"""Build the cluster a :class:`~engine.cluster.params.ClusterParams` section describes, and check its files.

:func:`check_files` is the only place the cluster section touches the disk before a run: the scenario
loader and live parameter changes call it, so a bad dump fails with one line before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.cluster.files import CLUSTER_DIR, resolve_cluster_path
from engine.cluster.model import Cluster, MiB
from engine.cluster.params import ClusterParams
from engine.cluster.synth import _buckets, _prepull, catalogue_registry, cloud_regions, faas_edge, urban_sensing
from engine.cluster.topologies import TOPOLOGIES, TOPOLOGY_TABLE
from engine.core.params import ParamError
from engine.core.plugins import PluginError, one_line


def _check_dump(params: ClusterParams, name: str, noun: str, command: str, load: Callable[[Path], object]) -> None:
    """The dump field ``name`` names: given, present, readable, and every object in it valid."""
    field, value = f"cluster.{name}", getattr(params, name)
    allowed_file = f"allowed: a {command} dump, relative to {CLUSTER_DIR} or absolute"
    if not value.strip():
        raise ParamError(field, f"topology {params.topology} needs a {noun}; {allowed_file}")
    path = resolve_cluster_path(value)
    if not path.is_file():
        raise ParamError(field, f"{path}: no such file; {allowed_file}")
    from engine.cluster.importers.kube import KubeObjectError

    try:
        load(path)
    except KubeObjectError as e:
        raise ParamError(field, str(e)) from None


def check_files(params: ClusterParams) -> None:
    """Raise :class:`ParamError` when a file the section names is missing or unreadable (cached per file version).

    The importers of files (openb, kubectl dumps) load when a section names such a topology, not with every cluster."""
    if params.topology == "openb":
        from engine.cluster.importers.openb import read_openb_nodes

        if not params.openb_file.strip():
            raise ParamError(
                "cluster.openb_file", f"topology openb needs a node list; allowed: a CSV file, relative to {CLUSTER_DIR} or absolute"
            )
        read_openb_nodes(resolve_cluster_path(params.openb_file))
        return
    if params.topology not in ("kube_nodes", "kube_snapshot"):
        return
    from engine.cluster.importers.kube import load_kube_nodes
    from engine.cluster.importers.kube_snapshot import load_kube_pods

    nodes, pods = ("node dump", "kubectl get nodes -o json", load_kube_nodes), ("pod dump", "kubectl get pods -A -o json", load_kube_pods)
    if params.topology == "kube_nodes":
        _check_dump(params, "kube_nodes_file", *nodes)
    elif params.topology == "kube_snapshot":
        _check_dump(params, "kube_snapshot_nodes_file", *nodes)
        _check_dump(params, "kube_snapshot_pods_file", *pods)


def _plugin_cluster(params: ClusterParams, rng: np.random.Generator) -> Cluster:
    label = f"plugin {params.topology!r} (cluster_topologies)"
    try:
        cluster = TOPOLOGY_TABLE.plugin_class(params.topology)().build(params, rng)
    except ParamError:
        raise
    except Exception as e:
        raise PluginError(f"{label}: build raised {one_line(e)}") from None
    if not isinstance(cluster, Cluster) or cluster.n < 1:
        raise PluginError(f"{label}: build returned {cluster!r:.80}; allowed: a Cluster with at least one node")
    return cluster


def build_cluster(params: ClusterParams, rng: np.random.Generator) -> Cluster:
    """The cluster ``params`` describe, seeded from ``rng`` and ``params.seed_offset``."""
    seeded = np.random.default_rng([int(rng.integers(2**63)), params.seed_offset])
    if params.topology not in TOPOLOGIES:  # a plugin's layout
        cluster = _plugin_cluster(params, seeded)
    elif params.topology == "cloud_regions":
        cluster = cloud_regions(params.nodes, params.regions, seeded, params.storage_nodes, params.edge_fraction)
    elif params.topology in ("urban_sensing", "faas_edge"):
        cluster = (urban_sensing if params.topology == "urban_sensing" else faas_edge)(
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
        from engine.cluster.importers.kube import kube_nodes

        cluster = kube_nodes(resolve_cluster_path(params.kube_nodes_file), seeded, params.storage_nodes)
    elif params.topology == "kube_snapshot":
        from engine.cluster.importers.kube_snapshot import kube_snapshot

        cluster = kube_snapshot(
            resolve_cluster_path(params.kube_snapshot_nodes_file),
            resolve_cluster_path(params.kube_snapshot_pods_file),
            catalogue_registry(),
        )
    else:
        from engine.cluster.importers.openb import openb

        path = resolve_cluster_path(params.openb_file)
        cluster = openb(path, params.openb_nodes, seeded, params.storage_nodes, gpu_nodes_only=params.openb_gpu_nodes_only)
    _buckets(cluster, seeded, int(params.worker_input_mib * MiB))
    if params.topology not in ("kube_nodes", "kube_snapshot"):  # a dump's status.images is the image cache
        _prepull(cluster, params.worker_image, seeded, params.prepull_cloud, params.prepull_fraction)
    return cluster
