"""The cluster layouts a scenario can name (``cluster.topology``), in one explicit table."""

from __future__ import annotations

TOPOLOGIES: dict[str, str] = {
    "cloud_regions": "synthesized cloud regions (Skippy's scalability layout)",
    "urban_sensing": "an urban-sensing edge layout: cells of small devices, cloudlets, a cloud region",
    "openb": "the Alibaba openb GPU cluster's node list",
    "kube_nodes": "a kubectl get nodes -o json dump (kube_nodes_file)",
    "kube_snapshot": "a cluster snapshot: kubectl get nodes -o json and get pods -A -o json dumps (kube_snapshot_*_file), running pods as allocations",
}
