"""The node autoscaler's sections: the autoscaler itself (``node_autoscaler``) and one section per node group
(``ng1`` .. ``ng4``).

A node group is an instance type (cpu, memory, GPUs and their model, an hourly price) with a size range and a
boot time drawn from a stated distribution. The autoscaler's settings may change live and apply at its next scan;
so may a group's size range, price, boot time and cpu and memory (for the nodes launched after the change), while
its name, instance type, GPUs, arch and initial size are fixed for a run (``slots.FIXED_GROUP_PARAMS``: its nodes
are made with the cluster).
"""

from __future__ import annotations

import param

from engine.core.params import ParamError, Section
from engine.nodescaling.slots import GROUP_KEYS, MAX_GROUPS  # noqa: F401 (MAX_GROUPS: re-exported, its home was here)

#: How long a node takes from launch to ready: the distribution of the draw (mean ``boot_seconds``).
BOOT_DISTRIBUTIONS = {
    "fixed": "always boot_seconds",
    "uniform": "uniform on boot_seconds +- boot_spread",
    "normal": "normal with mean boot_seconds and standard deviation boot_spread, cut at 0",
    "lognormal": "lognormal with mean boot_seconds and sigma boot_spread of its log",
}
MODES = {
    "cluster_autoscaler": "Kubernetes cluster-autoscaler: scale up by an expander, scale down under-used nodes after the unneeded time",
    "consolidation": "Karpenter-style: scale up with the cheapest fitting group, consolidate (delete or replace with a cheaper node)",
}


class NodeAutoscalerParams(Section):
    """The node autoscaler: how often it looks, how it scales up and when it removes nodes."""

    key = "node_autoscaler"

    enabled = param.Boolean(True, doc="Run the node autoscaler (off: the groups keep their initial size).")
    mode = param.Selector(default="cluster_autoscaler", objects=list(MODES), doc="; ".join(f"{k}: {v}" for k, v in MODES.items()) + ".")
    scan_interval = param.Number(
        10.0, bounds=(1.0, 3600.0), step=1.0, doc="Seconds between two scans (cluster-autoscaler's --scan-interval)."
    )
    expander = param.Selector(
        default="random",
        objects=["random", "least-waste", "price", "priority", "most-pods"],
        doc="cluster_autoscaler: how a scale-up picks among the groups that help (random; least-waste: least idle cpu and memory "
        "on the new nodes; price: cheapest per pod helped; priority: the group's priority, highest wins; most-pods: helps most pods). "
        "Ties are broken at random.",
    )
    scale_down = param.Boolean(True, doc="cluster_autoscaler: remove unneeded nodes (--scale-down-enabled).")
    utilization_threshold = param.Number(
        0.5,
        bounds=(0.0, 1.0),
        step=0.05,
        doc="cluster_autoscaler: a node whose requested share (max of cpu and memory; GPU nodes: GPU) is below this is a scale-down "
        "candidate (--scale-down-utilization-threshold).",
    )
    unneeded_time = param.Number(
        600.0,
        bounds=(0.0, 86400.0),
        step=30.0,
        doc="cluster_autoscaler: seconds a node must stay unneeded before it is removed (--scale-down-unneeded-time).",
    )
    delay_after_add = param.Number(
        600.0,
        bounds=(0.0, 86400.0),
        step=30.0,
        doc="cluster_autoscaler: seconds after a scale-up before scale-down is evaluated again (--scale-down-delay-after-add).",
    )
    max_empty_bulk_delete = param.Integer(
        10, bounds=(1, 1000), doc="cluster_autoscaler: empty nodes removed at once in one scan (--max-empty-bulk-delete)."
    )
    max_drain_parallelism = param.Integer(1, bounds=(1, 100), doc="Non-empty nodes drained at once (Karpenter: its disruption budget).")
    max_nodes_total = param.Integer(0, bounds=(0, 100000), doc="Nodes of all groups together at most (0: no limit; --max-nodes-total).")
    consolidate_after = param.Number(
        30.0,
        bounds=(0.0, 86400.0),
        step=10.0,
        doc="consolidation: seconds without a pod arriving on or leaving a node before it may be consolidated (consolidateAfter).",
    )
    consolidation_replace = param.Boolean(
        True, doc="consolidation: also replace a node by one cheaper node that takes its pods (else delete only)."
    )


class NodeGroupParams(Section):
    """One node group: its instance type, price, size range and boot time."""

    key = "ng"

    group = param.String("general", doc="The group's name (node names are <group>-<n>; unique among the groups).")
    instance_type = param.String("m5.xlarge", doc="The instance type's name (the nodes' node_class label).")
    cpu_millis = param.Integer(
        4000, bounds=(1, 1_000_000), doc="Allocatable cpu of one node, millicores (live: of the nodes launched after)."
    )
    memory_mib = param.Integer(
        16384, bounds=(1, 16_777_216), doc="Allocatable memory of one node, MiB (live: of the nodes launched after)."
    )
    gpus = param.Integer(0, bounds=(0, 16), doc="GPU devices of one node.")
    gpu_model = param.String("", doc="The GPU model (nvidia.com/gpu.product label; empty without GPUs).")
    arch = param.Selector(default="amd64", objects=["amd64", "arm64"], doc="CPU architecture (beta.kubernetes.io/arch).")
    price_per_hour = param.Number(
        0.192,
        bounds=(0.0, 1000.0),
        step=0.01,
        doc="What one node costs per hour it exists (launch to removal); live: the hours from then on.",
    )
    min_size = param.Integer(
        0, bounds=(0, 1000), doc="Nodes the autoscaler never scales down below (raised live above the size: no node is added for it)."
    )
    max_size = param.Integer(
        10,
        bounds=(0, 1000),
        doc="Nodes the autoscaler never scales up above (the group's nodes are made once, with the run: live, at most the "
        "scenario's value; lowered below the group's size, nodes go only as scale-down allows).",
    )
    initial_size = param.Integer(0, bounds=(0, 1000), doc="Nodes ready at time 0 (raised to min_size, capped at max_size).")
    priority = param.Integer(0, bounds=(-1000, 1000), doc="priority expander: higher is preferred.")
    boot_distribution = param.Selector(
        default="lognormal", objects=list(BOOT_DISTRIBUTIONS), doc="; ".join(f"{k}: {v}" for k, v in BOOT_DISTRIBUTIONS.items()) + "."
    )
    boot_seconds = param.Number(90.0, bounds=(0.0, 3600.0), step=5.0, doc="Mean seconds from launch to a ready node.")
    boot_spread = param.Number(
        0.2, bounds=(0.0, 3600.0), step=0.05, doc="uniform: half width (s); normal: sd (s); lognormal: sigma of the log."
    )

    def check(self) -> None:
        key = type(self).key
        if not self.group.strip() or not self.group.replace("-", "").isalnum():
            raise ParamError(f"{key}.group", f"{self.group!r}; allowed: letters, digits and '-'")
        if self.min_size > self.max_size:
            raise ParamError(f"{key}.min_size", f"{self.min_size} is above max_size ({self.max_size}); allowed: min_size <= max_size")
        if self.gpu_model and self.gpus == 0:
            raise ParamError(f"{key}.gpu_model", "set only with gpus > 0; allowed: empty when the nodes have no GPU")
        if self.boot_distribution == "lognormal" and self.boot_spread > 5:
            raise ParamError(f"{key}.boot_spread", f"{self.boot_spread} is the sigma of a log; allowed: at most 5 for lognormal")


GROUP_SLOTS: dict[str, type[NodeGroupParams]] = {
    key: type(f"NodeGroup{i}Params", (NodeGroupParams,), {"key": key, "__doc__": f"Node group slot {i}."})
    for i, key in enumerate(GROUP_KEYS, start=1)
}
