"""The scheduler's priorities, GPU policies and extra predicates, one registry line each.

Adding a priority: write its module (a :class:`~engine.scheduling.base.Priority` subclass with ``name``, ``key``
and ``raw``, maybe ``normalize``) and add one line to :data:`_BUILTIN_PRIORITIES`; its weight parameter
(``SchedulerParams.weight_<key>``) is generated from the line. A plugin (``engine.plugins.register_priority``, or
the entry-point group ``scalelab.scheduler_priorities``) is the same class with ``default_weight`` (0 if absent,
so an installed plugin changes no placement until weighted) and its docstring as the weight's doc.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from engine.core.plugins import PluginTable
from engine.scheduling.balanced import BalancedAllocation
from engine.scheduling.balanced_resource import BalancedResource
from engine.scheduling.base import Predicate, Priority
from engine.scheduling.best_fit import BestFitPolicy
from engine.scheduling.capability import Capability
from engine.scheduling.data_locality import DataLocality
from engine.scheduling.dot_product import DotProductPolicy
from engine.scheduling.fgd import FgdPolicy
from engine.scheduling.gpu_clustering import GpuClusteringPolicy
from engine.scheduling.gpu_packing import GpuPackingPolicy
from engine.scheduling.gpu_policy import GpuPolicy
from engine.scheduling.gpu_random import RandomPolicy
from engine.scheduling.image_locality import ImageLocality, LatencyAwareImageLocality
from engine.scheduling.least_allocated import LeastAllocated
from engine.scheduling.locality_type import LocalityType


@dataclass(frozen=True)
class PriorityRow:
    """One priority: the scoring object, its default weight and the doc of its weight parameter."""

    priority: Priority
    default_weight: float
    doc: str


#: Every built-in priority by key, in the order the weighted sum adds them (Skippy's default order first, as its
#: float sums require). One line per priority.
_BUILTIN_PRIORITIES: dict[str, PriorityRow] = {
    "balanced_resource": PriorityRow(
        BalancedResource(),
        1.0,
        "Skippy BalancedResource: prefer nodes where the pod's cpu and memory shares of the remaining capacity are alike.",
    ),
    "latency_aware_image_locality": PriorityRow(
        LatencyAwareImageLocality(), 1.0, "Skippy LatencyAwareImageLocality: prefer nodes that can pull the missing images fastest."
    ),
    "locality_type": PriorityRow(LocalityType(), 1.0, "Skippy LocalityType: prefer edge nodes (locality.skippy.io/type=edge)."),
    "data_locality": PriorityRow(
        DataLocality(), 1.0, "Skippy DataLocality: prefer nodes with fast links to the storage nodes holding the pod's data."
    ),
    "capability": PriorityRow(Capability(), 1.0, "Skippy Capability: prefer nodes offering the capabilities the pod's labels ask for."),
    "image_locality": PriorityRow(
        ImageLocality(), 0.0, "Kubernetes ImageLocality: prefer nodes already holding the images, scaled by how widely they are spread."
    ),
    "balanced_allocation": PriorityRow(
        BalancedAllocation(), 0.0, "Kubernetes NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay balanced."
    ),
    "least_allocated": PriorityRow(
        LeastAllocated(), 0.0, "Kubernetes NodeResourcesFit (LeastAllocated): prefer the emptiest nodes, spreading load."
    ),
}


def _check_priority(plugin: type) -> str | None:
    if not (isinstance(plugin, type) and issubclass(plugin, Priority)):
        return "must subclass engine.plugins.Priority"
    if not isinstance(getattr(plugin, "key", None), str) or not plugin.key.isidentifier():
        return "needs a class attribute 'key', a Python identifier (its weight is weight_<key>)"
    if plugin.raw is Priority.raw:
        return "missing method raw"
    return None


def _adapt_priority(plugin: type) -> tuple[str, PriorityRow]:
    doc = (plugin.__doc__ or plugin.name).strip().splitlines()[0]
    return plugin.key, PriorityRow(plugin(), float(getattr(plugin, "default_weight", 0.0)), doc)


#: Every priority by key: the built-ins, then plugins, in weighted-sum order.
PRIORITY_TABLE: PluginTable[PriorityRow] = PluginTable("scheduler_priorities", _BUILTIN_PRIORITIES, _adapt_priority, _check_priority)
#: The built-in priorities, in weighted-sum order.
PRIORITIES: tuple[Priority, ...] = tuple(row.priority for row in _BUILTIN_PRIORITIES.values())


def all_priorities() -> tuple[Priority, ...]:
    """The built-in priorities and every registered plugin, in weighted-sum order."""
    return tuple(row.priority for row in PRIORITY_TABLE.values())


class PriorityWeights(Mapping[str, str]):
    """The ``SchedulerParams`` weight of each priority by the name the ``breakdowns`` table gives it, plugins included
    (a view re-scores a recorded decision with new weights through it)."""

    def __getitem__(self, name: str) -> str:
        for key, row in PRIORITY_TABLE.items():
            if row.priority.name == name:
                return f"weight_{key}"
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([row.priority.name for row in PRIORITY_TABLE.values()])

    def __len__(self) -> int:
        return len(PRIORITY_TABLE)


def _check_gpu_policy(plugin: type) -> str | None:
    if not (isinstance(plugin, type) and issubclass(plugin, GpuPolicy)):
        return "must subclass engine.plugins.GpuPolicy"
    return None if plugin.score is not GpuPolicy.score else "missing method score"


#: The FGD paper's policies by the name ``SchedulerParams.gpu_policy`` gives them, then plugins.
GPU_POLICIES: PluginTable[type[GpuPolicy]] = PluginTable(
    "gpu_policies",
    {cls.name: cls for cls in (RandomPolicy, DotProductPolicy, GpuClusteringPolicy, GpuPackingPolicy, BestFitPolicy, FgdPolicy)},
    check=_check_gpu_policy,
)


def _check_predicate(plugin: type) -> str | None:
    if not (isinstance(plugin, type) and issubclass(plugin, Predicate)):
        return "must subclass engine.plugins.Predicate"
    return None if plugin.mask is not Predicate.mask else "missing method mask"


#: Predicates added to the built-in filters (which stay as they are): each is used when ``scheduler.extra_predicates``
#: names it, after the built-ins, so an installed one filters nothing until chosen.
PREDICATE_TABLE: PluginTable[type[Predicate]] = PluginTable("scheduler_predicates", {}, check=_check_predicate)
