"""The node autoscaler's plots, as pure functions of its recorded tables (no Panel, no state).

They read ``nodes_by_group`` (one row per group per sample) and ``node_decisions`` (one row per decision), the
tables every world with a ``node_autoscaler`` section records, so a live session, a finished run and a recording
draw the same. Frames with no rows give empty plots, not errors.

    from dashboard import nodes_plots
    nodes_plots.nodes_layout(sim.frame("nodes_by_group"), sim.frame("node_decisions"))
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the bokeh backend, so that options apply without hv.extension (library code)
import pandas as pd

TIME = hv.Dimension("time", label="simulated time (s)")
PLOT_HEIGHT = 240
#: Marker of each decision rule drawn over the node counts (the others are not marked).
RULE_MARKERS = {"scale_up": ("triangle", "#1a9850"), "scale_down": ("inverted_triangle", "#d73027"),
                "scale_down_empty": ("inverted_triangle", "#fdae61"), "consolidate_delete": ("x", "#d73027"),
                "consolidate_empty": ("x", "#fdae61"), "consolidate_replace": ("diamond", "#4575b4"),
                "group_changed": ("square", "#7b3294")}  # fmt: skip
#: Decisions that say why pods wait for a node (drawn over the pending pods, the reason on hover).
WAITING_RULES = {"scale_up": ("triangle", "#1a9850"), "no_scale_up": ("circle_x", "#d73027")}


def nodes_frame(nodes_by_group: pd.DataFrame) -> pd.DataFrame:
    """Nodes by group over time, long form: time, group, state (booting | ready | draining), nodes."""
    if nodes_by_group.empty:
        return pd.DataFrame(
            {"time": pd.Series(dtype=float), "group": pd.Series(dtype=str), "state": pd.Series(dtype=str), "nodes": pd.Series(dtype=int)}
        )
    long = nodes_by_group[["time", "group", "booting", "ready", "draining"]].melt(
        id_vars=["time", "group"], value_vars=["booting", "ready", "draining"], var_name="state", value_name="nodes"
    )
    return long.astype({"group": str, "state": str}).sort_values(["time", "group", "state"], kind="stable").reset_index(drop=True)


def cost_frame(nodes_by_group: pd.DataFrame) -> pd.DataFrame:
    """Money and node-hours so far per group, and the total over the groups (group ``all``), by time."""
    cols = ["time", "group", "cost", "node_hours"]
    if nodes_by_group.empty:
        return pd.DataFrame({c: pd.Series(dtype=str if c == "group" else float) for c in cols})
    per = nodes_by_group[cols].astype({"group": str})
    total = per.groupby("time", sort=True)[["cost", "node_hours"]].sum().reset_index().assign(group="all")
    return pd.concat([per, total[cols]], ignore_index=True).sort_values(["time", "group"], kind="stable").reset_index(drop=True)


def pending_frame(nodes_by_group: pd.DataFrame) -> pd.DataFrame:
    """Pods waiting for a node, by time (one row per sample)."""
    if nodes_by_group.empty:
        return pd.DataFrame({"time": pd.Series(dtype=float), "pending_pods": pd.Series(dtype=int)})
    return nodes_by_group.groupby("time", sort=True)["pending_pods"].first().reset_index()


def waiting_frame(decisions: pd.DataFrame | None) -> pd.DataFrame:
    """The decisions that say why pods wait for a node (scale-ups and 'no group helps'): time, rule, pods, group, why."""
    cols = ["time", "rule", "pods", "group", "why"]
    if decisions is None or decisions.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("time", "pods") else str) for c in cols})
    hit = decisions[decisions["rule"].isin(list(WAITING_RULES))]
    return hit[cols].astype({"rule": str, "group": str, "why": str}).reset_index(drop=True)


def totals(nodes_by_group: pd.DataFrame) -> dict[str, float]:
    """The newest sample over all groups: nodes billed, booting, pods waiting, node-hours and cost so far."""
    if nodes_by_group.empty:
        return {"time": 0.0, "nodes": 0, "booting": 0, "pending_pods": 0, "node_hours": 0.0, "cost": 0.0}
    last = nodes_by_group[nodes_by_group["time"] == nodes_by_group["time"].max()]
    return {
        "time": float(last["time"].iloc[0]),
        "nodes": int(last["nodes"].sum()),
        "booting": int(last["booting"].sum()),
        "pending_pods": int(last["pending_pods"].iloc[0]),
        "node_hours": float(last["node_hours"].sum()),
        "cost": float(last["cost"].sum()),
    }


def nodes_plot(nodes_by_group: pd.DataFrame, decisions: pd.DataFrame | None = None) -> hv.Overlay:
    """Nodes billed per group over time (booting + ready + draining, stepped), each group's max_size dotted (it may
    change live), with the scale decisions marked."""
    frame = nodes_by_group if not nodes_by_group.empty else pd.DataFrame({"time": [], "group": [], "nodes": []})
    curves = [
        hv.Curve(part, TIME, ("nodes", "nodes"), label=str(group)).opts(interpolation="steps-post", line_width=2)
        for group, part in frame.groupby("group", sort=True)
    ] or [hv.Curve([], TIME, "nodes")]
    if "max_size" in frame.columns:
        curves += [
            hv.Curve(part, TIME, ("max_size", "nodes"), label=f"{group} max").opts(
                interpolation="steps-post", line_width=1, line_dash="dotted", alpha=0.7
            )
            for group, part in frame.groupby("group", sort=True)
        ]
    marks = []
    if decisions is not None and not decisions.empty:
        counts = frame.groupby("time")["nodes"].sum() if len(frame) else pd.Series(dtype=float)
        for rule, (marker, color) in RULE_MARKERS.items():
            hit = decisions[decisions["rule"] == rule]
            if hit.empty:
                continue
            level = counts.reindex(hit["time"], method="ffill").fillna(0).to_numpy() if len(counts) else [0] * len(hit)
            points = pd.DataFrame(
                {
                    "time": hit["time"].to_numpy(),
                    "nodes": level,
                    "group": hit["group"].astype(str).to_numpy(),
                    "why": hit["why"].astype(str).to_numpy(),
                }
            )
            marks.append(
                hv.Scatter(points, TIME, ["nodes", "group", "why"], label=rule).opts(marker=marker, color=color, size=9, tools=["hover"])
            )
    return hv.Overlay([*curves, *marks]).opts(height=PLOT_HEIGHT, responsive=True, title="Nodes by group", legend_position="top_left")


def pending_plot(nodes_by_group: pd.DataFrame, decisions: pd.DataFrame | None = None) -> hv.Overlay:
    """Pods waiting for a node over time, with the node autoscaler's answer marked: a scale-up, or no group that helps
    (hover: why they wait, e.g. the predicates that reject them, and what was launched)."""
    frame = pending_frame(nodes_by_group)
    curve = hv.Curve(frame, TIME, ("pending_pods", "pods pending"), label="waiting").opts(
        interpolation="steps-post", color="#d73027", tools=["hover"]
    )
    waiting = waiting_frame(decisions)
    marks = [
        hv.Scatter(waiting[waiting["rule"] == rule], TIME, [("pods", "pods pending"), "group", "why"], label=rule).opts(
            marker=marker, color=color, size=9, tools=["hover"]
        )
        for rule, (marker, color) in WAITING_RULES.items()
        if (waiting["rule"] == rule).any()
    ]
    return hv.Overlay([curve, *marks]).opts(
        height=PLOT_HEIGHT, responsive=True, title="Pods waiting for a node", legend_position="top_left"
    )


def cost_plot(nodes_by_group: pd.DataFrame) -> hv.Overlay:
    """Money spent so far per group and in all (node-hours x price)."""
    frame = cost_frame(nodes_by_group)
    curves = [
        hv.Curve(part, TIME, ["cost", "node_hours"], label=group).opts(line_width=3 if group == "all" else 2, tools=["hover"])
        for group, part in frame.groupby("group", sort=True)
    ] or [hv.Curve([], TIME, "cost")]
    return hv.Overlay(curves).opts(height=PLOT_HEIGHT, responsive=True, title="Cost so far", legend_position="top_left")


def nodes_layout(nodes_by_group: pd.DataFrame, decisions: pd.DataFrame | None = None) -> hv.Layout:
    """The three plots in one column: nodes by group, pods waiting, cost."""
    return hv.Layout([nodes_plot(nodes_by_group, decisions), pending_plot(nodes_by_group, decisions), cost_plot(nodes_by_group)]).cols(1)
