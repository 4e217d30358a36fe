"""The node autoscaler's tables, declared once: the groups' nodes over time, and every decision with why."""

from __future__ import annotations

from engine.core.recorder import table

NODES_BY_GROUP = table(
    "nodes_by_group",
    "The node groups over time: one row per group every run.sample_interval (nodes by state, requests, cost so far).",
    [
        ("time", "float64", "simulated seconds"),
        ("group", "string", "node group"),
        ("instance_type", "string", "the group's instance type"),
        ("booting", "int64", "nodes launched and not ready yet"),
        ("ready", "int64", "nodes taking pods"),
        ("draining", "int64", "nodes cordoned, their pods leaving"),
        ("nodes", "int64", "nodes billed now (booting + ready + draining)"),
        ("min_size", "int64", "the group's min_size"),
        ("max_size", "int64", "the group's max_size"),
        ("cpu_requested", "float64", "share of the ready nodes' cpu the pods on them request (NaN: no ready node)"),
        ("memory_requested", "float64", "share of the ready nodes' memory the pods on them request (NaN: no ready node)"),
        ("pending_pods", "int64", "pods waiting for a node now, cluster-wide (the same on every group's row)"),
        ("node_hours", "float64", "node-hours billed so far (launch to removal)"),
        ("cost", "float64", "money billed so far: each node-hour at the group's price_per_hour in force then"),
    ],
)

NODE_DECISIONS = table(
    "node_decisions",
    "One row per thing the node autoscaler decided or a node did (scale up, scale down, consolidate, ready, removed), and per live change of a group.",
    [
        ("time", "float64", "simulated seconds"),
        ("mode", "string", "cluster_autoscaler | consolidation"),
        (
            "rule",
            "string",
            "initial | scale_up | no_scale_up | scale_down | scale_down_empty | consolidate_empty | consolidate_delete | "
            "consolidate_replace | consolidate_replace_drain | node_ready | node_removed | group_changed (a live change of the "
            "group's parameters)",
        ),
        ("group", "string", "node group ('' when none)"),
        ("count", "int64", "nodes launched, cordoned, ready or removed"),
        ("nodes", "string", "their names, comma separated"),
        ("pods", "int64", "pods pending (scale-up) or moved off the node (scale-down), else 0"),
        ("why", "string", "the reason in words"),
    ],
)

TABLES = (NODES_BY_GROUP, NODE_DECISIONS)
