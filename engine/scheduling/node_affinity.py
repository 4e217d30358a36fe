"""NodeAffinity: the pod's ``nodeSelector`` and its required node affinity, matched against node labels.

Both modes, as kube-scheduler's NodeAffinity filter: every ``nodeSelector`` label must be on the node with
that value, and when the pod has required node affinity (``requiredDuringSchedulingIgnoredDuringExecution``)
at least one of its terms must hold, a term holding when all its requirements do. Operators: In, NotIn
(also true when the label is missing), Exists, DoesNotExist, Gt and Lt (the label read as an integer; a
missing or non-integer label fails); ``matchFields`` on ``metadata.name`` with In / NotIn. A term without
requirements matches nothing. Preferred affinity only scores in Kubernetes and is not modelled. A pod
without either (every synthesized pod) passes every node.
"""

from __future__ import annotations

import numpy as np

from engine.cluster.constraints import NodeSelectorRequirement, NodeSelectorTerm
from engine.cluster.model import Cluster, Pod
from engine.scheduling.base import Predicate


def _label_integers(cluster: Cluster, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(value as int64, whether the node has an integer value) for label ``key``."""
    values = cluster.label_column(key, missing="")
    parsed = np.zeros(cluster.n, dtype=np.int64)
    valid = np.zeros(cluster.n, dtype=bool)
    for i, text in enumerate(values):
        try:
            parsed[i] = int(text)
            valid[i] = True
        except ValueError:
            pass
    return parsed, valid


def requirement_mask(cluster: Cluster, req: NodeSelectorRequirement) -> np.ndarray:
    """Nodes meeting one requirement of a node selector term."""
    if req.field:  # metadata.name
        names = np.asarray(cluster.names, dtype=object)
        inside = np.isin(names, list(req.values))
        return inside if req.operator == "In" else ~inside
    if req.operator in ("In", "NotIn"):
        inside = np.zeros(cluster.n, dtype=bool)
        for value in req.values:
            inside |= cluster.label_equals(req.key, value)
        return inside if req.operator == "In" else ~inside
    if req.operator == "Exists":
        return cluster.has_label(req.key).copy()
    if req.operator == "DoesNotExist":
        return ~cluster.has_label(req.key)
    bound = int(req.values[0])  # Gt / Lt: checked to be one integer when the pod was read
    parsed, valid = _label_integers(cluster, req.key)
    return valid & ((parsed > bound) if req.operator == "Gt" else (parsed < bound))


def term_mask(cluster: Cluster, term: NodeSelectorTerm) -> np.ndarray:
    """Nodes meeting every requirement of a term (none for an empty term)."""
    if not term.requirements:
        return np.zeros(cluster.n, dtype=bool)
    return np.logical_and.reduce([requirement_mask(cluster, r) for r in term.requirements])


class NodeAffinity(Predicate):
    """Pass mask: ``nodeSelector`` labels all present with their values, and some required affinity term holds."""

    name = "NodeAffinity"

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        if not pod.node_selector and not pod.node_affinity:
            return None
        # labels do not change while pods come and go: one mask per selector and affinity (a function's replicas share it)
        key = ("node_affinity", tuple(pod.node_selector.items()), pod.node_affinity)
        return cluster.label_mask(key, lambda: self._mask(cluster, pod))

    def _mask(self, cluster: Cluster, pod: Pod) -> np.ndarray:
        ok = np.ones(cluster.n, dtype=bool)
        for key, value in pod.node_selector.items():
            ok &= cluster.label_equals(key, value)
        if pod.node_affinity:
            ok &= np.logical_or.reduce([term_mask(cluster, term) for term in pod.node_affinity])
        return ok
