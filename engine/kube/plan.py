"""Plan mode: where each Pending pod of a ``kubectl`` dump would go, decided exactly as the daemon decides.

The dumps fill a :class:`~engine.kube.state.ClusterState`; its queue is worked through as the daemon does
(kube-scheduler's order: priority, then age), each placement taking its capacity before the next pod is
placed, nothing written anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.cluster.importers.kube import load_kube_nodes
from engine.cluster.importers.kube_snapshot import KubePod, load_kube_pods
from engine.kube.explain import rejection_summary, runner_up
from engine.kube.state import ClusterState
from engine.scheduling.framework import PlacementDecision
from engine.scheduling.params import SchedulerParams

PLAN_COLUMNS = ("pod", "node", "score", "runner_up", "runner_up_score", "feasible", "reasons", "unmodelled")


@dataclass
class Plan:
    """The decisions for the Pending pods, in the order they were made."""

    pods: list[KubePod]
    decisions: list[PlacementDecision]
    nodes: int

    def table(self) -> pd.DataFrame:
        """One row per pod: node (empty when none fits), score, runner-up and its score, feasible nodes, the rejected
        nodes per reason, and the pod fields the scheduler does not model."""
        rows = []
        for record, decision in zip(self.pods, self.decisions, strict=True):
            second = runner_up(decision)
            rows.append(
                {
                    "pod": record.key,
                    "node": decision.node_name or "",
                    "score": decision.score if decision.node is not None else float("nan"),
                    "runner_up": second[0] if second else "",
                    "runner_up_score": second[1] if second else float("nan"),
                    "feasible": f"{decision.feasible}/{self.nodes}",
                    "reasons": rejection_summary(decision, short=True),
                    "unmodelled": ", ".join(record.unmodelled),
                }
            )
        return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))

    def decision(self, pod: str) -> tuple[KubePod, PlacementDecision]:
        """The decision for ``namespace/name`` (or a bare name, when only one pod has it); KeyError otherwise."""
        matches = [(r, d) for r, d in zip(self.pods, self.decisions, strict=True) if pod in (r.key, r.name)]
        if len(matches) != 1:
            known = ", ".join(r.key for r in self.pods) or "none"
            what = "is ambiguous" if matches else "is not a Pending pod of the plan"
            raise KeyError(f"{pod!r} {what}; allowed: {known}")
        return matches[0]


def plan(
    nodes_path: Path | str,
    pods_path: Path | str,
    params: SchedulerParams,
    scheduler_name: str | None = None,
    namespace: str | None = None,
) -> Plan:
    """Place every Pending pod of the dumps (those naming ``scheduler_name`` in ``namespace``; None: any) in turn.

    Raises :class:`~engine.cluster.importers.kube.KubeObjectError` naming the file, object and field for bad input.
    """
    state = ClusterState(params, scheduler_name, namespace)
    state.set_nodes(load_kube_nodes(nodes_path, arch_required=False))  # as the daemon: kube-scheduler never reads it
    state.set_pods(load_kube_pods(pods_path))
    pods, decisions = [], []
    while queue := state.queue():
        record = queue[0]
        decision = state.decide(record)
        if decision.node_name is None:
            state.mark_unschedulable(record)
        else:
            state.assume(record, decision.node_name)
        pods.append(record)
        decisions.append(decision)
    return Plan(pods, decisions, len(state.nodes))


def format_table(table: pd.DataFrame) -> str:
    """The plan as kubectl prints tables: upper-case headers, left-aligned columns three blanks apart."""
    unmodelled = bool(table["unmodelled"].any())
    header = ["POD", "NODE", "SCORE", "RUNNER-UP", "FEASIBLE", "REJECTED NODES", *(["NOT MODELLED"] if unmodelled else [])]
    rows = [
        [
            row.pod,
            row.node or "<none fits>",
            "-" if row.score != row.score else f"{row.score:g}",
            f"{row.runner_up} ({row.runner_up_score:g})" if row.runner_up else "-",
            row.feasible,
            row.reasons or "-",
            *([row.unmodelled or "-"] if unmodelled else []),
        ]
        for row in table.itertuples()
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows])
