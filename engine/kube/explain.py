"""A placement decision in words: why nodes were rejected, the winner's score and runner-up, the full breakdown.

Used for the daemon's Events (``Scheduled``, ``FailedScheduling``) and logs, and for plan mode's table and
``--explain``. Reasons follow kube-scheduler's wording ("0/5 nodes are available: 2 Insufficient cpu, ...")
with the project's predicate name in brackets, so they can be looked up in :mod:`engine.scheduling`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from engine.scheduling.framework import PlacementDecision

#: How kube-scheduler words each predicate's rejection (the predicate names are the project's).
REASON_TEXT = {
    "NodeUnschedulable": "node(s) were unschedulable",
    "TaintToleration": "node(s) had untolerated taint(s)",
    "NodeAffinity": "node(s) didn't match Pod's node affinity/selector",
    "PodFitsResources": "Insufficient cpu, memory or GPUs",
    "PodCapacity": "Too many pods",
    "NoStorageNode": "node(s) are storage nodes",
    "GpuModel": "node(s) had none of the GPU models the pod accepts",
    "PodNodeLabels": "node(s) didn't have the labels the pod asks for",
    "not scored": "node(s) feasible but not scored (percentage_of_nodes_to_score)",
}


#: The same, short, for plan mode's table.
REASON_SHORT = {
    "NodeUnschedulable": "unschedulable",
    "TaintToleration": "untolerated taint",
    "NodeAffinity": "affinity/selector mismatch",
    "PodFitsResources": "insufficient cpu/memory/GPU",
    "PodCapacity": "too many pods",
    "NoStorageNode": "storage node",
    "GpuModel": "no accepted GPU model",
    "PodNodeLabels": "missing labels",
    "not scored": "not scored",
}


def rejections(decision: PlacementDecision) -> Counter:
    """Rejected (or unscored) nodes per reason."""
    _, reason = decision.reasons()
    return Counter(r for r in reason if r)


def rejection_summary(decision: PlacementDecision, short: bool = False) -> str:
    """``"3 Insufficient cpu, memory or GPUs (PodFitsResources), 1 node(s) were unschedulable (NodeUnschedulable)"``,
    most frequent first; ``short``: ``"3 insufficient cpu/memory/GPU, 1 unschedulable"``."""
    ranked = sorted(rejections(decision).items(), key=lambda kv: (-kv[1], kv[0]))
    if short:
        return ", ".join(f"{count} {REASON_SHORT.get(name, name)}" for name, count in ranked)
    return ", ".join(f"{count} {REASON_TEXT.get(name, name)} ({name})" for name, count in ranked)


def failure_message(decision: PlacementDecision) -> str:
    """kube-scheduler's FailedScheduling message: ``"0/7 nodes are available: ..."``."""
    summary = rejection_summary(decision)
    return f"0/{len(decision.node_names)} nodes are available: {summary or 'no nodes'}."


def ranking(decision: PlacementDecision) -> list[tuple[str, float]]:
    """The scored nodes, best first (ties keep scan order, so the winner comes first)."""
    order = np.argsort(-decision.total, kind="stable")
    return [(decision.node_names[int(decision.nodes[i])], float(decision.total[i])) for i in order]


def runner_up(decision: PlacementDecision) -> tuple[str, float] | None:
    """The best scored node after the chosen one, with its score (None when only one node was scored); ties go to the
    first in scan order, as in :func:`ranking` (found without sorting: the daemon asks for it at every binding)."""
    others = np.flatnonzero(decision.nodes != decision.node) if decision.node is not None else np.arange(len(decision.nodes))
    if not len(others):
        return None
    best = int(others[int(np.argmax(decision.total[others]))])
    return decision.node_names[int(decision.nodes[best])], float(decision.total[best])


def winner_scores(decision: PlacementDecision) -> list[tuple[str, float]]:
    """The chosen node's weighted score per priority with a non-zero weight."""
    if decision.node is None:
        return []
    pick = int(np.flatnonzero(decision.nodes == decision.node)[0])
    return [(p.name, float(p.score[pick] * p.weight)) for p in decision.priorities if p.weight]


def score_summary(decision: PlacementDecision) -> str:
    """``"score 27 (BalancedResource 9, ...); runner-up node-b 24; 8 of 14 nodes feasible"``, for Events and logs."""
    parts = ", ".join(f"{name} {value:g}" for name, value in winner_scores(decision))
    second = runner_up(decision)
    text = f"score {decision.score:g}" + (f" ({parts})" if parts else "")
    text += f"; runner-up {second[0]} {second[1]:g}" if second else "; no runner-up"
    return text + f"; {decision.feasible} of {len(decision.node_names)} nodes feasible"


def abbreviation(priority: str) -> str:
    """``LatencyAwareImageLocality`` -> ``LAIL``: the capitals, as column headers of the breakdown."""
    return "".join(ch for ch in priority if ch.isupper())


def explain_table(decision: PlacementDecision) -> pd.DataFrame:
    """The full breakdown: one row per node (scored nodes best first, then the rejected ones in cluster order), one
    column per priority (headed ``<abbreviation> x<weight>``, cells ``score (raw value)``), the weighted total, the
    chosen node marked, and the reason a node was not scored."""
    frame = decision.breakdown()
    priorities = [p for p in decision.priorities if p.name]
    first = frame.drop_duplicates("node").set_index("node")
    table = pd.DataFrame(
        {
            "chosen": np.where(first["winner"], "*", ""),
            "total": ["" if np.isnan(t) else f"{t:g}" for t in first["total"]],
        },
        index=first.index,
    )
    for p in priorities:
        rows = frame[frame["priority"] == p.name].set_index("node")
        table[f"{abbreviation(p.name)} x{p.weight:g}"] = [
            "" if np.isnan(score) else f"{score:g} ({raw:.4g})" for score, raw in zip(rows["score"], rows["raw"], strict=True)
        ]
    table["reason"] = [f"{REASON_TEXT.get(r, r)} ({r})" if r else "" for r in first["reason"]]
    rank = {node: i for i, (node, _) in enumerate(ranking(decision))}
    table["_rank"] = [rank.get(node, len(rank) + int(first.loc[node, "node_index"])) for node in table.index]
    return table.sort_values("_rank").drop(columns="_rank")


def legend(decision: PlacementDecision) -> str:
    """``BR = BalancedResource, LAIL = LatencyAwareImageLocality, ...`` for the columns of :func:`explain_table`."""
    return ", ".join(f"{abbreviation(p.name)} = {p.name}" for p in decision.priorities if p.name)
