"""The node group slots' keys (``ng1`` .. ``ng4``): what the simulation's section table needs of the node autoscaler
without loading it (the slots' param classes are built in :mod:`engine.nodescaling.params` when first asked for)."""

from __future__ import annotations

#: How many node groups a scenario may declare, one slot section each.
MAX_GROUPS = 4

#: The slots' section keys, in order.
GROUP_KEYS: tuple[str, ...] = tuple(f"ng{i}" for i in range(1, MAX_GROUPS + 1))
