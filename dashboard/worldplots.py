"""Each world's time plots, as pure functions of its recorded tables (no Panel, no state).

The VM world's six plots are :data:`dashboard.plots.TIME_PLOTS` over :func:`~dashboard.frames.series_frame`; the
function platform's are per-function curves of ``function_samples``; any world may declare plain curves of its
sample table (``engine.WORLDS[world].ui.series``, the pod world's GPU allocation and fragmentation). The Replay
tab, the exported page and the pod world's live tab all draw through :func:`time_plots`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import holoviews as hv
import pandas as pd

from dashboard import plots
from dashboard.frames import fault_frame, series_frame

#: A time plot of a world: the run's tables (as they stood at some time) -> a HoloViews overlay.
PlotFn = Callable[..., hv.Overlay]
DASHES = ("solid", "dashed", "dotted", "dashdot")


def declared_plot(spec: Any, frame: pd.DataFrame, figure: str | None = None, extra: hv.Overlay | None = None) -> hv.Overlay:
    """The curves a world declares (``SeriesPlot``: columns with labels) of ``frame`` over time (``extra`` overlaid)."""
    cols = [c for c, _ in spec.columns]
    data = frame if len(frame) else pd.DataFrame({c: pd.Series(dtype=float) for c in ["time", *cols]})
    curves = [
        hv.Curve(data, plots.TIME, (col, label), label=label).opts(
            line_dash=DASHES[i % len(DASHES)],
            tools=["hover"],
            hover_tooltips=[("time", "@{time}{custom}"), (label, f"@{{{col}}}{{0.[000]}}")],
        )
        for i, (col, label) in enumerate(spec.columns)
    ]
    overlay = hv.Overlay(curves) if extra is None else hv.Overlay(curves) * extra
    return overlay.opts(**plots._time_opts(spec.title, spec.ylabel, figure))


#: The function platform's plots: (title, y label, columns with their legend suffix, log scale).
FUNCTION_PLOTS = {
    "requests": ("requests / s", "requests / s", (("rps", ""),), False),
    "latency": (
        "response p50 / p95 / p99 (s)",
        "response (s)",
        (("response_p50", "p50"), ("response_p95", "p95"), ("response_p99", "p99")),
        True,
    ),
    "replicas": (
        "replicas by state",
        "replicas",
        (
            ("replicas_running", "running"),
            ("replicas_starting", "starting"),
            ("replicas_pending", "pending"),
            ("replicas_draining", "draining"),
        ),
        False,
    ),
    "cold_starts": ("cold starts per sample", "cold starts", (("cold_starts", ""),), False),
    "queue": ("gateway queue (requests held)", "requests", (("queued", ""),), False),
}


def function_plot(name: str, data: pd.DataFrame, figure: str | None = None, extra: hv.Overlay | None = None) -> hv.Overlay:
    """Function-platform plot ``name`` (a key of :data:`FUNCTION_PLOTS`) of ``function_samples`` rows, one curve per
    function and column."""
    title, ylabel, columns, logy = FUNCTION_PLOTS[name]
    curves = []
    for f, g in data.groupby("function", sort=True) if len(data) else []:
        for i, (col, suffix) in enumerate(columns):
            part = g[["time", col]].rename(columns={col: "value"})
            if logy:  # a log axis cannot show zero
                part = part[part["value"] > 0]
            curves.append(
                hv.Curve(part, plots.TIME, ("value", ylabel), label=f"{f} {suffix}".strip()).opts(line_dash=DASHES[i % len(DASHES)])
            )
    if not curves:
        curves = [hv.Curve(pd.DataFrame({"time": [], "value": []}), plots.TIME, ("value", ylabel))]
    overlay = hv.Overlay(curves) if extra is None else hv.Overlay(curves) * extra
    opts = plots._time_opts(title, ylabel, figure)
    return overlay.opts(hv.opts.Curve(tools=["hover"], logy=logy), hv.opts.Overlay(**opts, logy=logy))


def time_plots(view: Any, sample_interval: float, prefix: str | None = None) -> dict[str, PlotFn]:
    """The world's time plots by name, each a function of the run's tables (and optionally an overlay to add, such as
    the exported page's change lines); ``prefix`` names the bokeh figures ``{prefix}-{name}`` (tests find them)."""
    empty = pd.DataFrame()

    def figure(name: str) -> str | None:
        return f"{prefix}-{name}" if prefix else None

    if "vm-series" in view.views:

        def vm(name: str) -> PlotFn:
            def draw(frames: Mapping[str, pd.DataFrame], extra: hv.Overlay | None = None) -> hv.Overlay:
                series = series_frame(frames.get("samples", empty), sample_interval)
                overlay = plots.time_plot(name, series, fault_frame(frames.get("events", empty)))
                return (overlay if extra is None else overlay * extra).opts(**plots.time_plot_opts(name, figure(name)))

            return draw

        return {name: vm(name) for name in plots.TIME_PLOTS}
    if "functions" in view.views:
        return {
            name: (lambda frames, extra=None, n=name: function_plot(n, frames.get("function_samples", empty), figure(n), extra))
            for name in FUNCTION_PLOTS
        }
    return {
        spec.name: (lambda frames, extra=None, s=spec: declared_plot(s, frames.get(s.table, empty), figure(s.name), extra))
        for spec in view.series
    }
