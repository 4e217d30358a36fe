"""Pod placement: predicates, weighted priorities (Skippy's and kube's), two scoring modes; see :mod:`.framework`.

One module per plugin (kube-scheduler style); the weighted loop lives in :mod:`.framework`; the
:class:`~engine.scheduling.service.PlacementService` places the platforms' pods and owns image state.
"""

from engine.scheduling.framework import PRIORITIES, PlacementDecision, PriorityResult, Scheduler, feasible_nodes_to_find
from engine.scheduling.params import PRESETS, PRIORITY_KEYS, SchedulerParams, weight_name

__all__ = [
    "PRESETS",
    "PRIORITIES",
    "PRIORITY_KEYS",
    "PlacementDecision",
    "PriorityResult",
    "Scheduler",
    "SchedulerParams",
    "feasible_nodes_to_find",
    "weight_name",
]
