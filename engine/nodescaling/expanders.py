"""Expanders: which node group a scale-up grows, among those whose new nodes would take some pending pod.

Each expander keeps the best options by its own measure; ties among them are broken at random (seeded), as
cluster-autoscaler falls back to ``random``. One small function per expander; the table :data:`EXPANDERS`
names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

TOLERANCE = 1e-9


@dataclass(frozen=True)
class Option:
    """Growing one group: by how many nodes, what it helps and what it costs."""

    group: int
    name: str
    count: int
    helped: int  # pending pods the new nodes would take
    cpu_waste: float  # share of the new nodes' cpu left idle
    memory_waste: float
    price_per_hour: float  # of one node
    priority: int

    @property
    def waste(self) -> float:
        return self.cpu_waste + self.memory_waste

    @property
    def price_per_pod(self) -> float:
        return self.count * self.price_per_hour / max(self.helped, 1)


def _best(options: Sequence[Option], score: Callable[[Option], float]) -> list[Option]:
    """The options with the lowest score (within a tolerance)."""
    low = min(score(o) for o in options)
    return [o for o in options if score(o) <= low + TOLERANCE]


def random_expander(options: Sequence[Option]) -> list[Option]:
    """Every option is as good as another."""
    return list(options)


def least_waste(options: Sequence[Option]) -> list[Option]:
    """Least idle cpu and memory (shares summed) on the new nodes once the pods they help are on them."""
    return _best(options, lambda o: o.waste)


def price(options: Sequence[Option]) -> list[Option]:
    """Cheapest per pending pod helped (the new nodes' hourly price over the pods they take)."""
    return _best(options, lambda o: o.price_per_pod)


def priority(options: Sequence[Option]) -> list[Option]:
    """The groups of the highest priority."""
    return _best(options, lambda o: -o.priority)


def most_pods(options: Sequence[Option]) -> list[Option]:
    """The groups that would take the most pending pods."""
    return _best(options, lambda o: -o.helped)


EXPANDERS: dict[str, Callable[[Sequence[Option]], list[Option]]] = {
    "random": random_expander,
    "least-waste": least_waste,
    "price": price,
    "priority": priority,
    "most-pods": most_pods,
}


def choose(expander: str, options: Sequence[Option], rng: np.random.Generator) -> tuple[Option, int]:
    """The option ``expander`` picks, and how many were tied for it (a draw from ``rng`` only breaks a tie)."""
    best = EXPANDERS[expander](options)
    if len(best) == 1:
        return best[0], 1
    return best[int(rng.integers(len(best)))], len(best)
