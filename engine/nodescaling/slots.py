"""The node group slots' keys (``ng1`` .. ``ng4``): what the simulation's section table needs of the node autoscaler
without loading it (the slots' param classes are built in :mod:`engine.nodescaling.params` when first asked for)."""

from __future__ import annotations

#: How many node groups a scenario may declare, one slot section each.
MAX_GROUPS = 4

#: The slots' section keys, in order.
GROUP_KEYS: tuple[str, ...] = tuple(f"ng{i}" for i in range(1, MAX_GROUPS + 1))

#: A group's parameters that are fixed for a run (its nodes are made with the cluster, with these labels and devices,
#: and its initial nodes are up at time 0); the others may change live (docs/how-to/node-autoscaling.md).
FIXED_GROUP_PARAMS: tuple[str, ...] = ("group", "instance_type", "gpus", "gpu_model", "arch", "initial_size")

#: ``section.name`` of every fixed group parameter, for the world table's ``fixed`` column.
FIXED_GROUP_KEYS: tuple[str, ...] = tuple(f"{key}.{name}" for key in GROUP_KEYS for name in FIXED_GROUP_PARAMS)
