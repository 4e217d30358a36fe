"""The placement heatmap (nodes x time) and the score heatmap of one decision as plain Bokeh figures, made once per view.

Each is one figure over a few ``ColumnDataSource`` objects whose data is replaced only when what they show changed
(:func:`replace`): a redraw sets a few arrays and ranges, it makes no model (a HoloViews redraw made a new plot, and
a new plot's models, every time). What they show is what :func:`dashboard.plots.placement_heatmap` and
:func:`dashboard.plots.score_heatmap` draw for exports and notebooks: the hover names the node (and the time as
h:mm:ss), or the node, priority and scores of a cell; a colour bar; the same titles. Only public Bokeh API.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJSHover,
    CustomJSTickFormatter,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    Range1d,
)
from bokeh.plotting import figure

from dashboard.frames import NodeLayout, ScoreGrid, placement_grid, rescore, score_grid
from dashboard.plothooks import _time_ticker, hms_js
from dashboard.plots import SCORE_HEIGHT, SCORE_NODES, hover_columns, placement_height, placement_title, score_title

NODE_LABELS_JS = "return labels[Math.floor(value)] ?? '';"


def _same(old: Any, new: Any) -> bool:
    if isinstance(new, np.ndarray) or isinstance(old, np.ndarray):
        a, b = np.asarray(old), np.asarray(new)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(new, list) and isinstance(old, list):
        return len(old) == len(new) and all(_same(x, y) for x, y in zip(old, new, strict=True))
    return bool(old == new) if not isinstance(old, (list, np.ndarray)) else False


def replace(source: ColumnDataSource, data: dict[str, Any]) -> bool:
    """Set ``source.data`` to ``data`` unless it already holds exactly that (True if it was replaced)."""
    held = source.data
    if set(held) == set(data) and all(_same(held[k], v) for k, v in data.items()):
        return False
    source.data = data
    return True


def _set(obj: Any, **values: Any) -> None:
    """Update only the properties that differ (an unchanged property sends nothing)."""
    changed = {k: v for k, v in values.items() if getattr(obj, k) != v}
    if changed:
        obj.update(**changed)


def _ticks(axis: Any, ticks: list[tuple[float, str]]) -> None:
    """Ticks at ``ticks`` (position, label), set in place on the axis's own ``FixedTicker`` (no model is made)."""
    positions = [float(p) for p, _ in ticks]
    if list(axis.ticker.ticks) != positions:
        axis.ticker.ticks = positions
    overrides = {float(p): str(t) for p, t in ticks}
    if dict(axis.major_label_overrides) != overrides:
        axis.major_label_overrides = overrides


# -- placement: nodes x time ------------------------------------------------------------------------------------------
def _empty_image() -> dict[str, list]:
    return {"image": [], "x": [], "y": [], "dw": [], "dh": []}


class PlacementFigure:
    """Nodes (rows, grouped by region) x time: one image, region edges, node names in the hover."""

    def __init__(self, name: str):
        self.image = ColumnDataSource(_empty_image(), name=f"{name}-image")
        self.edges = ColumnDataSource({"y": np.zeros(0)})
        self.labels = CustomJSHover(args={"labels": []}, code=NODE_LABELS_JS)
        self.mapper = LinearColorMapper(palette="Viridis256", low=0.0, high=1.0)
        fig = figure(
            name=name,
            title="Placement over time",
            x_range=Range1d(0.0, 1.0),
            y_range=Range1d(0.0, 1.0),
            height=300,
            min_width=300,
            sizing_mode="stretch_width",
            tools="box_zoom,reset,save",
            toolbar_location="right",
            x_axis_label="simulated time (h:mm:ss)",
        )
        fig.toolbar.autohide = True
        fig.grid.visible = False
        fig.xaxis.formatter = CustomJSTickFormatter(code=hms_js("tick"))
        fig.xaxis.ticker = _time_ticker()
        fig.yaxis.ticker = FixedTicker(ticks=[])
        glyph = fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.image, color_mapper=self.mapper)
        fig.hspan(y="y", source=self.edges, line_color="white", line_width=1.5)
        self.bar = ColorBar(color_mapper=self.mapper, title="replicas", width=10)
        fig.add_layout(self.bar, "right")
        self.hover = HoverTool(
            renderers=[glyph],
            tooltips=[("node", "$y{custom}"), ("time", "$x{custom}"), ("replicas", "@image{0.[00]}")],
            formatters={"$y": self.labels, "$x": CustomJSHover(code=hms_js("value"))},
        )
        fig.add_tools(self.hover)
        self.figure = fig

    def clear(self) -> None:
        replace(self.image, _empty_image())
        replace(self.edges, {"y": np.zeros(0)})

    def draw(self, layout: NodeLayout, deltas: pd.DataFrame, times: np.ndarray, metric: str = "replicas") -> bool:
        """Show ``layout``'s nodes over ``times`` (as :func:`dashboard.plots.placement_heatmap`); True if data changed."""
        times = np.asarray(times, dtype=float)
        if len(times) < 2:
            times = np.array([0.0, 1.0]) if not len(times) else np.array([times[0] - 1.0, times[0]])
        grid = placement_grid(layout, deltas, times, metric)
        n = max(len(layout.labels), 1)
        label = "replicas" if metric == "replicas" else "cpu allocated (share)"
        vmax = max(float(np.nanmax(grid)) if grid.size else 0.0, 1.0 if metric == "replicas" else 0.05)
        half = (times[-1] - times[0]) / (len(times) - 1) / 2  # times are the columns' centres
        x0, x1 = float(times[0] - half), float(times[-1] + half)
        changed = replace(self.image, {"image": [grid], "x": [x0], "y": [0.0], "dw": [x1 - x0], "dh": [float(n)]})
        blocks = layout.region_blocks
        replace(self.edges, {"y": np.array([float(a) for _, a, _ in blocks[1:]])})
        _set(self.mapper, low=0.0, high=vmax)
        _set(self.figure.x_range, start=x0, end=x1)
        _set(self.figure.y_range, start=0.0, end=float(n))
        _set(self.figure, height=placement_height(layout))
        _set(self.figure.title, text=placement_title(label))
        _set(self.bar, title=label)
        if self.labels.args.get("labels") != layout.labels:
            self.labels.args = {"labels": list(layout.labels)}
        tips = [("node", "$y{custom}"), ("time", "$x{custom}"), (label, "@image{0.[00]}")]
        if list(self.hover.tooltips) != tips:
            self.hover.tooltips = tips
        ticks = [((a + b) / 2, region) for region, a, b in blocks] if len(blocks) <= 40 else []
        if len(layout.labels) <= 24:
            ticks = [(i + 0.5, lbl) for i, lbl in enumerate(layout.labels)]
        _ticks(self.figure.yaxis[0], ticks)
        return changed


# -- scores: nodes x priorities of one decision -----------------------------------------------------------------------
CELL_COLUMNS = ("x0", "y0", "x1", "y1", "x", "y", "text", "ink", *hover_columns())
TEXT_COLUMNS = ("text", "ink", "node", "priority")


def _no_cells() -> dict[str, np.ndarray]:
    """No cell: string columns empty as strings (an empty float "ink" column is an invalid colour array in BokehJS)."""
    return {c: np.array([], dtype=object) if c in TEXT_COLUMNS else np.zeros(0) for c in CELL_COLUMNS}


def _cells(grid: ScoreGrid) -> dict[str, np.ndarray]:
    rows, cols = len(grid.nodes), len(grid.priorities)
    x0 = np.tile(np.arange(cols, dtype=float), rows)
    y0 = np.repeat(np.arange(rows, dtype=float), cols)
    weighted = grid.weighted.ravel()
    hi = np.nanmax(grid.weighted) if np.isfinite(grid.weighted).any() else 0.0
    return {
        "x0": x0,
        "y0": y0,
        "x1": x0 + 1,
        "y1": y0 + 1,
        "x": x0 + 0.5,
        "y": y0 + 0.5,
        "text": np.array([f"{v:.1f}" if np.isfinite(v) else "" for v in weighted], dtype=object),
        "ink": np.where(np.nan_to_num(weighted, nan=0.0) > hi * 0.6, "#111111", "#ffffff").astype(object),
        "node": np.repeat(np.array(grid.nodes, dtype=object), cols),
        "priority": np.tile(np.array(grid.priorities, dtype=object), rows),
        "raw": grid.raw.ravel(),
        "score": grid.score.ravel(),
        "weight": np.tile(grid.weight, rows),
        "weighted": weighted,
        "total": np.repeat([grid.totals[n] for n in grid.nodes], cols).astype(float),
    }


class ScoreFigure:
    """One decision: weighted scores as an image, each cell's value written on it, a hover per cell, the winner outlined."""

    EMPTY_TITLE = "Scores of a placement"

    def __init__(self, name: str):
        self.image = ColumnDataSource(_empty_image(), name=f"{name}-image")
        self.cells = ColumnDataSource(_no_cells(), name=f"{name}-cells")
        self.outline = ColumnDataSource({"left": [], "right": [], "bottom": [], "top": []})
        self.mapper = LinearColorMapper(palette="Viridis256", low=0.0, high=1.0)
        fig = figure(
            name=name,
            title=self.EMPTY_TITLE,
            x_range=Range1d(0.0, 1.0),
            y_range=Range1d(0.0, 1.0),
            height=SCORE_HEIGHT,
            min_width=300,
            sizing_mode="stretch_width",
            toolbar_location=None,
            tools="",
        )
        fig.grid.visible = False
        fig.xaxis.major_label_orientation = math.radians(30)
        fig.xaxis.ticker = FixedTicker(ticks=[])
        fig.yaxis.ticker = FixedTicker(ticks=[])
        fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.image, color_mapper=self.mapper)
        fig.text(
            x="x",
            y="y",
            text="text",
            text_color="ink",
            source=self.cells,
            text_font_size="8pt",
            text_align="center",
            text_baseline="middle",
        )
        cells = fig.quad(
            left="x0",
            right="x1",
            bottom="y0",
            top="y1",
            source=self.cells,
            fill_alpha=0,
            line_alpha=0,
            hover_fill_alpha=0.2,
            hover_fill_color="white",
        )
        self.winner = fig.quad(left="left", right="right", bottom="bottom", top="top", source=self.outline, fill_alpha=0, line_width=3)
        fig.add_layout(ColorBar(color_mapper=self.mapper, title="weighted score (score x weight)", width=10), "right")
        tips = [(c, f"@{{{c}}}{{0.[000]}}" if c not in ("node", "priority") else f"@{{{c}}}") for c in hover_columns()]
        fig.add_tools(HoverTool(renderers=[cells], tooltips=tips))
        self.figure = fig

    def clear(self) -> None:
        """No decision: an empty grid."""
        replace(self.image, _empty_image())
        replace(self.cells, _no_cells())
        replace(self.outline, {"left": [], "right": [], "bottom": [], "top": []})
        _set(self.figure.title, text=self.EMPTY_TITLE)

    def draw(self, block: pd.DataFrame, weights: dict[str, float] | None = None, placed_at: float | None = None) -> bool:
        """Show one decision (re-scored with ``weights``: a preview), as :func:`dashboard.plots.score_heatmap`; True if
        the grid's data changed."""
        preview = weights is not None
        shown = rescore(block, weights) if preview else block
        grid = score_grid(shown, SCORE_NODES)
        rows, cols = len(grid.nodes), len(grid.priorities)
        height, width = float(max(rows, 1)), float(max(cols, 1))  # one node or one priority: still a cell of 1 x 1
        image = np.nan_to_num(grid.weighted, nan=0.0) if grid.weighted.size else np.zeros((1, 1))
        changed = replace(self.image, {"image": [image], "x": [0.0], "y": [0.0], "dw": [width], "dh": [height]})
        changed = replace(self.cells, _cells(grid)) or changed
        lo, hi = float(np.min(image)), float(np.max(image))
        _set(self.mapper, low=lo, high=hi if hi > lo else lo + 1.0)
        if grid.winner is not None:
            r = float(grid.nodes.index(grid.winner))
            replace(self.outline, {"left": [0.0], "right": [float(cols)], "bottom": [r], "top": [r + 1.0]})
        else:
            replace(self.outline, {"left": [], "right": [], "bottom": [], "top": []})
        _set(self.winner.glyph, line_color="#ffd92f" if preview else "#ff2d2d", line_dash="dashed" if preview else "solid")
        _set(self.figure.x_range, start=0.0, end=width)
        _set(self.figure.y_range, start=0.0, end=height)
        _ticks(
            self.figure.yaxis[0],
            [(i + 0.5, f"{'★ ' if n == grid.winner else ''}{n} ({grid.totals[n]:.1f})") for i, n in enumerate(grid.nodes)],
        )
        _ticks(self.figure.xaxis[0], [(i + 0.5, p) for i, p in enumerate(grid.priorities)])
        _set(self.figure.title, text=score_title(block, shown, grid, preview, placed_at))
        return changed
