"""Kubernetes placement constraints as plain values: node taints, pod tolerations, node selector terms.

They follow the core/v1 API types (``Taint``, ``Toleration``, ``NodeSelectorRequirement``,
``NodeSelectorTerm``) and kube-scheduler's matching rules, so that a cluster imported from a real dump or
watched by the daemon filters pods as kube-scheduler would. Synthesized clusters have no taints and their
pods no selectors: the predicates built on these (:mod:`engine.scheduling.taint_toleration`,
:mod:`engine.scheduling.node_affinity`) then pass every node, which keeps Skippy mode identical to
edgerun-skippy-core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Taint effects that keep pods off a node (kube-scheduler's TaintToleration filter); PreferNoSchedule only scores.
HARD_EFFECTS = ("NoSchedule", "NoExecute")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")  # matchFields: only metadata.name, only these operators


@dataclass(frozen=True)
class Taint:
    """A node taint: ``key=value:effect``."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    @property
    def hard(self) -> bool:
        """True when the taint keeps intolerant pods off the node (NoSchedule, NoExecute)."""
        return self.effect in HARD_EFFECTS

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    """A pod toleration. An empty ``key`` with ``Exists`` tolerates every taint; an empty ``effect`` every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """kube's ``Toleration.ToleratesTaint``: effect and key match (when set), then Exists or an equal value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    """The hard taints (NoSchedule, NoExecute) none of ``tolerations`` tolerates."""
    return [t for t in taints if t.hard and not any(tol.tolerates(t) for tol in tolerations)]


def taint_groups(taints_per_node: Sequence[tuple[Taint, ...]]) -> list[tuple[tuple[Taint, ...], np.ndarray]]:
    """Nodes grouped by their hard taints (nodes without any are left out): [(taints, node positions), ...].

    Clusters have few distinct taint sets, so a pod's tolerations are checked once per set, not per node.
    """
    groups: dict[tuple[Taint, ...], list[int]] = {}
    for i, taints in enumerate(taints_per_node):
        hard = tuple(t for t in taints if t.hard)
        if hard:
            groups.setdefault(hard, []).append(i)
    return [(taints, np.array(nodes, dtype=np.int64)) for taints, nodes in groups.items()]


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One requirement of a node selector term: a label (or, for matchFields, ``metadata.name``) and an operator."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    field: bool = False  # a matchFields entry (the node's name) rather than a label


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Requirements that must all hold; a pod's required node affinity holds when any of its terms does.

    A term without requirements matches no node (as in Kubernetes).
    """

    requirements: tuple[NodeSelectorRequirement, ...]
