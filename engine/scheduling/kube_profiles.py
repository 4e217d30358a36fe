"""Kubernetes-version profiles for kube mode: which score plugins run, with which weights and formulas.

``SchedulerParams.kube_version`` picks one (kube mode only; Skippy mode never reads it):

* ``current``: scoring with the weights the ``weight_*`` parameters give and current kube-scheduler's formulas
  (:mod:`engine.scheduling.balanced` and friends; BalancedAllocation scores the change in balance the pod causes,
  kubernetes PR #135573, v1.36).
* ``v1.20``: kube-scheduler v1.20.2's default profile (``pkg/scheduler/algorithmprovider/registry.go``
  ``getDefaultConfig``), the weights fixed by it and the ``weight_*`` parameters unused. Modelled plugins:
  NodeResourcesBalancedAllocation (v1.20: fractions of allocatable incl. the pod; 0 when either reaches 1; else
  ``int((1 - |cpu - mem|) * 100)``), ImageLocality (as current: sum clamped to [23 MiB, 1000 MiB x containers]),
  NodeResourcesLeastAllocated (as current), TaintToleration (intolerable PreferNoSchedule taints counted,
  DefaultNormalizeScore reversed). Not modelled, listed in :attr:`KubeProfile.constant`: plugins that give every
  node the same score unless the pod or the nodes use what they read (preferred node affinity, pod
  (anti-)affinity, topology spread constraints or controller-owned pods, the ``preferAvoidPods`` annotation);
  they move every total by the same amount, so the chosen node is the same.

Also not modelled in either profile: kube-scheduler's default requests for containers that request nothing
(100m cpu, 200 MB memory, which only its scores count).

The profiles are data: :data:`KUBE_PROFILES` maps a version to its plugins and weights; adding a version is a
row here and one value in ``SchedulerParams.kube_version``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.scheduling.base import Priority, ScoringContext, kube_default_normalize, trunc
from engine.scheduling.image_locality import ImageLocality
from engine.scheduling.least_allocated import LeastAllocated


def _fraction(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """v1.20 ``fractionOfCapacity``: requested / capacity, 1 when the capacity is 0."""
    return np.where(capacity == 0, 1.0, requested / np.where(capacity == 0, 1, capacity))


class BalancedAllocationV120(Priority):
    """NodeResourcesBalancedAllocation as in kube-scheduler v1.20: 0 when cpu or memory would be full, else
    ``int((1 - |cpu fraction - memory fraction|) * 100)`` (fractions of allocatable, the pod included)."""

    name = "BalancedAllocation"
    key = "balanced_allocation"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
        cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
        cpu = _fraction(cpu_cap - c.cpu_free[nodes] + pod.cpu_millis, cpu_cap)
        mem = _fraction(mem_cap - c.memory_free[nodes] + pod.memory, mem_cap)
        score = trunc((1 - np.abs(cpu - mem)) * ctx.max_score)
        score[(cpu >= 1) | (mem >= 1)] = 0
        return score


class TaintTolerationScore(Priority):
    """TaintToleration's score: the node's PreferNoSchedule taints the pod does not tolerate (tolerations with that
    effect or none), fewer is better (DefaultNormalizeScore reversed: 100 when no scored node has one)."""

    name = "TaintToleration"
    key = "taint_toleration"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        tolerations = [t for t in ctx.pod.tolerations if t.effect in ("", "PreferNoSchedule")]
        taints = ctx.cluster.taints
        count = ctx.zeros()
        for k, node in enumerate(ctx.nodes):
            soft = [t for t in taints[int(node)] if t.effect == "PreferNoSchedule"]
            count[k] = sum(1 for t in soft if not any(tol.tolerates(t) for tol in tolerations))
        return count

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        return kube_default_normalize(raw, reverse=True)


@dataclass(frozen=True)
class KubeProfile:
    """One Kubernetes version's default scoring: (priority, weight) in the order the sum adds them, and the
    default plugins left out because they score every node alike on what the project models (name: weight)."""

    version: str
    plugins: tuple[tuple[Priority, float], ...]
    constant: tuple[tuple[str, float], ...] = ()


#: Version -> profile. ``current`` has no plugins of its own: the ``weight_*`` parameters choose them.
KUBE_PROFILES: dict[str, KubeProfile] = {
    "current": KubeProfile("current", ()),
    "v1.20": KubeProfile(
        "v1.20",
        (
            (BalancedAllocationV120(), 1.0),
            (ImageLocality(), 1.0),
            (LeastAllocated(), 1.0),
            (TaintTolerationScore(), 1.0),
        ),
        constant=(("InterPodAffinity", 1.0), ("NodeAffinity", 1.0), ("NodePreferAvoidPods", 10000.0), ("PodTopologySpread", 2.0)),
    ),
}


#: kube-scheduler's plugin name of each modelled priority (its logs and configuration name them so).
KUBE_PLUGIN_NAMES = {
    "BalancedAllocation": "NodeResourcesBalancedAllocation",
    "ImageLocality": "ImageLocality",
    "LeastAllocated": "NodeResourcesLeastAllocated",
    "TaintToleration": "TaintToleration",
}


def profile_scoring(version: str, priorities: Sequence[Priority], weights: list[float]) -> tuple[tuple[Priority, ...], list[float]]:
    """The priorities and weights kube mode scores with under ``version``: the given ones for ``current``, else the
    profile's own."""
    profile = KUBE_PROFILES[version]
    if not profile.plugins:
        return tuple(priorities), weights
    return tuple(p for p, _ in profile.plugins), [w for _, w in profile.plugins]


def mode_label(mode: str, version: str) -> str:
    """What placement tables record as the mode: ``skippy``, ``kube`` (current) or ``kube-v1.20``."""
    return mode if mode != "kube" or version == "current" else f"kube-{version}"
