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

import io
import math
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import panel as pn
from bokeh.events import Tap
from bokeh.models import CustomJSTickFormatter

from dashboard import plots
from dashboard.export import export_html
from dashboard.feed import Feed, FramesSource
from dashboard.frames import cut
from dashboard.kpis import KpiTracker, world_view
from dashboard.recordings import describe, recording_markers, recording_view, sample_interval
from dashboard.replayplots import SeriesAt, TimelineFigure
from dashboard.session import MAX_TICK_GAP, SPEED_WINDOW
from dashboard.tabs import TabBase
from dashboard.timeline import TIMELINE_HEIGHT, cursor, marker_choices
from dashboard.views import WINDOW, EventLog, KpiRow, PlacementTab
from dashboard.worldplots import time_plots
from engine import Recording, load_recording

#: The example recordings a user can open from the Replay tab (made by scripts/make-recordings.py).
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "recordings"
#: Figure name prefixes: the replay's views (``rp-queue`` ..., ``rp-placement-heatmap``) and the branch overlay's.
REPLAY_PREFIX, BRANCH_PREFIX = "rp", "br"
JUMP_PROMPT = "Jump to a marker…"


def recording_view_default() -> Any:
    """The view declaration before any recording is loaded (the VM world's)."""
    return world_view("vm")


def scrub_label(at: float) -> str:
    """The replay slider's label at scrubbed time ``at``."""
    return f"Scrub (simulated time): {plots.hms(at)}"


def is_session_file(data: bytes, filename: str) -> bool:
    """Is an upload a ``.scalelab`` session file (a zip, or so named) rather than a version-1 JSON recording?"""
    return data[:2] == b"PK" or filename.lower().endswith(".scalelab")


class ReplayTab(TabBase, pn.viewable.Viewer):
    """A loaded recording drawn from its stored tables, at a scrubbed time, with a timeline of its markers."""

    own_clock = True  # its clock is the replay's: the sidebar drives it while it is shown

    def __init__(
        self,
        on_branch: Callable[[Recording, float], None],
        on_open: Callable[[Recording], None],
        on_shown: Callable[[Recording, float], None] | None = None,
    ):
        super().__init__()
        self.rec: Recording | None = None
        self.frames: dict[str, pd.DataFrame] = {}
        self.at = 0.0  # the scrubbed time
        self.until = 0.0
        self.interval = 5.0
        self._target: float | None = None  # a time asked for by the slider, the timeline or a marker
        self._shown = -1.0  # the time the views were fed up to (-1: nothing fed)
        self._was_playing = False
        self._sought = False  # the last move was a jump (slider, timeline, marker), not play
        self._heatmaps_due = False  # a scrub's heatmaps wait for it to rest (see flush)
        self._first_draw = False  # a recording was loaded: its first drawing may make models (ticks, hovers)
        self._progress: deque[tuple[float, float, float]] = deque(maxlen=200)
        self._on_branch, self._on_open, self._on_shown = on_branch, on_open, on_shown
        self.kpi_row = KpiRow()
        self.kpi_row.pane.css_classes = ["replay-kpis"]
        self.series = SeriesAt(REPLAY_PREFIX, WINDOW)
        self.events = EventLog()
        self.placement_tab = PlacementTab(prefix=REPLAY_PREFIX, gpu_on_demand=True)  # no GPU figure for a cluster without
        self.placement, self.scores = self.placement_tab.placement, self.placement_tab.scores
        self.view = recording_view_default()
        self.tracker = KpiTracker(self.view)
        self.feed: Feed | None = None
        self._plotted: tuple[str, ...] = ()

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
        self.cursor = cursor(0.0)
        self.strip: TimelineFigure | None = None  # made with the first recording
        self.timeline = pn.Column(sizing_mode="stretch_width", min_height=TIMELINE_HEIGHT, margin=0)
        # The label is the server's: it names the time the views show (set with them in :meth:`flush`), not where the
        # handle is being dragged to, so that label, views and Branch button never disagree.
        self.slider = pn.widgets.FloatSlider(
            label=scrub_label(0.0),
            start=0.0,
            end=1.0,
            step=5.0,
            value=0.0,
            show_value=False,
            tooltips=False,
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
        self.view = recording_view(rec)  # the recording's world: its plots, KPIs and tables
        self._plotted = tuple(t for t in (self.view.sample_table, "events") if t in self.frames)
        plotted = {t: self.frames[t] for t in self._plotted}
        if "vm-series" in self.view.views:  # the live tab's plain Bokeh figures: no HoloViews to render
            self.series.load_vm(plotted, self.interval)
        elif "functions" in self.view.views:  # the Functions tab's
            self.series.load_functions(plotted)
        elif self.view.series and all(spec.table == "samples" for spec in self.view.series):  # the GPU tab's
            self.series.load_declared(plotted, self.view.series)
        else:
            self.series.load(time_plots(self.view, self.interval, REPLAY_PREFIX), plotted, self.view.sample_table)
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
        self._first_draw = True

    def _open_example(self) -> None:
        path = self.examples.value
        if path is None:
            return
        # A button's click is a Bokeh event, which Panel handles without the session's document lock and without a
        # hold: a Bokeh model changed there directly (a figure's data, a title themed by a HoloViews render) raised
        # "_pending_writes should be non-None" and the opening stopped half way. Held, the changes go out as one patch.
        with pn.io.hold():
            self._on_open(load_recording(path))

    # -- the replay's clock (the TabView protocol of a tab that runs its own clock) --------------------------------
    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        """Move to a time asked for, or on by ``speed`` x ``wall_dt`` while playing (the views follow at the next flush)."""
        if self.rec is None:
            return
        if playing and not self._was_playing and self.at >= self.until and self._target is None:
            self._target = 0.0  # Play at the end starts again from the beginning, as a player does
        self._was_playing = playing
        self._sought = self._target is not None
        if self._target is not None:
            self.at, self._target = min(max(self._target, 0.0), self.until), None
        elif playing and self.at < self.until:
            step = speed * min(max(wall_dt, 0.0), MAX_TICK_GAP)
            before, self.at = self.at, min(self.until, self.at + step)
            self._progress.append((time.perf_counter(), wall_dt, self.at - before))

    @property
    def streams_only(self) -> bool:
        """Will this tick's drawing only set data and values (no model made: the tick walks no model graph)? Yes for a
        scrub, and for every tick after a recording's first drawing: the heatmaps are Bokeh figures made once whose data is
        replaced (``dashboard.heatfigures``), so playing and a rested scrub's heatmaps make no model either. A scrub
        before the first drawing is done streams too (its heatmaps wait for the rest): frozen, every scrub step paid a
        walk of the page's models (~80 ms) until the scrub rested."""
        return not self._first_draw or self._target is not None

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
        self.tracker = KpiTracker(self.view)
        tables = tuple(dict.fromkeys((*self.tracker.tables, "events", "nodes", "placements", "breakdowns")))
        self.feed = Feed(FramesSource(self.frames), tables=tables)
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
        self.series.show(at)
        self.feed.source = FramesSource(cut(self.frames, at))  # every recorded table is in time order: a cut is a prefix
        new = self.feed.poll()
        self.events.push(new.get("events", pd.DataFrame()))
        self.placement_tab.push(new, at)
        self.tracker.push(new)
        self._shown = at

    def flush(self, now: float, budget: float = math.inf) -> bool:
        """Draw the state at the scrubbed time within ``budget`` wall seconds (True when all is drawn); the cursor, slider
        and KPIs follow."""
        if self.rec is None:
            return True
        at = self.at
        moved = at != self._shown
        self._feed_to(at)  # here, not in tick: the dashboard draws inside one freeze of the page's models
        self.series.flush(budget)
        self.events.flush()
        if self.placement_tab.visible:
            if moved and self._sought and math.isfinite(budget):
                self._heatmaps_due = True  # a scrub moves plots, cursor and KPIs at once; the heatmaps follow when it rests
            elif moved or self._heatmaps_due:
                self.placement_tab.flush(at)
                self._heatmaps_due = False
        done = not self._heatmaps_due
        self._first_draw = self._first_draw and not done
        self.kpi_row.update({**self.tracker.kpis(at), "time": at}, view=self.view)
        if self.cursor.location != at:
            self.cursor.location = at
        if self.slider.value != at:
            self._setting_slider = True
            try:
                self.slider.value = at
            finally:
                self._setting_slider = False
        if self.slider.label != scrub_label(at):
            self.slider.label = scrub_label(at)
        self.branch.label = f"Branch here ({plots.hms(at)})"
        if moved and self._on_shown is not None:
            self._on_shown(self.rec, at)  # a branch of this time may be re-simulated ahead of the click
        return done

    # -- widgets -------------------------------------------------------------------------------------------------
    def _draw_timeline(self, marks: pd.DataFrame) -> None:
        """The recording's markers, and a cursor at the scrubbed time that moves alone; a click jumps there. The strip is
        made with the first recording and kept: another recording replaces its data."""
        if self.strip is None:
            self.strip = TimelineFigure(f"{REPLAY_PREFIX}-timeline")
            self.strip.figure.on_event(Tap, lambda e: self.seek(e.x) if e.x is not None else None)
            self.timeline[:] = [pn.pane.Bokeh(self.strip.figure, sizing_mode="stretch_width", min_height=TIMELINE_HEIGHT)]
        self.strip.show(marks, self.until)
        self.cursor = self.strip.cursor

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
