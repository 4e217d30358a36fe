"""Recorded sessions in the dashboard: save the live run, load a ``.scalelab`` into a replay, scrub it, branch from it.

:class:`Recordings` is the dashboard's part for this (one per dashboard): the sidebar's **Recordings** card (save the
live run as a ``.scalelab``, load a session file or an old JSON recording, export the live run as an HTML page), the
**Replay** tab and the **Branch** tab, and the control actions (play, pause, speed) it notes in the live run.

* :class:`ReplayTab` draws a loaded recording from its stored tables alone -- no simulation, so a file opens at once
  -- with the same views as the live run (KPI row, time plots, event log, placement and score heatmaps), each showing
  the state at the scrubbed time (:func:`dashboard.frames.cut`). Its clock is its own: while it is shown, the
  sidebar's Play/Pause, Speed, Step and Reset drive the replay and the live run waits (as on the Compare tab).
  Scrubbing forward feeds the views the rows between the two times, as a live run would; scrubbing back redraws
  from the start.
* **Branch here** makes the live run a branch of the recording at the scrubbed time (``Recording.branch``: the
  recording's inputs up to then, re-simulated), paused, so that parameters can be changed before it goes on. Its
  own recording names the parent file and the branch time.
* :class:`BranchTab` overlays the parent recording (solid) and the live branch (dashed) from the branch point on.
"""

from __future__ import annotations

import functools
import io
import math
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import CustomJSTickFormatter

from dashboard import plots
from dashboard.export import export_html
from dashboard.feed import Feed, FramesSource, KpiTracker
from dashboard.frames import cut, empty_series, fault_frame, series_frame
from dashboard.recordings import describe, download_name, kpi_difference, kpis_at, recording_markers, sample_interval
from dashboard.session import MAX_TICK_GAP, SPEED_WINDOW, LiveSession
from dashboard.timeline import TIMELINE_HEIGHT, cursor, marker_choices, timeline_body, timeline_opts
from dashboard.views import WINDOW, EventLog, KpiRow, PlacementTab, TimeSeriesView
from engine import InputError, Recording, Simulation, load_recording

if TYPE_CHECKING:  # the dashboard builds this part; this module does not import the dashboard
    from dashboard.ui import Dashboard

#: The example recordings a user can open from the Replay tab (made by scripts/make-recordings.py).
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "recordings"
#: Figure name prefixes: the replay's views (``rp-queue`` ..., ``rp-placement-heatmap``) and the branch overlay's.
REPLAY_PREFIX, BRANCH_PREFIX = "rp", "br"
JUMP_PROMPT = "Jump to a marker…"


def is_session_file(data: bytes, filename: str) -> bool:
    """Is an upload a ``.scalelab`` session file (a zip, or so named) rather than a version-1 JSON recording?"""
    return data[:2] == b"PK" or filename.lower().endswith(".scalelab")


class SeriesAt(pn.viewable.Viewer):
    """The time plots of a recording as it stood at a time: each a ``DynamicMap`` over a ``Pipe`` of the rows up to then.

    The axes are those of the whole recording (its first frame is drawn whole), so they stay put while the curves grow
    or shrink with the scrubbed time; a time replaces what a plot shows in one update, forward or back (a live view's
    Buffers only append: a step back would empty and refill each, twice the redraws). More than :data:`WINDOW` rows are
    thinned to every k-th row, so that the whole history up to a time stays on screen with a few thousand points at most.
    """

    def __init__(self, prefix: str = REPLAY_PREFIX, window: int = WINDOW):
        super().__init__()
        self.prefix, self.window = prefix, window
        self.pipes: dict[str, hv.streams.Pipe] = {}
        self.panes = {
            name: pn.pane.HoloViews(None, linked_axes=False, sizing_mode="stretch_width", min_height=plots.PLOT_HEIGHT)
            for name in plots.TIME_PLOTS
        }
        self.layout = pn.GridBox(*self.panes.values(), ncols=2, sizing_mode="stretch_width")
        self._shown: tuple[pd.DataFrame, pd.DataFrame] | None = None
        self._round: list[str] = []

    def load(self, series: pd.DataFrame, faults: pd.DataFrame) -> None:
        """New plots for a recording, drawn first with all of its rows (which sets their axes)."""
        whole = (self._thin(series), faults)
        self.pipes = {name: hv.streams.Pipe(data=whole) for name in plots.TIME_PLOTS}
        for name, pane in self.panes.items():
            pane.object = hv.DynamicMap(functools.partial(self._draw, name, f"{self.prefix}-{name}"), streams=[self.pipes[name]])
        self._shown, self._round = whole, []

    @staticmethod
    def _draw(name: str, figure: str, data: tuple[pd.DataFrame, pd.DataFrame]) -> hv.Overlay:
        series, faults = data
        return plots.time_plot(name, series, faults, figure=figure)

    def _thin(self, series: pd.DataFrame) -> pd.DataFrame:
        if len(series) <= self.window:
            return series
        keep = np.zeros(len(series), dtype=bool)
        keep[:: -(-len(series) // self.window)] = True
        keep[-1] = True  # the scrubbed time itself is always drawn
        return series[keep]

    def show(self, series: pd.DataFrame, faults: pd.DataFrame) -> None:
        """Queue the rows to show (every plot is redrawn in the next rounds of :meth:`flush`)."""
        self._shown = (self._thin(series), faults)
        self._round = list(self.pipes)

    def flush(self, budget: float = math.inf) -> bool:
        """Redraw queued plots until ``budget`` wall seconds are spent (at least one); True when none is left."""
        t0 = time.perf_counter()
        while self._round and self._shown is not None:
            self.pipes[self._round.pop(0)].send(self._shown)
            if time.perf_counter() - t0 >= budget:
                break
        return not self._round

    def rows(self) -> int:
        """Rows the plots show."""
        return len(self._shown[0]) if self._shown is not None else 0

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


class ReplayTab(pn.viewable.Viewer):
    """A loaded recording drawn from its stored tables, at a scrubbed time, with a timeline of its markers."""

    tables = ()  # the live run's rows are not this tab's
    runs_own_simulations = True  # its clock is the replay's: the sidebar drives it while it is shown

    def __init__(self, on_branch: Callable[[Recording, float], None], on_open: Callable[[Recording], None]):
        super().__init__()
        self.rec: Recording | None = None
        self.frames: dict[str, pd.DataFrame] = {}
        self.at = 0.0  # the scrubbed time
        self.until = 0.0
        self.interval = 5.0
        self._target: float | None = None  # a time asked for by the slider, the timeline or a marker
        self._shown = -1.0  # the time the views were fed up to (-1: nothing fed)
        self._was_playing = False
        self._progress: deque[tuple[float, float, float]] = deque(maxlen=200)
        self._on_branch, self._on_open = on_branch, on_open
        self.kpi_row = KpiRow()
        self.series = SeriesAt(REPLAY_PREFIX)
        self.events = EventLog()
        self.placement_tab = PlacementTab(prefix=REPLAY_PREFIX)
        self.placement, self.scores = self.placement_tab.placement, self.placement_tab.scores
        self.tracker = KpiTracker()
        self.feed: Feed | None = None
        self._series_all = empty_series()
        self._faults_all = fault_frame(pd.DataFrame())

        self.intro = pn.pane.Markdown(
            "**No recording loaded.** Load a `.scalelab` session file with the sidebar's *Recordings* card, or open an "
            "example below. A recording opens at once from its stored tables, with no simulation.",
            css_classes=["replay-empty"],
        )
        examples = {p.stem: p for p in sorted(EXAMPLES.glob("*.scalelab"))}
        self.examples = pn.widgets.Select(
            label="Example recordings", options=examples, value=next(iter(examples.values()), None), width=260, visible=bool(examples)
        )
        self.open_example = pn.widgets.Button(
            label="Open the example", color="primary", visible=bool(examples), margin=(24, 10, 0, 10), css_classes=["replay-open"]
        )
        self.open_example.on_click(lambda e: self._open_example())
        self.info = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["replay-info"])
        self.cursor_pipe = hv.streams.Pipe(data=0.0)
        self.tap: hv.streams.SingleTap | None = None
        self.timeline = pn.pane.HoloViews(None, sizing_mode="stretch_width", min_height=TIMELINE_HEIGHT)
        self.slider = pn.widgets.FloatSlider(
            label="Scrub (simulated time)",
            start=0.0,
            end=1.0,
            step=5.0,
            value=0.0,
            format=CustomJSTickFormatter(code=plots.hms_js("tick")),
            sizing_mode="stretch_width",
            css_classes=["replay-scrub"],
        )
        self.slider.param.watch(self._scrubbed, "value")
        self._setting_slider = False
        self.jump = pn.widgets.Select(label="Markers", options={JUMP_PROMPT: -1.0}, value=-1.0, width=330, css_classes=["replay-jump"])
        self.jump.param.watch(self._jumped, "value")
        self.branch = pn.widgets.Button(
            label="Branch here",
            color="warning",
            css_classes=["replay-branch"],
            description="Continue live from the scrubbed time with the recording's inputs so far; then change parameters",
            margin=(24, 10, 0, 10),
        )
        self.branch.on_click(lambda e: self._on_branch(self.rec, self.at) if self.rec is not None else None)
        self.export = pn.widgets.FileDownload(
            callback=self._page_file,
            filename="recording.html",
            label="Export this recording (.html)",
            color="light",
            css_classes=["replay-export"],
            description="One self-contained page (plots, timeline, KPIs, events) that opens offline by double-click",
            margin=(24, 10, 0, 10),
        )
        self.controls = pn.Column(
            self.info,
            self.timeline,
            self.slider,
            pn.Row(self.jump, self.branch, self.export, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
            visible=False,
        )
        self.views = pn.Column(
            self.kpi_row,
            self.series,
            pn.pane.Markdown("### Event log"),
            self.events,
            self.placement_tab,
            sizing_mode="stretch_width",
            visible=False,
        )
        self.layout = pn.Column(
            pn.pane.Markdown(
                "A recording drawn from its stored tables. **Play/Pause, Speed, Step and Reset in the sidebar drive the replay "
                "while this tab is shown**; drag the slider, click the timeline or pick a marker to jump. *Branch here* "
                "continues live from the scrubbed time, with parameters you then change."
            ),
            self.intro,
            pn.Row(self.examples, self.open_example),
            self.controls,
            self.views,
            sizing_mode="stretch_width",
        )

    # -- loading ---------------------------------------------------------------------------------------------------
    def load(self, rec: Recording) -> None:
        """Show ``rec`` at its end (every view with data at once), from its stored tables."""
        self.rec, self.frames = rec, dict(rec.tables)
        self.until = float(rec.until)
        self.interval = sample_interval(rec)
        self._series_all = series_frame(self.frames.get("samples", pd.DataFrame()), self.interval)  # row-local: cut by time later
        self._faults_all = fault_frame(self.frames.get("events", pd.DataFrame()))
        self.series.load(self._series_all, self._faults_all)
        marks = recording_markers(rec)
        self._draw_timeline(marks)
        self.jump.options = {JUMP_PROMPT: -1.0, **marker_choices(marks)}  # label -> its time
        self.jump.value = -1.0
        self.info.object = describe(rec)
        self._setting_slider = True
        try:
            self.slider.param.update(start=0.0, end=max(self.until, 1.0), step=self.interval, value=self.until)
        finally:
            self._setting_slider = False
        self.intro.visible = False
        self.controls.visible = self.views.visible = True
        self.export.filename = f"{rec.path.stem}.html"
        self.placement_tab.visible = "nodes" in self.frames
        self._progress.clear()
        self._target, self.at = None, self.until
        self.events.clear()
        self.placement_tab.clear()  # new plots: another recording may have another cluster
        self._new_feed()

    def _open_example(self) -> None:
        path = self.examples.value
        if path is not None:
            self._on_open(load_recording(path))

    # -- the replay's clock (the TabView protocol of a tab that runs its own clock) --------------------------------
    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        """Move to a time asked for, or on by ``speed`` x ``wall_dt`` while playing (the views follow at the next flush)."""
        if self.rec is None:
            return
        if playing and not self._was_playing and self.at >= self.until and self._target is None:
            self._target = 0.0  # Play at the end starts again from the beginning, as a player does
        self._was_playing = playing
        if self._target is not None:
            self.at, self._target = min(max(self._target, 0.0), self.until), None
        elif playing and self.at < self.until:
            step = speed * min(max(wall_dt, 0.0), MAX_TICK_GAP)
            before, self.at = self.at, min(self.until, self.at + step)
            self._progress.append((time.perf_counter(), wall_dt, self.at - before))

    def seek(self, at: float) -> None:
        """Show the state at simulated time ``at`` (from the next tick)."""
        self._target = float(at)

    def step(self) -> None:
        """One sample interval on (or back to the start from the end)."""
        if self.rec is not None:
            self.at = 0.0 if self.at >= self.until else min(self.until, self.at + self.interval)

    def reset(self) -> None:
        """Back to t = 0."""
        if self.rec is not None:
            self.at = 0.0

    def now(self) -> float:
        """The scrubbed time (the header shows it while this tab is shown)."""
        return self.at

    def achieved_speed(self) -> float:
        """Simulated seconds replayed per wall second over the last few seconds of playing (NaN before any)."""
        newest = self._progress[-1][0] if self._progress else 0.0
        recent = [(dt, adv) for at, dt, adv in self._progress if newest - at <= SPEED_WINDOW]
        wall = sum(min(max(dt, 0.0), MAX_TICK_GAP) for dt, _ in recent)
        return sum(adv for _, adv in recent) / wall if wall > 0 else math.nan

    def run_state(self, playing: bool) -> tuple[str, str]:
        """The header's state label and its CSS class."""
        if self.rec is None:
            return "Replay: no recording", "state replay"
        if playing and self.at >= self.until:
            return "Replay at its end", "state replay"
        return ("Replay playing" if playing else "Replay paused"), "state replay"

    def _new_feed(self) -> None:
        self.tracker = KpiTracker()
        self._samples_fed = 0
        self.feed = Feed(FramesSource(self.frames), tables=("events", "nodes", "placements", "breakdowns"))
        self._shown = -1.0

    def _feed_to(self, at: float) -> None:
        """Bring every view to the state at ``at``: the time plots at once; the event log, the heatmaps and the KPIs are
        fed the rows between the time they show and ``at`` (from the first row after a step back), as a live run's are."""
        if self.feed is None or at == self._shown:
            return
        if at < self._shown:
            self.events.clear()
            self.placement.rewind()
            self.scores.rewind()
            self._new_feed()
        n = int(np.searchsorted(self._series_all["time"].to_numpy(), at, side="right"))
        self.series.show(self._series_all.iloc[:n], self._faults_all[self._faults_all["time"] <= at])
        self.feed.source = FramesSource(cut(self.frames, at))  # every recorded table is in time order: a cut is a prefix
        new = self.feed.poll()
        self.events.push(new.get("events", pd.DataFrame()))
        self.placement_tab.push(new, at)
        self.tracker.push(self.frames.get("samples", pd.DataFrame()).iloc[self._samples_fed : n])  # series rows are sample rows
        self._samples_fed = n
        self._shown = at

    # the rest of the TabView protocol
    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        pass

    def flush(self, now: float, budget: float = math.inf) -> bool:
        """Draw the state at the scrubbed time within ``budget`` wall seconds (True when all is drawn); the cursor, slider
        and KPIs follow."""
        if self.rec is None:
            return True
        at = self.at
        self._feed_to(at)  # here, not in tick: the dashboard draws inside one freeze of the page's models
        done = self.series.flush(budget)
        if done:
            self.events.flush()
            if self.placement_tab.visible:
                self.placement_tab.flush(at)
        self.kpi_row.update(self.tracker.kpis(at))
        if self.cursor_pipe.data != at:
            self.cursor_pipe.send(at)
        if self.slider.value != at:
            self._setting_slider = True
            try:
                self.slider.value = at
            finally:
                self._setting_slider = False
        self.branch.label = f"Branch here ({plots.hms(at)})"
        return done

    def clear(self) -> None:
        pass  # a new live run is not this tab's business: the recording stays

    # -- widgets -------------------------------------------------------------------------------------------------
    def _draw_timeline(self, marks: pd.DataFrame) -> None:
        """The recording's markers, and a cursor at the scrubbed time that moves alone; a click on the strip jumps."""
        self.cursor_pipe = hv.streams.Pipe(data=self.until)
        line = hv.DynamicMap(lambda data: cursor(data), streams=[self.cursor_pipe])
        strip = (timeline_body(marks) * line).opts(**timeline_opts(self.until, figure=f"{REPLAY_PREFIX}-timeline"))
        self.tap = hv.streams.SingleTap(source=strip, x=None)
        self.tap.param.watch(lambda e: self.seek(e.new) if e.new is not None else None, "x")
        self.timeline.object = strip

    def _scrubbed(self, event: Any) -> None:
        if not self._setting_slider and event.new is not None:
            self.seek(event.new)

    def _jumped(self, event: Any) -> None:
        if isinstance(event.new, int | float) and event.new >= 0:
            self.seek(event.new)

    def _page_file(self) -> io.BytesIO:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / (self.export.filename or "recording.html")
            export_html(self.rec, path)
            return io.BytesIO(path.read_bytes())

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


class BranchTab(pn.viewable.Viewer):
    """The live branch (dashed) over its parent recording (solid) from the branch point on, with KPIs and B - A."""

    tables = ("samples", "events")

    def __init__(self, session: LiveSession):
        super().__init__()
        self.session = session
        self.views = TimeSeriesView(("branch", "parent"), prefix=BRANCH_PREFIX)
        self.kpi_parent, self.kpi_branch = KpiRow(), KpiRow()
        self.info = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["branch-info"])
        self.branch_time: float | None = None
        self.parent: Recording | None = None
        self.layout = pn.Column(
            self.info,
            pn.Row(
                pn.Column(pn.pane.Markdown("**Parent recording** at the branch's time"), self.kpi_parent.pane),
                pn.Column(pn.pane.Markdown("**Branch** (with branch − parent)"), self.kpi_branch.pane),
                sizing_mode="stretch_width",
            ),
            self.views,
            sizing_mode="stretch_width",
        )
        self.clear()

    def clear(self) -> None:
        """A new live run: if it is a branch, show its parent from the branch point on (and nothing of the branch yet)."""
        s = self.session
        parent, sim = s.branched_from, s.sim
        self._for_sim = sim
        if self.parent is not None or parent is not None:  # a run that is no branch, after one that was not: nothing to empty
            self.views.clear()
        if parent is None or sim is None or sim.parent is None:
            self.parent, self.branch_time = None, None
            self.info.object = "The live run is not a branch: open a recording in the Replay tab and press *Branch here*."
            return
        self.parent, self.branch_time = parent, float(sim.parent["branch_time"])
        samples, events = (_from(parent.tables.get(t, pd.DataFrame()), self.branch_time) for t in ("samples", "events"))
        self.views.push("parent", samples, events, sample_interval(parent))
        self.info.object = (
            f"**Branch of `{parent.path.name}` at {plots.hms(self.branch_time)}**: the parent (solid) as recorded, the branch "
            "(dashed) as it runs now, from the branch point on. Change parameters in the sidebar and press Play; save the branch "
            "with *Save the live run*: its file names the parent and the branch time."
        )

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        """Queue the branch's new rows from the branch point on."""
        if self.session.sim is not self._for_sim:  # a new run reached this tab before its clear (the tab was just added)
            self.clear()
        if self.branch_time is None:
            return
        samples, events = (_from(new.get(t, pd.DataFrame()), self.branch_time) for t in ("samples", "events"))
        if len(samples) or len(events):
            self.views.push("branch", samples, events, self.session.sim.sections["run"].sample_interval)

    def flush(self, now: float, budget: float = math.inf) -> bool:
        """Draw the queued rows within ``budget`` wall seconds; the KPIs of the parent at ``now`` and of the branch."""
        if self.parent is None:
            return True
        done = self.views.flush(budget)
        parent, branch = kpis_at(self.parent.tables, now), self.session.kpis()
        self.kpi_parent.update(parent)
        self.kpi_branch.update(branch, kpi_difference(parent, branch))
        return done

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


def _from(frame: pd.DataFrame, t0: float) -> pd.DataFrame:
    return frame[frame["time"] >= t0] if len(frame) else frame


class Recordings:
    """The dashboard's recorded sessions: the sidebar card, the Replay and Branch tabs, and the control actions noted."""

    def __init__(self, dashboard: Dashboard):
        self.dashboard = dashboard
        session = dashboard.session
        self.replay_tab = ReplayTab(on_branch=self.branch, on_open=self.open)
        self.branch_tab = BranchTab(session)
        self.save = pn.widgets.FileDownload(
            callback=self._session_file,
            filename="session.scalelab",
            label="Save the live run (.scalelab)",
            color="primary",
            sizing_mode="stretch_width",
            css_classes=["rec-save"],
            description="One file with the inputs, every control action and every recorded table; opens anywhere, replays exactly",
        )
        self.upload = pn.widgets.FileInput(
            accept=".scalelab,.json",
            multiple=False,
            sizing_mode="stretch_width",
            css_classes=["rec-load"],
            description="A .scalelab opens in the Replay tab at once; an old JSON recording is re-simulated into the live run",
        )
        self.upload.param.watch(self._uploaded, "value")
        self.export = pn.widgets.FileDownload(
            callback=self._page_file,
            filename="session.html",
            label="Export the live run (.html)",
            color="light",
            sizing_mode="stretch_width",
            css_classes=["rec-export"],
            description="One self-contained page (plots, timeline, KPIs, events) that opens offline by double-click",
        )
        self.card = pn.Card(
            self.save,
            pn.pane.Markdown("Load a recording (.scalelab, or an old .json):", margin=(0, 10)),
            self.upload,
            self.export,
            title="Recordings",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )
        session.param.watch(self._control, ["playing", "speed"])
        session.param.watch(lambda e: self._note_state(), "generation")
        self._note_state()

    # -- the live run's file and page --------------------------------------------------------------------------------
    def _record(self, folder: Path) -> Path:
        s = self.dashboard.session
        s.sim.note_control("save")
        return s.sim.record(folder / download_name(s.scenario, s.seed, s.sim.now, ".scalelab"))

    def _session_file(self) -> io.BytesIO:
        with tempfile.TemporaryDirectory() as tmp:
            path = self._record(Path(tmp))
            self.save.filename = path.name
            return io.BytesIO(path.read_bytes())

    def _page_file(self) -> io.BytesIO:
        with tempfile.TemporaryDirectory() as tmp:
            path = self._record(Path(tmp))
            page = path.with_suffix(".html")
            export_html(load_recording(path), page)
            self.export.filename = page.name
            return io.BytesIO(page.read_bytes())

    # -- loading ---------------------------------------------------------------------------------------------------
    def _uploaded(self, event: Any) -> None:
        if not event.new:
            return
        d = self.dashboard
        filename = self.upload.filename or "uploaded recording"
        if not is_session_file(event.new, filename):
            d._replay_uploaded(event)  # a version-1 JSON recording: re-simulated into the live run, as before
            self._sync_run_card()
            self._show_tab("Live")
            return
        try:
            rec = load_recording(filename, data=event.new)
        except InputError as err:  # one line naming the file; whatever was shown stays, the live run carries on
            d._say(f"Recording not loaded: {err}")
            return
        self.open(rec)

    def open(self, rec: Recording) -> None:  # also the Replay tab's example button
        """Show ``rec`` in the Replay tab, at its end; the live run pauses (the replay's clock is the sidebar's)."""
        d = self.dashboard
        self.replay_tab.load(rec)
        d._say("")
        self._show_tab("Replay")
        d.session.playing = False
        if d._callback is None:  # not served (a notebook, a test): draw now
            self.replay_tab.flush(self.replay_tab.now())

    def branch(self, rec: Recording, at: float) -> None:
        """Make the live run a branch of ``rec`` at ``at``, paused, and show the Branch tab."""
        d = self.dashboard
        try:
            cost = Simulation(rec.scenario, seed=rec.seed).estimate(at)  # the re-simulation up to ``at`` holds the server
            if cost.long or cost.too_long:
                raise InputError(
                    f"{rec.path.name}: re-simulating it up to {plots.hms(at)} would take {cost.describe()}; allowed: an earlier "
                    "branch time, or Recording.branch in a notebook"
                )
            sim = rec.branch(at)
        except InputError as err:
            d._say(f"Branch not made: {err}")
            return
        d.session.playing = False
        d.session.continue_from(sim, branched_from=rec)
        self._sync_run_card()
        with pn.io.hold(), d._models_frozen():  # the new run's controls and tabs now (the Branch tab applies), drawn once
            d._new_run = False
            d._swap_run()
            self._show_tab("Branch")
        d._say(
            f"Branched from {rec.path.name} at {plots.hms(at)}: change parameters in the sidebar, then press Play. "
            "The Branch tab overlays parent and branch from the branch point on."
        )

    def _sync_run_card(self) -> None:
        """The Run card shows the scenario and seed the live run continued with (set without events, so as not to rebuild
        the run: its widgets did not follow). Setting a widget to the value in force changes nothing in the session."""
        d, s = self.dashboard, self.dashboard.session
        d.scenario_select.options = list(s.param.scenario.objects)
        d.scenario_select.value = s.scenario
        d.seed_input.value = s.seed

    def _show_tab(self, title: str) -> None:
        d = self.dashboard
        if title in d._tab_titles:
            d.tabs.active = d._tab_titles.index(title)

    # -- control actions, kept in the live run's recording -------------------------------------------------------
    def _driving_live(self) -> bool:
        d = self.dashboard
        view = d.tab_views.get(d.active_tab) if hasattr(d, "tab_views") else None
        return d.session.sim is not None and not getattr(view, "runs_own_simulations", False)

    def _control(self, event: Any) -> None:
        if not self._driving_live():
            return
        s = self.dashboard.session
        if event.name == "playing":
            s.sim.note_control("play" if event.new else "pause", float(s.speed))
        else:
            s.sim.note_control("speed", float(event.new))

    def _note_state(self) -> None:
        """A new live run starts in the state the controls are in (playing at some speed, or paused)."""
        s = self.dashboard.session
        if s.sim is not None and s.playing:
            s.sim.note_control("play", float(s.speed))
