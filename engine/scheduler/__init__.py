"""Pod placement: predicates, weighted priorities (Skippy's and kube's), two scoring modes; see :mod:`.core`."""

from engine.scheduler.core import PRIORITIES, Decision, PriorityResult, Scheduler, feasible_nodes_to_find
from engine.scheduler.params import PRESETS, PRIORITY_KEYS, SchedulerParams, weight_name

__all__ = [
    "PRESETS",
    "PRIORITIES",
    "PRIORITY_KEYS",
    "Decision",
    "PriorityResult",
    "Scheduler",
    "SchedulerParams",
    "feasible_nodes_to_find",
    "weight_name",
]
