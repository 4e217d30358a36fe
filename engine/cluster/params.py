"""The cluster section: which layout the workers are placed on, and the worker pod's spec.

No file is read here: the kube_nodes and kube_snapshot dumps and the openb node list are checked when a scenario is built
(:func:`engine.cluster.build.check_files`).
"""

from __future__ import annotations

import param

from engine.cluster.model import CAPABILITY, IMAGE_CATALOGUE, RECEIVES_FROM, WORKER_INPUT, Container, MiB, Pod, gpu_request
from engine.cluster.topologies import TOPOLOGIES, TOPOLOGY_FIELDS
from engine.core.params import ParamError, Section


class ClusterParams(Section):
    """The cluster the workers are placed on, and the worker pod's spec."""

    key = "cluster"

    topology = param.Selector(
        default="urban_sensing",
        objects=list(TOPOLOGIES),
        doc="Cluster layout: " + "; ".join(f"{k}: {v}" for k, v in TOPOLOGIES.items()) + ".",
    )
    seed_offset = param.Integer(0, bounds=(0, 2**31 - 1), doc="Added to the run seed for the cluster only: another cluster, same run.")
    storage_nodes = param.Boolean(
        True,
        doc="Add storage nodes (one per region or cloudlet site; kube_nodes: the dump's data.skippy.io/storage nodes, else one; kube_snapshot: only the dump's) holding data buckets.",
    )
    nodes = param.Integer(100, bounds=(1, 50000), doc="cloud_regions: total nodes, split evenly over the regions.")
    regions = param.Integer(10, bounds=(1, 100), doc="cloud_regions: number of regions.")
    edge_fraction = param.Number(
        0.0, bounds=(0.0, 1.0), step=0.05, doc="cloud_regions: share of nodes that are small edge sites (locality edge)."
    )
    cells = param.Integer(6, bounds=(1, 500), doc="urban_sensing / faas_edge: cells of small devices.")
    devices_per_cell = param.Integer(8, bounds=(1, 200), doc="urban_sensing / faas_edge: devices per cell.")
    cloudlets = param.Integer(3, bounds=(0, 100), doc="urban_sensing / faas_edge: cloudlets with accelerators, each serving some cells.")
    cloud_nodes = param.Integer(10, bounds=(0, 5000), doc="urban_sensing / faas_edge: VMs in the cloud region.")
    edge_uplink_mbps = param.Number(
        50.0, bounds=(1.0, 10000.0), step=5.0, doc="urban_sensing / faas_edge: uplink of a cell's devices, Mbit/s."
    )
    backbone_mbps = param.Number(
        1000.0, bounds=(10.0, 100000.0), step=100.0, doc="urban_sensing / faas_edge: backbone between cloudlets and the cloud, Mbit/s."
    )
    openb_nodes = param.Integer(
        0, bounds=(0, 1_000_000), doc="openb: nodes taken from the node list (0 = all), a seeded sample in file order."
    )
    openb_file = param.String(
        "openb_node_list_all_node.csv",
        doc="openb: the node list (CSV with columns sn, cpu_milli, memory_mib, gpu, model, by header), relative to data/clusters or absolute.",
    )
    openb_gpu_nodes_only = param.Boolean(
        False, doc="openb: keep only the nodes with at least one GPU (the FGD paper's cluster: 1,213 of the 1,523 nodes, 6,212 GPUs)."
    )
    kube_nodes_file = param.String(
        "kube-nodes-sample.json",
        doc="kube_nodes: a `kubectl get nodes -o json` dump, relative to data/clusters or absolute (capacities, labels, cordons and image caches come from it).",
    )
    kube_snapshot_nodes_file = param.String(
        "kube-snapshot/nodes.json",
        doc="kube_snapshot: a `kubectl get nodes -o json` dump, relative to data/clusters or absolute (nodes in name order, with their labels, taints, pod limits and image caches).",
    )
    kube_snapshot_pods_file = param.String(
        "kube-snapshot/pods.json",
        doc="kube_snapshot: a `kubectl get pods -A -o json` dump of the same cluster, relative to data/clusters or absolute (pods bound to a node and not finished take their requests there).",
    )
    prepull_cloud = param.Boolean(
        True,
        doc="Cloud nodes start with the worker image in their cache (not kube_nodes / kube_snapshot: the dump's status.images is the cache).",
    )
    prepull_fraction = param.Number(
        0.0,
        bounds=(0.0, 1.0),
        step=0.05,
        doc="Share of the other nodes that start with the worker image cached (not kube_nodes / kube_snapshot).",
    )
    worker_image = param.Selector(default="scalelab/worker:1.0", objects=list(IMAGE_CATALOGUE), doc="Image of a worker pod.")
    worker_cpu_millis = param.Integer(500, bounds=(1, 256000), doc="Worker pod cpu request, millicores.")
    worker_memory_mib = param.Integer(512, bounds=(1, 1048576), doc="Worker pod memory request, MiB.")
    worker_gpus = param.Number(
        0.0, bounds=(0.0, 8.0), step=0.05, doc="Worker pod GPU request: below 1 a share of one GPU device, else whole devices (1, 2, ...)."
    )
    worker_gpu_models = param.String("", doc="GPU models a worker accepts, separated by '|' (empty: any).")
    worker_capability = param.Selector(
        default="none", objects=["none", "nvidia-gpu"], doc="Capability label the worker prefers (Capability priority)."
    )
    worker_input_mib = param.Number(
        0.0, bounds=(0.0, 100000.0), step=10.0, doc="MiB each job reads from storage (0: no data; else data-locality label)."
    )

    def check(self) -> None:
        if self.topology == "cloud_regions" and self.nodes < self.regions:
            raise ParamError("cluster.nodes", f"{self.nodes} is below regions ({self.regions}); allowed: nodes >= regions")
        if self.topology in ("urban_sensing", "faas_edge") and self.cells * self.devices_per_cell + self.cloudlets + self.cloud_nodes < 1:
            raise ParamError("cluster.cloud_nodes", "the urban-sensing layout has no nodes; allowed: at least one node")
        try:
            gpu_request(self.worker_gpus)
        except ValueError:
            raise ParamError(
                "cluster.worker_gpus",
                f"{self.worker_gpus!r} is not allowed; allowed: below 1 (a share of one GPU) or a whole number of GPUs",
            ) from None
        if self.worker_gpu_models and self.worker_gpus <= 0:
            raise ParamError("cluster.worker_gpu_models", "set only with worker_gpus > 0; allowed: empty when no GPU is requested")

    def unread(self, named: set[str]) -> list[tuple[str, str]]:
        """Of the fields a scenario ``named``, those the chosen topology never reads (:data:`TOPOLOGY_FIELDS`)."""
        specific = {name for fields in TOPOLOGY_FIELDS.values() for name in fields}
        unread = sorted(named & specific - set(TOPOLOGY_FIELDS[self.topology]))
        return [
            (
                name,
                f"topology {self.topology} never reads it; allowed: remove it, or a topology that reads it "
                f"({', '.join(t for t, fields in TOPOLOGY_FIELDS.items() if name in fields)})",
            )
            for name in unread
        ]

    def worker_pod(self, name: str) -> Pod:
        """The worker pod this section describes (read at each placement, so live changes apply)."""
        labels: dict[str, str] = {}
        if self.worker_capability != "none":
            labels[f"{CAPABILITY}/{self.worker_capability}"] = "true"
        if self.worker_input_mib > 0:
            labels[RECEIVES_FROM] = WORKER_INPUT
        return Pod(
            name=name,
            containers=(Container(self.worker_image, self.worker_cpu_millis, self.worker_memory_mib * MiB),),
            labels=labels,
            gpus=self.worker_gpus,
            gpu_models=tuple(m for m in self.worker_gpu_models.split("|") if m),
        )
