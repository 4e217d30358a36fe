"""The Nodes tab: the node autoscaler's groups over time (nodes by state, pending pods, cost) and its decisions.

Shown for a run with a ``node_autoscaler`` section (its ``nodes_by_group`` and ``node_decisions`` tables); the plots are
:mod:`dashboard.nodes_plots` functions of those tables, redrawn from the rows so far each time the tab is drawn.
"""

from __future__ import annotations

import math

import pandas as pd
import panel as pn

from dashboard.context import AppContext
from dashboard.nodes_plots import nodes_layout, totals
from dashboard.tabs import TabBase

#: Rows of ``nodes_by_group`` kept (the newest): a few thousand points per plot at most.
KEPT = 6000
#: The newest decisions listed under the plots, with why.
LISTED = 8
DECISION_COLUMNS = ["time", "rule", "group", "count", "pods", "why"]


def totals_line(nodes_by_group: pd.DataFrame) -> str:
    """Now, over every group: nodes billed (booting), pods waiting for a node, node-hours and cost so far."""
    t = totals(nodes_by_group)
    return (
        f"At {t['time']:,.0f} s: **{t['nodes']} nodes** ({t['booting']} booting), **{t['pending_pods']} pods waiting** for a node; "
        f"**{t['node_hours']:,.2f} node-hours**, cost so far **{t['cost']:,.2f}**."
    )


def recent_decisions(decisions: pd.DataFrame, rows: int = LISTED) -> pd.DataFrame:
    """The newest decisions, newest first (node_ready rows left out: the plots show them as nodes)."""
    if decisions.empty:
        return pd.DataFrame(columns=DECISION_COLUMNS)
    kept = decisions[decisions["rule"] != "node_ready"]
    return kept[DECISION_COLUMNS].iloc[::-1].head(rows).reset_index(drop=True)


class NodesTab(TabBase, pn.viewable.Viewer):
    """The node autoscaler's plots of the live run."""

    tables = ("nodes_by_group", "node_decisions")

    def __init__(self, ctx: AppContext):
        super().__init__()
        self.pane = pn.pane.HoloViews(None, sizing_mode="stretch_width", linked_axes=False)
        self.totals = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["nodes-totals"])
        self.decisions = pn.pane.DataFrame(None, index=False, sizing_mode="stretch_width", css_classes=["nodes-decisions"])
        self.layout = pn.Column(
            pn.pane.Markdown(
                "Node groups as the node autoscaler scales them: nodes by state (dotted: each group's max size), pods waiting "
                "for a node (markers: the autoscaler's answer; hover for why they wait), cost. The groups' sizes, prices, "
                "boot times and shapes are live controls in the sidebar."
            ),
            self.totals,
            self.pane,
            pn.pane.Markdown("**Newest decisions**"),
            self.decisions,
            sizing_mode="stretch_width",
        )
        self.clear()

    def clear(self) -> None:
        self.frames: dict[str, pd.DataFrame] = {t: pd.DataFrame() for t in self.tables}
        self.changed = False

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        for table in self.tables:
            rows = new.get(table)
            if rows is not None and len(rows):
                self.frames[table] = pd.concat([self.frames[table], rows]).iloc[-KEPT:]
                self.changed = True

    def flush(self, now: float, budget: float = math.inf) -> bool:
        if self.changed and len(self.frames["nodes_by_group"]):
            self.pane.object = nodes_layout(self.frames["nodes_by_group"], self.frames["node_decisions"])
            self.totals.object = totals_line(self.frames["nodes_by_group"])
            self.decisions.object = recent_decisions(self.frames["node_decisions"])
            self.changed = False
        return True

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
