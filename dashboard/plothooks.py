"""Bokeh hooks and formats the plots share: h:mm:ss times (ticks, hovers, Python), figure names, the fault legend.

Hooks make their Bokeh models per figure, never shared: a model can belong to one document only.
"""

from __future__ import annotations

from collections.abc import Callable

#: h:mm:ss from simulated seconds (days as "1d 02:00:00"); used for ticks and hovers.
HMS_JS = """
const s = Math.round(VALUE); const neg = s < 0 ? '-' : ''; let a = Math.abs(s);
const d = Math.floor(a / 86400); a -= d * 86400;
const h = Math.floor(a / 3600), m = Math.floor((a % 3600) / 60), sec = a % 60;
const p = v => String(v).padStart(2, '0');
return neg + (d ? d + 'd ' + p(h) : String(h)) + ':' + p(m) + ':' + p(sec);
"""


def hms_js(variable: str) -> str:
    """:data:`HMS_JS` formatting the JavaScript variable ``variable`` (``tick`` in a tick formatter, ``value`` in a hover)."""
    return HMS_JS.replace("VALUE", variable)


def hms(seconds: float) -> str:
    """Simulated seconds as h:mm:ss (the plots' time format, in Python)."""
    s = int(round(seconds))
    sign, s = ("-", -s) if s < 0 else ("", s)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{sign}{f'{d}d {h:02d}' if d else h}:{m:02d}:{s:02d}"


def _time_ticker():
    """Ticks at times a clock reads: 1/2/5/10/30 s, 1/2/5/10/15/30 min, 1/2/3/6/12 h, then days."""
    from bokeh.models import AdaptiveTicker, CompositeTicker

    return CompositeTicker(
        tickers=[
            # contiguous interval ranges: a gap leaves bokeh without a ticker for some zoom levels
            AdaptiveTicker(mantissas=[1, 2, 5], base=10, min_interval=0.0, max_interval=60.0),
            AdaptiveTicker(mantissas=[1, 2, 5, 10, 15, 30], base=60, min_interval=60.0, max_interval=3600.0),
            AdaptiveTicker(mantissas=[1, 2, 3, 6, 12], base=3600, min_interval=3600.0, max_interval=86400.0),
            AdaptiveTicker(mantissas=[1, 2, 5], base=86400, min_interval=86400.0),
        ]
    )


def _time_axis_hook(plot, element) -> None:
    """Per figure, once: h:mm:ss ticks at clock times on the time axis, and in every hover that shows a time."""
    from bokeh.models import CustomJSHover, CustomJSTickFormatter, HoverTool

    fig = plot.state
    axis = fig.xaxis[0] if fig.xaxis else None
    if axis is not None and not isinstance(axis.formatter, CustomJSTickFormatter):
        axis.formatter = CustomJSTickFormatter(code=hms_js("tick"))
        axis.ticker = _time_ticker()
        for grid in fig.xgrid:
            grid.ticker = axis.ticker
    hms_hover = None  # one formatter model per figure, shared by its hover tools
    for tool in fig.tools:
        if isinstance(tool, HoverTool) and isinstance(tool.tooltips, list) and "@{time}" not in (tool.formatters or {}):
            hms_hover = hms_hover or CustomJSHover(code=hms_js("value"))
            tool.formatters = {**(tool.formatters or {}), "@{time}": hms_hover}


def name_hook(name: str) -> Callable:
    """A hook naming the bokeh figure (``ts-queue``): tests and scripts find each plot's sources in the page by it."""

    def hook(plot, element) -> None:
        if plot.state.name != name:
            plot.state.name = name

    return hook


def _hide_empty_fault_legend(plot, element) -> None:
    """A legend entry for faults only once there is a fault to show (an empty "fault" entry said nothing)."""
    for legend in plot.state.legend:
        for item in legend.items:
            label = getattr(item.label, "value", item.label)
            if isinstance(label, str) and label.startswith("fault"):
                item.visible = any(len(next(iter(r.data_source.data.values()), [])) for r in item.renderers)
