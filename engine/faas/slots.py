"""The function slots' keys (``fn1`` .. ``fn6``): what the simulation's section table needs of the function world
without loading it (the slots' param classes are built in :mod:`engine.faas.params` when first asked for)."""

from __future__ import annotations

#: How many functions a scenario of the function world may deploy, one slot section each.
MAX_FUNCTIONS = 6

#: The slots' section keys, in order.
SLOT_KEYS: tuple[str, ...] = tuple(f"fn{i}" for i in range(1, MAX_FUNCTIONS + 1))
