"""The cluster layouts a scenario can name (``cluster.topology``), in one explicit table."""

from __future__ import annotations

TOPOLOGIES: dict[str, str] = {
    "cloud_regions": "synthesized cloud regions (Skippy's scalability layout)",
    "urban_sensing": "an urban-sensing edge layout: cells of small devices, cloudlets, a cloud region",
    "faas_edge": "the urban-sensing layout on faas-sim's measured device types (rpi3, rpi4, rockpi, coral, nano, tx2, nx, nuc, xeoncpu, xeongpu)",
    "openb": "the Alibaba openb GPU cluster's node list",
    "kube_nodes": "a kubectl get nodes -o json dump (kube_nodes_file)",
    "kube_snapshot": "a cluster snapshot: kubectl get nodes -o json and get pods -A -o json dumps (kube_snapshot_*_file), running pods as allocations",
}

_PREPULL = ("prepull_cloud", "prepull_fraction")
_URBAN = ("cells", "devices_per_cell", "cloudlets", "cloud_nodes", "edge_uplink_mbps", "backbone_mbps", *_PREPULL)

#: The cluster fields only some layouts read: a scenario naming one its topology never reads is refused.
TOPOLOGY_FIELDS: dict[str, tuple[str, ...]] = {
    "cloud_regions": ("nodes", "regions", "edge_fraction", *_PREPULL),
    "urban_sensing": _URBAN,
    "faas_edge": _URBAN,
    "openb": ("openb_nodes", "openb_file", "openb_gpu_nodes_only", *_PREPULL),
    "kube_nodes": ("kube_nodes_file",),
    "kube_snapshot": ("kube_snapshot_nodes_file", "kube_snapshot_pods_file"),
}
