"""The plots, as pure functions of DataFrames that return HoloViews objects (no Panel, no state).

One function per plot serves a finished run or a recording (:func:`run_layout` over the whole tables, the Replay
tab), the notebooks, and an exported page (``hv.save(run_layout(frames, 5.0), "run.html", resources="inline")``).
:func:`run_layout` with ``until=t`` draws the state at simulated time ``t`` (:func:`dashboard.frames.cut`): what a
scrubbed timeline shows. The live Live, Compare and Branch tabs draw the same time plots, with the same styles
(:data:`RUN_STYLE`, :data:`WAIT_STYLE`, :data:`WORKER_COLORS`), as Bokeh figures streamed row by row
(:mod:`dashboard.liveplots`): a HoloViews redraw per tick cost ~4 ms of server time per element.

The time plots take the columns of :func:`dashboard.frames.series_frame` and only *select* them.
Bokeh models (tick and hover formatters) are made per figure by hooks, never shared: a model can belong to
one document only, and every browser session has its own.

    from dashboard import plots
    from dashboard.frames import series_frame, fault_frame
    series = series_frame(sim.frame("samples"), 5.0)
    plots.time_plot("queue", series, fault_frame(sim.frame("events")))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the bokeh backend, so that options apply without hv.extension (library code)
import numpy as np
import pandas as pd

from dashboard.frames import (
    WORKER_STATES,
    NodeLayout,
    ScoreGrid,
    cut,
    fault_frame,
    latest_decision,
    placement_deltas,
    placement_grid,
    rescore,
    score_grid,
    series_frame,
)
from dashboard.plothooks import HMS_JS, _hide_empty_fault_legend, _time_axis_hook, hms, hms_js, name_hook  # noqa: F401 - re-exported

#: Colour and dash of each run: the live run, and the two sides of the compare tab.
RUN_STYLE = {"live": ("#1f77b4", "solid"), "A": ("#1f77b4", "solid"), "B": ("#d62728", "dashed")}
RUN_STYLE.update(parent=RUN_STYLE["A"], branch=RUN_STYLE["B"])  # a recording and a branch grown from it (the Branch tab)
#: Runs drawn as the second of a pair: their arrivals are the first run's, not drawn twice.
SECOND_RUNS = ("B", "branch")
WORKER_COLORS = dict(zip(WORKER_STATES, ("#fdae61", "#1a9850", "#d73027", "#91bfdb"), strict=True))
WAIT_STYLE = {
    "wait_p50": ("#4575b4", "solid", "p50"),
    "wait_p95": ("#f46d43", "dashed", "p95"),
    "wait_p99": ("#e7298a", "dotted", "p99"),
}  # p99 readable on a dark theme too
FAULT_COLOR = "#b2182b"
TIME = hv.Dimension("time", label="simulated time")
PLOT_HEIGHT = 240
#: Share of each time plot's y range kept free above the data for its legend.
LEGEND_HEADROOM = 0.32


def _hooks(*hooks: Callable | None) -> list[Callable]:
    return [h for h in hooks if h is not None]


def _time_opts(title: str, ylabel: str, name: str | None = None) -> dict:
    return dict(
        title=title,
        ylabel=ylabel,
        xlabel="simulated time (h:mm:ss)",
        responsive=True,
        height=PLOT_HEIGHT,
        min_width=300,
        show_grid=True,
        # the legend sits in a band of headroom above the data, so it never covers it; inside the frame, because a
        # legend outside is re-laid out on every update, which costs a walk of the whole page's models each time
        legend_position="top_left",
        legend_cols=6,
        legend_opts={"background_fill_alpha": 0.75, "label_text_font_size": "8pt", "padding": 2, "spacing": 0, "margin": 2},
        padding=(0, (0, LEGEND_HEADROOM)),
        toolbar="right",
        autohide_toolbar=True,  # the toolbar shows when the mouse is over the plot: titles stay readable
        default_tools=["pan", "xwheel_zoom", "box_zoom", "reset", "save"],
        hooks=_hooks(_time_axis_hook, _hide_empty_fault_legend, name_hook(name) if name else None),
    )


def _t(extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("time", "@{time}{custom}"), *extra]


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):  # hashable, and each thaws back to its own type (hover items are tuples)
        return ("__list__" if isinstance(value, list) else "__tuple__", *(_freeze(v) for v in value))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and value and value[0] in ("__list__", "__tuple__"):
        items = [_thaw(v) for v in value[1:]]
        return items if value[0] == "__list__" else tuple(items)
    return value


@functools.lru_cache(maxsize=1024)
def _template(kind: str, vdims: tuple[str, ...], label: str, frozen_opts: tuple) -> hv.Element:
    """A styled element with no rows: elements are its clones, so options are looked up once, not on every update."""
    empty = pd.DataFrame({c: np.zeros(0) for c in ("time", *vdims)})
    return getattr(hv, kind)(empty, TIME, list(vdims), label=label).opts(**{k: _thaw(v) for k, v in frozen_opts})


def _element(kind: str, series: pd.DataFrame, vdims: list[str], label: str, **opts: Any) -> hv.Element:
    """A ``kind`` element (Curve, Area, Scatter) of ``series`` over time, styled with ``opts``.

    The element holds ``series`` itself (no copy): a live plot's data is its Buffer's frame, which is what lets
    HoloViews stream only the new rows. Applying ``.opts`` costs milliseconds per element; cloning a cached,
    styled template costs a fraction of that, and a live view builds ~25 elements several times a second.
    """
    return _template(kind, tuple(vdims), label, _freeze(opts)).clone(series)


def _curve(series: pd.DataFrame, y: str, label: str, color: str, dash: str = "solid", width: float = 2.0, hover=None) -> hv.Curve:
    vdims = [y] + [c for c in (hover or []) if c != y]
    tips = _t([(c.replace("_", " "), f"@{{{c}}}{{0.[00]}}") for c in vdims])
    return _element(
        "Curve",
        series,
        vdims,
        label,
        color=color,
        line_dash=dash,
        line_width=width,
        tools=["hover"],
        hover_tooltips=tips,
        hover_mode="vline",
    )


def _suffix(run: str) -> str:
    return "" if run == "live" else f" {run}"


# -- time plots: (series rows, run) -> overlay; faults drawn by fault_markers -------------------------------------
def queue_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    color, dash = RUN_STYLE[run]
    return hv.Overlay([_curve(series, "queue_length", "queue" + _suffix(run), color, dash)])


def time_left_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    """time_left against its band; above 3x the band's top it is drawn on that cap and marked (hover: true value)."""
    color, dash = RUN_STYLE[run]
    band = _element(
        "Area",
        series,
        ["band_low", "band_high"],
        "band" + _suffix(run),
        color=color if run != "live" else "#1a9850",
        alpha=0.15,
        line_alpha=0,
    )
    line = _curve(series, "time_left_shown", "time_left" + _suffix(run), color, dash, hover=["time_left", "band_low", "band_high"])
    capped = _element(
        "Scatter",
        series,
        ["time_left_clipped", "time_left"],
        "off the scale" + _suffix(run),
        color=color,
        marker="triangle",
        size=7,
        tools=["hover"],
        hover_tooltips=_t([("time_left", "@{time_left}{0.[0]} s")]),
    )
    return band * line * capped


def workers_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    """Stacked areas of the workers by state (live run); one line of active workers per run when comparing."""
    color, dash = RUN_STYLE[run]
    if run != "live":
        return hv.Overlay([_curve(series, "workers_active", f"active {run}", color, dash, hover=["workers_total"])])
    areas = [
        _element(
            "Area",
            series,
            [f"stack_{i + 1}", f"stack_{i}"],
            state.removeprefix("workers_").replace("_", " "),
            color=WORKER_COLORS[state],
            alpha=0.85,
            line_alpha=0,
        )
        for i, state in enumerate(WORKER_STATES)
    ]
    total = _curve(series, "workers_total", "total", "#8c8c8c", width=1.5, hover=list(WORKER_STATES))  # readable on light and dark
    return hv.Overlay([*areas, total])


def rates_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    color, dash = RUN_STYLE[run]
    parts = [] if run in SECOND_RUNS else [_curve(series, "arrival_rate", "arrivals", "#999999", width=1.5)]
    parts.append(_curve(series, "completion_rate", "completions" + _suffix(run), color, dash, width=1.5))
    return hv.Overlay(parts)


def waits_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    """p50 solid, p95 dashed, p99 dotted, each its own colour (one p95 line per run when comparing)."""
    if run != "live":
        color, dash = RUN_STYLE[run]
        return hv.Overlay([_curve(series, "wait_p95", f"p95 {run}", color, dash)])
    return hv.Overlay([_curve(series, c, lbl, col, dash, width=1.6) for c, (col, dash, lbl) in WAIT_STYLE.items()])


def vm_hours_body(series: pd.DataFrame, run: str = "live") -> hv.Overlay:
    color, dash = RUN_STYLE[run]
    return hv.Overlay([_curve(series, "vm_hours", "VM-hours" + _suffix(run), color, dash)])


def fault_markers(faults: pd.DataFrame, named: bool = False) -> hv.Overlay:
    """A dashed red line at every fault; ``named``: and a marker at its foot that names the fault on hover (one plot
    names them, the queue plot: a marker per plot would cost a glyph and a hover tool in each). Their legend entry shows
    only once a fault happened."""
    lines = hv.VLines(faults, TIME, label="fault").opts(color=FAULT_COLOR, line_dash="dashed", line_width=1.2, alpha=0.8)
    if not named:
        return hv.Overlay([lines])
    feet = hv.Scatter(faults.assign(y=0.0), TIME, ["y", "fault"], label="fault (hover: which)").opts(
        color=FAULT_COLOR, marker="inverted_triangle", size=10, tools=["hover"], hover_tooltips=_t([("fault", "@{fault}")])
    )
    return lines * feet


@dataclass(frozen=True)
class TimePlot:
    """One time plot: its title, y label and body function; :func:`time_plot` adds faults and the shared options.
    ``group``: how often the live tab streams it (``primary``: every drawing round and at once after a control's change;
    ``secondary``: on a slower cadence, never in the change's own frame; see :mod:`dashboard.liveplots`)."""

    title: str
    ylabel: str
    body: Callable[[pd.DataFrame, str], hv.Overlay]
    group: str = "primary"


#: The time plots, in display order (the live tab and the compare tab draw all of them). The primary group is what a
#: control of the autoscaler moves first (the queue, the band's plot, the workers); the others follow more slowly.
TIME_PLOTS: dict[str, TimePlot] = {
    "queue": TimePlot("Queue length", "jobs", queue_body),
    "time_left": TimePlot("Drain time_left in its [MIN, MAX] band", "seconds", time_left_body),
    "workers": TimePlot("Workers by state", "VMs", workers_body),
    "rates": TimePlot("Arrival and completion rates", "jobs / s", rates_body, group="secondary"),
    "waits": TimePlot("Wait-time percentiles", "seconds", waits_body, group="secondary"),
    "vm_hours": TimePlot("Cumulative VM-hours", "VM-hours", vm_hours_body, group="secondary"),
}


def time_plot(
    name: str, runs: pd.DataFrame | Mapping[str, pd.DataFrame], faults: pd.DataFrame | None = None, figure: str | None = None
) -> hv.Overlay:
    """Time plot ``name`` of one run's series (or ``{"A": series, "B": series}`` overlaid), with fault markers.

    ``figure`` names the bokeh figure (see :func:`name_hook`).
    """
    spec = TIME_PLOTS[name]
    runs = {"live": runs} if isinstance(runs, pd.DataFrame) else dict(runs)
    overlay = hv.Overlay([el for run, series in runs.items() for el in spec.body(series, run)])
    if faults is not None:
        overlay = overlay * fault_markers(faults, named=name == "queue")
    return overlay.opts(**_time_opts(spec.title, spec.ylabel, figure))


def time_plot_opts(name: str, figure: str | None = None) -> dict:
    """The options :func:`time_plot` sets on an overlay (a live DynamicMap overlay takes the same)."""
    spec = TIME_PLOTS[name]
    return _time_opts(spec.title, spec.ylabel, figure)


# -- placement heatmap ------------------------------------------------------------------------------------------------
def _node_hover_hook(labels: list[str]) -> Callable:
    """A hook naming the node under the mouse (row -> label) and formatting the time, in the heatmap's hover."""

    def hook(plot, element) -> None:
        from bokeh.models import CustomJSHover, HoverTool

        for tool in plot.state.tools:
            if not isinstance(tool, HoverTool):
                continue
            node = (tool.formatters or {}).get("$y")
            if isinstance(node, CustomJSHover) and node.args.get("labels") == labels:
                continue
            tool.formatters = {
                "$y": CustomJSHover(args={"labels": labels}, code="return labels[Math.floor(value)] ?? '';"),
                "$x": CustomJSHover(code=hms_js("value")),
            }

    return hook


def placement_height(layout: NodeLayout) -> int:
    """Pixels the placement heatmap takes for ``layout``'s nodes (readable rows, bounded)."""
    return max(300, min(640, 14 * len(layout.labels) + 120))


def placement_title(label: str) -> str:
    """The placement heatmap's title for what its colour shows."""
    return f"Placement over time: {label} per node (nodes grouped by region)"


def placement_heatmap(
    layout: NodeLayout, deltas: pd.DataFrame, times: np.ndarray, metric: str = "replicas", figure: str | None = None
) -> hv.Overlay:
    """Nodes (rows, grouped by region) x ``times``: replicas per node, or the share of its cpu allocated.

    ``deltas`` are :func:`~dashboard.frames.placement_deltas` of the placements table; ``times`` evenly spaced
    (a live view takes the newest stretch, a recording its whole span or the span up to a time cut).
    """
    times = np.asarray(times, dtype=float)
    if len(times) < 2:
        times = np.array([0.0, 1.0]) if not len(times) else np.array([times[0] - 1.0, times[0]])
    grid = placement_grid(layout, deltas, times, metric)
    n = max(len(layout.labels), 1)
    label = "replicas" if metric == "replicas" else "cpu allocated (share)"
    vmax = max(float(np.nanmax(grid)) if grid.size else 0.0, 1.0 if metric == "replicas" else 0.05)
    img = hv.Image((times, np.arange(n) + 0.5, grid), kdims=[TIME, hv.Dimension("row", label="node")], vdims=[label]).opts(
        cmap="viridis",
        clim=(0, vmax),
        colorbar=True,
        clabel=label,
        tools=["hover"],
        hover_tooltips=[("node", "$y{custom}"), ("time", "$x{custom}"), (label, "@image{0.[00]}")],
        framewise=True,
    )
    blocks = layout.region_blocks
    ticks = [((a + b) / 2, region) for region, a, b in blocks] if len(blocks) <= 40 else []
    if len(layout.labels) <= 24:
        ticks = [(i + 0.5, lbl) for i, lbl in enumerate(layout.labels)]
    edges = hv.HLines([float(a) for _, a, _ in blocks[1:]]).opts(color="white", line_width=1.5)
    return (img * edges).opts(
        title=placement_title(label),
        responsive=True,
        height=placement_height(layout),
        yticks=ticks,
        ylabel="",
        xlabel="simulated time (h:mm:ss)",
        hooks=_hooks(_time_axis_hook, _node_hover_hook(layout.labels), name_hook(figure) if figure else None),
        toolbar="right",
        autohide_toolbar=True,
        default_tools=["box_zoom", "reset", "save"],
        framewise=True,  # a live view's span moves: ranges follow every frame
    )


# -- score heatmap ------------------------------------------------------------------------------------------------------
#: Nodes a score heatmap shows at most, and its height (fixed: a live view keeps its size from one decision to the next).
SCORE_NODES = 16
SCORE_HEIGHT = 26 * SCORE_NODES + 170


def score_heatmap(
    block: pd.DataFrame, weights: Mapping[str, float] | None = None, placed_at: float | None = None, figure: str | None = None
) -> hv.Overlay:
    """Nodes x priorities of one placement decision (weighted scores), the chosen node outlined.

    With ``weights`` (priority name -> weight) the decision is re-scored (:func:`~dashboard.frames.rescore`) and
    the plot is marked as a preview of what those weights would have chosen for this same pod.
    """
    preview = weights is not None
    shown = rescore(block, weights) if preview else block
    grid: ScoreGrid = score_grid(shown, SCORE_NODES)
    rows, cols = len(grid.nodes), len(grid.priorities)
    img = hv.Image(
        (np.arange(cols) + 0.5, np.arange(rows) + 0.5, np.nan_to_num(grid.weighted, nan=0.0)),
        kdims=[hv.Dimension("priority_x", label="priority"), hv.Dimension("node_y", label="node")],
        vdims=["weighted score"],
        bounds=(0, 0, cols, rows),  # given: one node or one priority leaves HoloViews nothing to infer a density from
    ).opts(cmap="viridis", colorbar=True, clabel="weighted score (score x weight)", tools=[], framewise=True)
    cells = pd.DataFrame(
        {
            "x0": np.tile(np.arange(cols, dtype=float), rows),
            "y0": np.repeat(np.arange(rows, dtype=float), cols),
            "node": np.repeat(grid.nodes, cols),
            "priority": np.tile(grid.priorities, rows),
            "raw": grid.raw.ravel(),
            "score": grid.score.ravel(),
            "weight": np.tile(grid.weight, rows),
            "weighted": grid.weighted.ravel(),
            "total": np.repeat([grid.totals[n] for n in grid.nodes], cols),
        }
    )
    cells["x1"], cells["y1"] = cells["x0"] + 1, cells["y0"] + 1
    hi = np.nanmax(grid.weighted) if np.isfinite(grid.weighted).any() else 0.0
    cells["text"] = [f"{v:.1f}" if np.isfinite(v) else "" for v in cells["weighted"]]
    cells["ink"] = np.where(cells["weighted"].fillna(0) > hi * 0.6, "#111111", "#ffffff")
    labels = hv.Labels(cells.assign(x=cells.x0 + 0.5, y=cells.y0 + 0.5), ["x", "y"], ["text", "ink"]).opts(
        text_color="ink", text_font_size="8pt"
    )
    hover = hv.Rectangles(cells, ["x0", "y0", "x1", "y1"], ["node", "priority", "raw", "score", "weight", "weighted", "total"]).opts(
        fill_alpha=0,
        line_alpha=0,
        hover_fill_alpha=0.2,
        hover_fill_color="white",
        tools=["hover"],
        hover_tooltips=[(c, f"@{{{c}}}{{0.[000]}}" if c not in ("node", "priority") else f"@{{{c}}}") for c in hover_columns()],
    )
    parts = [img, labels, hover]
    if grid.winner is not None:
        r = grid.nodes.index(grid.winner)
        outline = "#ff2d2d" if not preview else "#ffd92f"
        parts.append(
            hv.Rectangles([(0, r, cols, r + 1)]).opts(
                fill_alpha=0, line_color=outline, line_width=3, line_dash="solid" if not preview else "dashed"
            )
        )
    yticks = [(i + 0.5, f"{'★ ' if n == grid.winner else ''}{n} ({grid.totals[n]:.1f})") for i, n in enumerate(grid.nodes)]
    xticks = [(i + 0.5, p) for i, p in enumerate(grid.priorities)]
    return hv.Overlay(parts).opts(
        title=score_title(block, shown, grid, preview, placed_at),
        xticks=xticks,
        yticks=yticks,
        xrotation=30,
        xlabel="",
        ylabel="",
        responsive=True,
        height=SCORE_HEIGHT,
        toolbar=None,
        hooks=_hooks(name_hook(figure) if figure else None),
        framewise=True,  # each decision has its own nodes: ranges follow every frame
    )


def score_title(block: pd.DataFrame, shown: pd.DataFrame, grid: ScoreGrid, preview: bool, placed_at: float | None) -> str:
    """The score heatmap's title: the decision (or, as a preview, what ``shown``'s re-scoring would choose instead)."""
    when = f" at {hms(placed_at)}" if placed_at is not None else ""
    if preview:
        before = block.loc[block["winner"].astype(bool), "node"]
        chose = str(before.iloc[0]) if len(before) else "none"
        tie = "; a tie" if bool(shown.get("tie", pd.Series([False])).any()) else ""  # the status line says how each mode breaks it
        title = f"PREVIEW{when}: would choose {grid.winner or 'none'} (chose {chose}){tie}"
    else:
        title = f"Scores of the placement{when}: chose {grid.winner or 'none (pending)'}"
    if grid.scored > len(grid.nodes):
        title += f"; best {len(grid.nodes)} of {grid.scored} scored nodes"
    return title


def hover_columns() -> list[str]:
    """What a score cell's hover shows."""
    return ["node", "priority", "raw", "score", "weight", "weighted", "total"]


# -- a whole run ------------------------------------------------------------------------------------------------------
def run_layout(frames: Mapping[str, pd.DataFrame], sample_interval: float, until: float | None = None, columns: int = 120) -> hv.Layout:
    """Every plot of a run from its tables, as it stood at ``until`` (default: the end); for notebooks and ``hv.save``."""
    frames = cut(frames, until) if until is not None else dict(frames)
    samples = frames.get("samples", pd.DataFrame())
    series = series_frame(samples, sample_interval)
    faults = fault_frame(frames.get("events", pd.DataFrame()))
    plots: list = [time_plot(name, series, faults) for name in TIME_PLOTS]
    if "nodes" in frames and len(frames["nodes"]):
        end = float(series["time"].iloc[-1]) if len(series) else 0.0
        layout = NodeLayout.from_nodes(frames["nodes"])
        plots.append(placement_heatmap(layout, placement_deltas(frames.get("placements", pd.DataFrame())), np.linspace(0.0, end, columns)))
        block = latest_decision(frames.get("breakdowns", pd.DataFrame()))
        if len(block):
            plots.append(score_heatmap(block, placed_at=decision_time(frames["placements"], int(block["decision"].iloc[0]))))
    return hv.Layout(plots).cols(2).opts(shared_axes=False)


def decision_time(placements: pd.DataFrame, decision: int) -> float | None:
    """Simulated time of placement decision ``decision`` (its bind or pending row), if recorded."""
    rows = placements[placements["decision"] == decision] if len(placements) else placements
    return float(rows["time"].iloc[0]) if len(rows) else None
