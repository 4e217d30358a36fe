"""The live views: ``pn.viewable.Viewer`` classes fed from the recorded tables.

The time plots are Bokeh figures (:mod:`dashboard.liveplots`) over a ``ColumnDataSource`` per run and group of plots
(the live tab streams its secondary group less often: :class:`TimeSeriesView`): a flush streams only the rows
recorded since the last one (``ColumnDataSource.stream`` with a rollover window), so a tick's
drawing cost is proportional to what changed; the heatmaps are ``hv.Image`` s on numpy grids sent through a
``Pipe``. Views take new table rows with ``push`` (cheap: queued) and draw them with ``flush`` (the dashboard
flushes only the tab on screen).

A new run (reset, replay, scenario switch) is drawn by :meth:`clear`, which empties the sources and the axes in the
same held update as the new run's first rows: nothing of the old run can stay in a plot. :meth:`RunView.from_frames`
draws a finished run or a recording from its tables, with no engine behind it.
"""

from __future__ import annotations

import html
import math
import time
from typing import Any

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import ColumnDataSource

from dashboard import liveplots, plots
from dashboard.feed import Feed, FramesSource
from dashboard.frames import (
    FAULT_COLUMNS,
    SERIES_COLUMNS,
    empty_series,
    fault_frame,
    series_frame,
)
from dashboard.kpis import KpiTracker, world_view
from dashboard.liveplots import GROUPS
from dashboard.placement import PlacementTab, PlacementView, ScoreView
from dashboard.tabs import TabBase
from dashboard.turns import after_this_turn

#: Samples kept on screen per run and plot (a few thousand points at most; see the recipe).
WINDOW = 1500
#: Event-log rows kept.
EVENT_ROWS = 200
#: Wall seconds between two updates of the live event log (a plain HTML table, rebuilt whole).
EVENTS_EVERY = 1.0
#: Time columns of the placement heatmap.
HEATMAP_COLUMNS = 120
#: Fault markers kept per run.
FAULTS_KEPT = 200
#: The live tab streams its secondary plots (rates, waits, VM-hours) in one drawing round of this many (about every
#: 2 s at ``ticker.PLOT_EVERY``), in a frame of their own: a frame repaints three figures, not six.
SECONDARY_EVERY = 4


class RunStreams:
    """One run's rows on screen: per group of time plots (:data:`~dashboard.liveplots.GROUPS`) a bounded
    :class:`~bokeh.models.ColumnDataSource` of its plots' columns and one of its faults. :meth:`push` queues rows for
    every group, :meth:`flush` streams (only the new ones) into the groups asked for: the plots of a group end at the
    same time, and all of them do once every group is flushed."""

    def __init__(self, window: int = WINDOW):
        self.window = window
        self.sources = {g: ColumnDataSource(liveplots.empty_series_data(liveplots.group_columns(g))) for g in GROUPS}
        self.faults = {g: ColumnDataSource(liveplots.empty_fault_data()) for g in GROUPS}
        self._pending: dict[str, list[pd.DataFrame]] = {g: [] for g in GROUPS}
        self._pending_faults: dict[str, list[pd.DataFrame]] = {g: [] for g in GROUPS}

    @property
    def source(self) -> ColumnDataSource:
        """The primary group's source (the band's plot among them)."""
        return self.sources[GROUPS[0]]

    def push(self, series: pd.DataFrame, faults: pd.DataFrame) -> None:
        for group in GROUPS:
            pending = self._pending[group]
            if len(series):
                pending.append(series)
                if len(pending) > 8 and sum(len(p) for p in pending) > 2 * self.window:  # off screen: what the window shows
                    self._pending[group] = [pd.concat(pending, ignore_index=True).iloc[-self.window :]]
            if len(faults):
                self._pending_faults[group].append(faults)

    def clear(self) -> None:
        """Drop every row: queued and shown (the plots show nothing until new rows come)."""
        for group in GROUPS:
            self._pending[group], self._pending_faults[group] = [], []
            source, faults = self.sources[group], self.faults[group]
            if len(source.data.get("time", ())):
                source.data = liveplots.empty_series_data(list(source.data))
            if len(faults.data.get("time", ())):
                faults.data = liveplots.empty_fault_data()

    def pending(self, group: str | None = None) -> bool:
        """Rows queued and not streamed yet (of ``group``; None: of any group)."""
        return any(self._pending[g] or self._pending_faults[g] for g in ([group] if group else GROUPS))

    def flush(self, groups: tuple[str, ...] = GROUPS) -> list[str]:
        """Stream the queued rows (only those) of ``groups`` to the browser; the groups that had any."""
        sent = []
        for group in groups:
            if self._pending[group]:
                pending, self._pending[group] = self._pending[group], []
                new = (pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]).iloc[-self.window :]
                source = self.sources[group]
                liveplots.stream_or_set(source, {c: new[c].to_numpy() for c in source.data}, self.window)
                sent.append(group)
            if self._pending_faults[group]:
                new = pd.concat(self._pending_faults[group], ignore_index=True).iloc[-FAULTS_KEPT:]
                self._pending_faults[group] = []
                data = {"time": new["time"].to_numpy(dtype=float), "fault": new["fault"].to_numpy(dtype=object), "y": np.zeros(len(new))}
                liveplots.stream_or_set(self.faults[group], data, FAULTS_KEPT)
                sent += [] if group in sent else [group]
        return sent

    def frame(self, group: str | None = None) -> pd.DataFrame:
        """The series rows on screen, as a DataFrame (of ``group``; None: every group's columns, joined on time)."""
        frames = [pd.DataFrame({c: np.asarray(v) for c, v in self.sources[g].data.items()}) for g in ([group] if group else GROUPS)]
        joined = frames[0]
        for other in frames[1:]:
            joined = joined.merge(other, on="time", how="outer", sort=True)
        return joined if group else joined.reindex(columns=SERIES_COLUMNS)

    def rows(self, group: str = GROUPS[0]) -> int:
        """Series rows currently held (by ``group``'s source)."""
        return len(self.sources[group].data["time"])


class TimeSeriesView(pn.viewable.Viewer):
    """The time plots of one run (``runs=("live",)``) or of two overlaid (``("A", "B")``), on one bounded window.

    Bokeh figures (:mod:`dashboard.liveplots`) in ``pn.pane.Bokeh`` panes, over a source per run and group of plots:
    a flush streams the rows queued since the last one and fits the axes to what is held. With ``secondary_every`` >
    1 the secondary group is streamed in one drawing round of that many (and in a round whose primary plots had nothing
    new: a paused run), in a frame of its own (the tick after the primary's), never in a round a control's change
    started (:meth:`begin_round`); a round that must show everything (a pause, a step, a new run, a forced draw) streams
    every group at once, so that every plot ends at the same time.
    """

    def __init__(self, runs: tuple[str, ...] = ("live",), prefix: str = "ts", window: int = WINDOW, secondary_every: int = 1):
        super().__init__()
        self.runs = runs
        self.prefix = prefix
        self.window = window
        self.secondary_every = secondary_every
        self.streams = {run: RunStreams(window) for run in runs}
        self.plots = liveplots.live_figures({r: st.sources for r, st in self.streams.items()}, self.streams[runs[0]].faults, prefix)
        self.panes = {
            name: pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_height=plots.PLOT_HEIGHT) for name, fig in self.plots.figures.items()
        }
        # a served page's first document holds the primary group's plots (the top of the grid); the secondary group's
        # join once the page has its first frame (Panel's onload; at once in a notebook, a test, a page already loaded)
        primary = [self.panes[name] for name in liveplots.group_plots(GROUPS[0])]
        self.layout = pn.GridBox(*primary, ncols=2, sizing_mode="stretch_width")
        pn.state.onload(self._show_secondary)
        self._reason = "period"  # why the drawing round in progress started (see dashboard.tabs.ROUND_REASONS)
        self._rounds = 0  # periodic rounds since the secondary group was last streamed
        self._secondary_next = False  # the next flush (the round's second tick) streams the secondary group

    def _show_secondary(self) -> None:
        with pn.io.hold():
            self.layout.objects = [self.panes[name] for group in GROUPS for name in liveplots.group_plots(group)]

    def top_first(self) -> None:
        """Hold the primary group's plots only; the secondary group's join in the event loop's next turn (dashboard.turns)."""
        self.layout.objects = [self.panes[name] for name in liveplots.group_plots(GROUPS[0])]
        after_this_turn(self._show_secondary)

    def clear(self) -> None:
        """Empty every plot for a new run (reset, replay, scenario switch), and its axes with it: the plots stay, their
        data goes (in the same held update as the new run's first rows)."""
        for streams in self.streams.values():
            streams.clear()
        self._secondary_next = False
        self.plots.fit({r: st.sources for r, st in self.streams.items()})
        self.plots.show_faults(False)

    def push(self, run: str, samples: pd.DataFrame, events: pd.DataFrame, sample_interval: float) -> None:
        """Queue new ``samples`` and ``events`` rows of ``run``."""
        faults = fault_frame(events if len(events) and (events["kind"] == "fault").any() else pd.DataFrame())
        self.streams[run].push(series_frame(samples, sample_interval) if len(samples) else empty_series(), faults)

    def begin_round(self, reason: str) -> None:
        """A drawing round starts (``reason``: see :data:`dashboard.tabs.ROUND_REASONS`)."""
        self._reason = reason
        self._secondary_next = False

    def flush(self, budget: float = math.inf) -> bool:
        """Stream queued rows into the plots of the groups due (see the class docs) and fit their axes (cheap:
        proportional to the new rows, so ``budget`` is not needed); True when the round is complete."""
        primary, secondary = GROUPS
        reason, self._reason = self._reason, "period"
        if self._secondary_next:  # the round's second tick
            self._secondary_next = False
            self._stream((secondary,))
            return True
        if budget == math.inf or reason == "all" or self.secondary_every <= 1:
            self._stream(GROUPS)
            return True
        drew = self._stream((primary,))
        if reason == "change":
            return True
        self._rounds += 1
        if self._rounds >= self.secondary_every or not drew:
            self._rounds = 0
            if not drew:
                self._stream((secondary,))
                return True
            self._secondary_next = any(st.pending(secondary) for st in self.streams.values())
        return not self._secondary_next

    def _stream(self, groups: tuple[str, ...]) -> bool:
        """Stream ``groups``' queued rows and fit their axes; True if any were streamed."""
        sent = {g for st in self.streams.values() for g in st.flush(groups)}
        if sent:
            self.plots.fit({r: st.sources for r, st in self.streams.items()}, [g for g in GROUPS if g in sent])
            self.plots.show_faults(len(self.streams[self.runs[0]].faults[GROUPS[0]].data["time"]) > 0)
        return bool(sent)

    def restart_round(self) -> None:
        """A change interrupts the round: the secondary group waits for the next periodic round."""
        if self._secondary_next:
            self._secondary_next = False
            self._rounds = self.secondary_every

    def end_times(self) -> dict[str, float]:
        """The simulated time each plot ends at (its x range's end): the same within a group, and for all of them
        once every group is flushed (a paused run)."""
        return {name: float(fig.x_range.end) for name, fig in self.plots.figures.items()}

    @property
    def figures(self) -> dict[str, pn.pane.Bokeh]:
        return self.panes

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if spec.lstrip("+") == "d":
        v = round(float(v))
    return format(v, spec)


def kpi_html(kpis: dict[str, Any], view: Any, diff: dict[str, Any] | None = None) -> str:
    """The KPI row a world declares (``view.kpis``: labels and formats), then the simulated time, as HTML (values carry
    data-kpi attributes for tests)."""
    cells = []
    for kpi in (*view.kpis, None):
        key, label, spec = (kpi.key, kpi.label, kpi.fmt) if kpi is not None else ("time", "Sim time", "hms")
        value = kpis.get(key)
        extra = ""
        if diff is not None and key in diff:
            extra = f"<div class='kpi-diff'>B-A {_fmt(diff[key], '+' + spec)}</div>"
        cls = "kpi-value"
        if kpi is not None and kpi.alarm_unless and value and not str(value).upper().endswith(kpi.alarm_unless):
            cls += " kpi-alarm"
        text = plots.hms(value) if spec == "hms" and value is not None else _fmt(value, spec)
        cells.append(
            f"<div class='kpi'><div class='kpi-label'>{html.escape(label)}</div>"
            f"<div class='{cls}' data-kpi='{key}'>{html.escape(text)}</div>{extra}</div>"
        )
    return "<div class='kpi-row'>" + "".join(cells) + "</div>"


# colours follow the theme (Panel's design variables, with light fallbacks): the dark theme keeps them readable
KPI_CSS = """
.kpi-row {display: flex; gap: 10px; flex-wrap: wrap;}
.kpi {border: 1px solid color-mix(in srgb, currentColor 25%, transparent); border-radius: 6px; padding: 4px 12px; min-width: 110px;
      background: color-mix(in srgb, currentColor 5%, transparent); color: var(--panel-on-background-color, inherit);}
.kpi-label {font-size: 11px; opacity: 0.75;}
.kpi-value {font-size: 20px; font-weight: 600; color: inherit;}
.kpi-alarm {color: #e34a33;}
.kpi-diff {font-size: 11px; opacity: 0.85;}
"""


class KpiRow(pn.viewable.Viewer):
    """The KPIs the run's world declares (labels and formats from ``engine.WORLDS[world].ui``) and the simulated time."""

    def __init__(self, view: Any = None):
        super().__init__()
        self.view = view if view is not None else world_view("vm")
        self.pane = pn.pane.HTML("", stylesheets=[KPI_CSS], sizing_mode="stretch_width", min_height=60)

    def update(self, kpis: dict[str, Any], diff: dict[str, Any] | None = None, view: Any = None) -> None:
        if view is not None:
            self.view = view
        text = kpi_html(kpis, self.view, diff)
        if text != self.pane.object:
            self.pane.object = text

    def __panel__(self) -> pn.viewable.Viewable:
        return self.pane


EVENT_COLUMNS = ["time", "kind", "command", "rule", "vm", "vm_type", "node", "reason", "value"]
EVENT_CSS = """
.event-log {max-height: 300px; overflow-y: auto; font-size: 12px;}
.event-log table {border-collapse: collapse; width: 100%;}
.event-log th {position: sticky; top: 0; background: var(--panel-surface-color, #f3f3f3); text-align: left; padding: 2px 6px;}
.event-log td {padding: 1px 6px; border-bottom: 1px solid color-mix(in srgb, currentColor 12%, transparent); white-space: nowrap;}
.event-log tr.fault td {color: #e34a33;}
.event-log tr.param td {font-style: italic;}
"""


class EventLog(pn.viewable.Viewer):
    """Commands with the rule that produced each, faults, parameter changes; newest first, bounded.

    A plain HTML table (cheaper on the server and in the browser than streaming into a data-grid widget). A row's HTML
    is made once, when it is first shown; :meth:`flush` only joins the newest rows of the kinds chosen.
    """

    def __init__(self):
        super().__init__()
        self.rows = pd.DataFrame({c: pd.Series(dtype=float if c == "time" else object) for c in EVENT_COLUMNS})
        self._html: list[str | None] = []  # one <tr> per row of self.rows, newest first (None: not shown yet)
        kinds = ["command", "fault", "param", "placement", "vm"]
        self.kinds = pn.widgets.CheckButtonGroup(options=kinds, value=list(kinds), color="light", description="Which events to list")
        self.kinds.param.watch(lambda e: self._send(), "value")
        self.table = pn.pane.HTML("", stylesheets=[EVENT_CSS], sizing_mode="stretch_width", min_height=60)
        self.pane = pn.Column(self.kinds, self.table, sizing_mode="stretch_width")
        self._pending: list[pd.DataFrame] = []
        self._waiting = False  # rows wait for the served page's first frame (see flush)
        self._send()

    def clear(self) -> None:
        self._pending = []
        self.rows = self.rows.iloc[0:0]
        self._html = []
        self._send()

    def push(self, events: pd.DataFrame) -> None:
        """Queue events; :meth:`flush` sends them (the table costs more than a plot, so it updates less often)."""
        if len(events):
            self._pending.append(events)

    def flush(self) -> None:
        if not self._pending:
            return
        new = pd.concat(self._pending, ignore_index=True) if len(self._pending) > 1 else self._pending[0]
        self._pending = []
        keep = EVENT_ROWS * 4
        new = new.reindex(columns=EVENT_COLUMNS).iloc[::-1].head(keep).reset_index(drop=True)
        self.rows = pd.concat([new, self.rows], ignore_index=True).head(keep) if len(self.rows) else new
        self._html = ([None] * len(new) + self._html)[:keep]
        # a served page's first document holds the log's head only: its rows (most of the page's DOM nodes, below the
        # plots) follow once the page has its first frame (Panel's onload; at once in a notebook, a test, a loaded page)
        if not self._waiting:
            self._waiting = True
            pn.state.onload(self._send_waited)

    def _send_waited(self) -> None:
        self._waiting = False
        self._send()

    def _send(self) -> None:
        """The newest rows of the kinds chosen; a row's HTML is made the first time it is shown."""
        mask = self.rows["kind"].isin(self.kinds.value).to_numpy()
        shown = np.flatnonzero(mask)[:EVENT_ROWS]
        missing = [i for i in shown if self._html[i] is None]
        if missing:
            for i, row in zip(missing, _row_html(self.rows.iloc[missing]), strict=True):
                self._html[i] = row
        body = "".join(self._html[i] for i in shown)
        head = "".join(f"<th>{c}</th>" for c in EVENT_COLUMNS)
        text = f"<div class='event-log'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        if text != self.table.object:
            self.table.object = text

    def __panel__(self) -> pn.viewable.Viewable:
        return self.pane


def _cell(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else html.escape(str(value))


def _row_html(rows: pd.DataFrame) -> list[str]:
    """One table row of HTML per event row (escaped)."""
    times = rows["time"].tolist()
    cells = list(zip(*(rows[c].tolist() for c in EVENT_COLUMNS[1:]), strict=True)) if len(rows) else []
    return [
        f"<tr class='{_cell(row[0])}'><td>{plots.hms(t)}</td>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
        for t, row in zip(times, cells, strict=True)
    ]


class SeriesTab(TabBase, pn.viewable.Viewer):
    """The "Live" tab: the time plots and the event log of one run, fed from ``samples`` and ``events``."""

    tables = ("samples", "events")
    streams_only = True

    def __init__(self, run: str = "live", sample_interval: float = 5.0):
        super().__init__()
        self.run = run
        self.sample_interval = sample_interval
        self.series = TimeSeriesView((run,), secondary_every=SECONDARY_EVERY)
        self.events = EventLog()
        self._events_at = 0.0
        self._layout = pn.Column(self.series, pn.pane.Markdown("### Event log"), self.events, sizing_mode="stretch_width")

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        empty = pd.DataFrame()
        events = new.get("events", empty)
        self.series.push(self.run, new.get("samples", empty), events, self.sample_interval)
        self.events.push(events)

    def flush(self, now: float, budget: float = math.inf) -> bool:
        """Draw what was queued within ``budget`` wall seconds; True when all of it is drawn."""
        done = self.series.flush(budget)
        wall = time.perf_counter()
        if done and (budget == math.inf or wall - self._events_at >= EVENTS_EVERY):  # the log costs more than the plots
            self._events_at = wall
            self.events.flush()
        return done

    def begin_round(self, reason: str) -> None:
        self.series.begin_round(reason)

    def restart_round(self) -> None:
        self.series.restart_round()

    def clear(self) -> None:
        self.series.clear()
        self.events.clear()

    def rejoin(self) -> None:
        """Back after another world's runs: the primary plots first; the others and the event log in the next turn."""
        self.series.top_first()
        whole, self._layout.objects = list(self._layout.objects), [self.series]
        after_this_turn(lambda: setattr(self._layout, "objects", whole))

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout


class RunView(pn.viewable.Viewer):
    """Every view of one run, fed from its recorded tables: KPI row, time plots, event log, placement and score heatmaps.

    :meth:`push` takes what a :class:`~dashboard.feed.Feed` polled, :meth:`flush` draws it; :meth:`from_frames`
    draws a finished run or a recording with no engine behind it.
    """

    def __init__(self, run: str = "live", sample_interval: float = 5.0):
        super().__init__()
        self.kpi_row = KpiRow()
        self.live_tab = SeriesTab(run, sample_interval)
        self.placement_tab = PlacementTab(WINDOW * sample_interval)
        self.series, self.events = self.live_tab.series, self.live_tab.events
        self.placement, self.scores = self.placement_tab.placement, self.placement_tab.scores
        self.gpu = self.placement_tab.gpu

    @property
    def sample_interval(self) -> float:
        return self.live_tab.sample_interval

    @sample_interval.setter
    def sample_interval(self, value: float) -> None:
        self.live_tab.sample_interval = value
        self.placement.span = WINDOW * value

    def clear(self) -> None:
        self.live_tab.clear()
        self.placement_tab.clear()

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        self.live_tab.push(new, now)
        self.placement_tab.push(new, now)

    def flush(self, now: float) -> None:
        self.live_tab.flush(now)
        self.placement_tab.flush(now)

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame], sample_interval: float, run: str = "live") -> RunView:
        """The views of a finished run or a recording, drawn once from its tables."""
        view = cls(run, sample_interval)
        new = Feed(FramesSource(frames)).poll()
        samples = frames.get("samples", pd.DataFrame())
        end = float(samples["time"].iloc[-1]) if len(samples) else 0.0
        view.push(new, end)
        view.live_tab.flush(end)
        view.placement.flush(end, force=True, start=0.0)
        view.scores.flush(end)
        view.placement_tab.gpu.render()
        tracker = KpiTracker(world_view("vm"))
        tracker.push(frames)
        view.kpi_row.update(tracker.kpis(end))
        return view

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(self.kpi_row, pn.Tabs(("Live", self.live_tab), ("Placement", self.placement_tab)), sizing_mode="stretch_width")


__all__ = [
    "FAULT_COLUMNS",
    "EventLog",
    "KpiRow",
    "PlacementTab",
    "PlacementView",
    "RunStreams",
    "RunView",
    "ScoreView",
    "SeriesTab",
    "TimeSeriesView",
]
