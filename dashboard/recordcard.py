"""The sidebar's Recordings card: save the live run (``.scalelab``), load a recording into the Replay tab, export a page.

It owns the Replay and Branch tabs (``dashboard.replay``, ``dashboard.branch``) and notes the live run's control actions
(play, pause, speed) in its recording. An upload the dashboard cannot show gets one line in the page, never an
exception, and nothing of the upload reaches the server log.
"""

from __future__ import annotations

import functools
import io
import logging
import tempfile
from pathlib import Path
from typing import Any

import panel as pn

from dashboard import plots
from dashboard.branch import BranchTab
from dashboard.context import AppContext
from dashboard.export import export_html
from dashboard.offloop import off_loop, submit
from dashboard.recordings import download_name, recording_view
from dashboard.replay import ReplayTab, is_session_file
from dashboard.warmup import BranchWarmup
from engine import InputError, ParamError, Recording, Simulation, load_recording, parse_recording

log = logging.getLogger(__name__)


class Recordings:
    """The dashboard's recorded sessions: the sidebar card, the Replay and Branch tabs, and the control actions noted."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        session = ctx.session
        self.warmup = BranchWarmup(submit)  # a branch of the shown time, re-simulated ahead of the click
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

    @functools.cached_property
    def replay_tab(self) -> ReplayTab:
        """The Replay tab, made when first asked for (shown, or a recording opened): a first page holds neither tab."""
        return ReplayTab(on_branch=self.branch, on_open=self.open, on_shown=self._warm)

    @functools.cached_property
    def branch_tab(self) -> BranchTab:
        """The Branch tab, made when first asked for (a branch was made)."""
        return BranchTab(self.ctx)

    # -- the live run's file and page --------------------------------------------------------------------------------
    def _record(self, folder: Path) -> Path:
        s = self.ctx.session
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
        filename = self.upload.filename or "uploaded recording"
        try:
            # Panel runs a widget's change without a hold when served: every model change of the opening (the Replay
            # tab's models, each plot's data, the tab list) went out as a message of its own, and the browser built the
            # tab and then redrew it when the heatmaps' data came. Held, the page gets one message and builds once.
            with pn.io.hold():
                self.load(filename, event.new)
        except Exception as err:  # noqa: BLE001 - an upload never raises into the server; one line, none of its bytes
            log.warning("upload %s not shown: %s", filename, type(err).__name__)
            self.ctx.say(f"Recording {filename} cannot be shown here: {type(err).__name__}: {str(err)[:200]}")

    def load(self, filename: str, data: bytes) -> None:
        """A ``.scalelab`` opens in the Replay tab; a version-1 JSON recording is re-simulated into the live run."""
        if not is_session_file(data, filename):
            try:
                self.ctx.session.load_recording(parse_recording(data, filename), origin=filename)
            except (InputError, ParamError) as err:  # one line naming the file; the live session carries on
                self.ctx.say(f"Recording not loaded: {err}")
                return
            self.ctx.say("")
            self.ctx.sync_run_card()
            self.ctx.adopt_run()
            self.ctx.show_tab("Live")
            return
        try:
            rec = load_recording(filename, data=data)
        except InputError as err:  # one line naming the file; whatever was shown stays, the live run carries on
            self.ctx.say(f"Recording not loaded: {err}")
            return
        self.open(rec)

    def open(self, rec: Recording) -> None:  # also the Replay tab's example button
        """Show ``rec`` in the Replay tab, at its end; the live run pauses (the replay's clock is the sidebar's)."""
        self.replay_tab.load(rec)
        # its first frame (the heatmaps too) drawn now, before the tab's models are made: they are sent with their data,
        # in the same message, instead of being filled by the next tick's message (a second build in the browser)
        self.replay_tab.flush(self.replay_tab.now())
        self.ctx.say("")
        self.ctx.show_tab("Replay")
        self.ctx.session.playing = False

    def _warm(self, rec: Recording, at: float) -> None:
        """The Replay tab shows ``rec`` at ``at``: start re-simulating it up to there (served only: off the loop)."""
        if self.ctx.served():
            # on the loop's next turn: the warm-up's simulation (in a thread) does not share the interpreter with the
            # making of the Replay tab's models when a recording opens
            pn.state.execute(functools.partial(self.warmup.aim, rec, at), schedule=True)
            if not self.branch_tab.prepared(view := recording_view(rec)):
                # the Branch tab's plots (Bokeh figures, not yet on the page) made now, after this frame, not on the click
                pn.state.execute(lambda: self.branch_tab.prepare(view), schedule=True)

    def branch(self, rec: Recording, at: float) -> None:
        """Make the live run a branch of ``rec`` at ``at``, paused, and show the Branch tab.

        The re-simulation up to ``at`` runs off the event loop (:func:`~dashboard.offloop.off_loop`): the page keeps
        ticking meanwhile, and the branch is swapped in when it is ready."""
        ctx = self.ctx

        def work() -> Simulation:
            run = self.warmup.take(rec, at)  # the warm-up's run when it is of this recording and not past ``at``
            cost = run.sim.estimate(at)
            if cost.long or cost.too_long:
                raise InputError(
                    f"{rec.path.name}: re-simulating it up to {plots.hms(at)} would take {cost.describe()}; allowed: an earlier "
                    "branch time, or Recording.branch in a notebook"
                )
            return run.finish(at)  # the same simulation as rec.branch(at)

        def failed(err: BaseException) -> None:
            ctx.say(f"Branch not made: {err}" if isinstance(err, InputError) else f"Branch not made: {type(err).__name__}: {err}")

        def done(sim: Simulation) -> None:
            if ctx.session.stopped:  # the page went away meanwhile
                return
            ctx.session.playing = False
            ctx.session.continue_from(sim, branched_from=rec)
            ctx.sync_run_card()
            if self.branch_tab.parent is None:  # the tab shows no branch: bound to this one before it joins the page, not after
                self.branch_tab.clear()
            ctx.adopt_run("Branch")  # the new run's controls and tabs now, the Branch tab in front, drawn once
            ctx.say(
                f"Branched from {rec.path.name} at {plots.hms(at)}: change parameters in the sidebar, then press Play. "
                "The Branch tab shows parent and branch from the branch point on."
            )

        if off_loop(work, done, failed):
            ctx.say(f"Branching {rec.path.name} at {plots.hms(at)}: re-simulating up to there (the page stays live meanwhile)...")

    # -- control actions, kept in the live run's recording -------------------------------------------------------
    def _control(self, event: Any) -> None:
        s = self.ctx.session
        if s.sim is None or self.ctx.active_own_clock():
            return
        if event.name == "playing":
            s.sim.note_control("play" if event.new else "pause", float(s.speed))
        else:
            s.sim.note_control("speed", float(event.new))

    def _note_state(self) -> None:
        """A new live run starts in the state the controls are in (playing at some speed, or paused)."""
        s = self.ctx.session
        if s.sim is not None and s.playing:
            s.sim.note_control("play", float(s.speed))
