"""The scheduler's tunables: scoring mode, one weight per priority (generated from the priority table), sampling and the
simulated cost model."""

from __future__ import annotations

import param

from engine.core.params import ParamError, Section
from engine.core.plugins import extend_selector
from engine.scheduling.priorities import GPU_POLICIES as GPU_POLICY_TABLE
from engine.scheduling.priorities import PREDICATE_TABLE, PRIORITY_TABLE, PriorityRow

SKIPPY_PRIORITIES = ("balanced_resource", "latency_aware_image_locality", "locality_type", "data_locality", "capability")
KUBE_PRIORITIES = ("image_locality", "balanced_allocation", "least_allocated")
#: Built-in priority keys in the order the weighted sum adds them (Skippy's order first, as its float sums require).
PRIORITY_KEYS = PRIORITY_TABLE.builtins

PRESETS: dict[str, dict[str, float]] = {
    "skippy default": {k: (1.0 if k in SKIPPY_PRIORITIES else 0.0) for k in PRIORITY_KEYS},
    "kube default": {k: (1.0 if k in KUBE_PRIORITIES else 0.0) for k in PRIORITY_KEYS},
}


#: The FGD paper's policies (``engine.scheduling.gpu_policy``), each scoring alone in place of the weighted priorities.
GPU_POLICIES = GPU_POLICY_TABLE.builtins


def weight_name(priority_key: str) -> str:
    """Name of the SchedulerParams parameter holding a priority's weight."""
    return f"weight_{priority_key}"


def _weight(row: PriorityRow) -> param.Number:
    """A priority's weight: up to 100, the slider spanning 0-10 (a typed value goes beyond)."""
    label = f"{row.priority.name} weight"
    return param.Number(row.default_weight, bounds=(0.0, 100.0), softbounds=(0.0, 10.0), step=0.5, label=label, doc=row.doc)


class SchedulerParams(Section):
    """Where worker pods go: predicates, then weighted priorities, then the best node."""

    key = "scheduler"

    mode = param.Selector(
        default="skippy",
        objects=["skippy", "kube"],
        label="Scoring mode",
        doc="Scoring rules: 'skippy' reproduces edgerun-skippy-core 0.1.1 (0-10 scale); 'kube' follows current kube-scheduler (0-100).",
    )
    # one weight per priority of the table, generated here so they follow the mode as before (a class body's namespace
    # is a plain dict); a plugin's weight is added when it is registered
    locals().update({weight_name(key): _weight(row) for key, row in PRIORITY_TABLE.builtin_entries().items()})
    percentage_of_nodes_to_score = param.Integer(
        100,
        bounds=(0, 100),
        label="Nodes to score (%)",
        doc="Stop filtering after this share of the nodes passed (0: adaptive, 50% minus 1% per 125 nodes, at least 5%; never fewer than 100 nodes).",
    )
    avoid_storage_nodes = param.Boolean(
        True, label="Avoid storage nodes", doc="Never place pods on storage nodes (Skippy's default label-absence predicate)."
    )
    schedule_fixed_cost = param.Number(
        0.005,
        bounds=(0.0, 60.0),
        step=0.001,
        label="Decision cost (simulated s)",
        softbounds=(0, 1),
        doc="Simulated seconds one scheduling decision costs, whatever the cluster size.",
    )
    schedule_cost_per_node = param.Number(
        1e-5,
        bounds=(0.0, 1.0),
        step=1e-5,
        label="Cost per node scored (simulated s)",
        softbounds=(0, 0.001),
        doc="Simulated seconds added per node scored.",
    )
    gpu_policy = param.Selector(
        default="weighted",
        label="GPU policy",
        objects=["weighted", *GPU_POLICIES],
        doc="weighted: the mode's weighted priorities above. Otherwise one GPU-sharing policy of the FGD paper (Weng et al., "
        "ATC 2023) scores the feasible nodes alone, 0-100, and picks the devices: Random, DotProd, GpuClustering, "
        "GpuPacking, BestFit or FGD (least growth of GPU fragmentation).",
    )
    tie_break = param.Selector(
        default="node_order",
        label="GPU policy ties",
        objects=["node_order", "random"],
        doc="GPU policies, nodes with the best score: node_order takes the first in a fixed seeded node order (the FGD "
        "artifact: smallest name, names with a random prefix); random takes a random one for each pod (stock kube-scheduler).",
    )
    fgd_score = param.Selector(
        default="artifact",
        label="FGD score",
        objects=["artifact", "exact"],
        doc="FGD's score: artifact is int(100*sigmoid(change/1000 milli-GPU)), about 40 milli-GPU per step near 0, so "
        "near-equal nodes tie; exact scores the fragmentation change itself.",
    )

    kube_version = param.Selector(
        default="current",
        objects=["current", "v1.20"],
        label="Kubernetes version (kube mode)",
        doc="Kube mode's scoring profile: 'current' scores with the weight_* parameters (current kube-scheduler formulas, "
        "BalancedAllocation on the change in balance, v1.36); "
        "'v1.20' is kube-scheduler v1.20.2's default profile (its plugins, weights and formulas; the weight_* parameters unused). "
        "Recorded in the placements table's mode column (kube-v1.20).",
    )

    extra_predicates = param.List(
        default=[],
        item_type=str,
        label="Extra filters",
        doc="Plugin predicates to filter with, after the built-in ones (engine.plugins.register_predicate); none by default.",
    )

    @classmethod
    def preset(cls, name: str) -> dict[str, float]:
        """Weights of a preset ('skippy default' or 'kube default') keyed by parameter name."""
        if name not in PRESETS:
            raise ParamError("scheduler.preset", f"{name!r} is not allowed; allowed: {', '.join(map(repr, PRESETS))}")
        return {weight_name(k): PRESETS[name].get(k, 0.0) for k in PRIORITY_TABLE}  # plugins' weights to 0

    def apply_preset(self, name: str) -> None:
        """Set every weight to a preset's value."""
        self.param.update(**self.preset(name))

    def weights(self) -> dict[str, float]:
        """Current weights keyed by priority key (the built-ins and every registered plugin)."""
        return {k: getattr(self, weight_name(k)) for k in PRIORITY_TABLE if weight_name(k) in self.param}

    def check(self) -> None:
        for i, name in enumerate(self.extra_predicates):
            if name not in PREDICATE_TABLE:
                allowed = ", ".join(PREDICATE_TABLE) or "none registered (engine.plugins.register_predicate)"
                raise ParamError(f"scheduler.extra_predicates[{i}]", f"{name!r} is not a predicate; allowed: {allowed}")


def _add_weight(key: str, row: PriorityRow) -> None:
    if weight_name(key) not in SchedulerParams.param:
        SchedulerParams.param.add_parameter(weight_name(key), _weight(row))


PRIORITY_TABLE.on_register(lambda key, plugin: _add_weight(key, PRIORITY_TABLE[key]))
GPU_POLICY_TABLE.on_register(lambda name, plugin: extend_selector(SchedulerParams, "gpu_policy", name))
