"""The dashboard's tabs, in order: one explicit table (title, how to build it from the app context, when it applies).

A tab applies to a run by what the run's world declares (``engine.WORLDS[world].ui.views``) or holds (a cluster, a
parent recording); the shell shows those that apply and builds each when first shown. Add a tab with a row here.
"""

from __future__ import annotations

from dashboard.compare import CompareView
from dashboard.context import AppContext
from dashboard.functions import FunctionsTab
from dashboard.nodestab import NodesTab
from dashboard.podview import PodTab
from dashboard.sweeps import SweepsTab
from dashboard.tabs import TabSpec
from dashboard.whatiftab import WhatIfTab


def _sweeps(ctx: AppContext) -> SweepsTab:
    def opened() -> None:  # a sweep point became the live run: the Run card and the link show it
        ctx.sync_run_card()
        ctx.show_tab("Live")

    return SweepsTab(ctx.session, on_open=opened)


def _views(view: str):
    return lambda session: session.sim is not None and view in session.view.views


TABS: list[TabSpec] = [
    TabSpec("Live", lambda ctx: ctx.parts["live_tab"], applies=_views("vm-series")),
    TabSpec("Functions", FunctionsTab, applies=_views("functions"), flush_every=1.0),
    TabSpec("GPU", PodTab, applies=_views("gpu"), flush_every=0.5),
    TabSpec("Nodes", NodesTab, applies=lambda s: s.sim is not None and "nodes_by_group" in s.sim.tables, flush_every=2.0),
    TabSpec("Placement", lambda ctx: ctx.parts["placement_tab"], applies=lambda s: s.has_cluster, flush_every=1.0),
    TabSpec("Replay", lambda ctx: ctx.parts["recordings"].replay_tab),
    TabSpec("Branch", lambda ctx: ctx.parts["recordings"].branch_tab, applies=lambda s: s.branched_from is not None),
    TabSpec("Compare", CompareView),
    TabSpec("Sweeps", _sweeps, flush_every=1.0),
    TabSpec("What-if", WhatIfTab),
]
