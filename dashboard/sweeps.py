"""The Sweeps tab: start a sweep file on a LocalCluster (or open a kept dataset), watch its points arrive, open one live.

Plots (HoloViews, fed through one ``Pipe`` as runs arrive): the Pareto front of two KPIs (p95 wait against
VM-hours by default; one point per design point, the mean over its seeds, the front highlighted and joined,
single runs in grey), a heatmap of a KPI over two parameters (coloured points for random/LHS designs), and
box plots of a KPI over the seeds of every point. Clicking a point selects it; **Open in the Live tab** runs
that point's parameters with the chosen seed as the live session (from its kept recording, when the sweep
kept recordings). The sweep runs in a thread of the server; the page polls what it has appended.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import holoviews as hv
import pandas as pd
import panel as pn
import param

from dashboard.session import LiveSession
from dashboard.tabs import TabBase
from engine import (
    Scenario,
    Simulation,
    SweepRun,
    kpi_columns,
    list_datasets,
    list_sweeps,
    load_sweep,
    parameter_columns,
    pareto_front,
    plan_sweep,
    read_sweep,
)

hv.extension("bokeh", logo=False)

#: The sweep files offered (``SCALELAB_SWEEPS_DIR`` overrides it).
SWEEP_FILES = Path(__file__).resolve().parents[1] / "data" / "sweeps"
#: Where the tab keeps the datasets of the sweeps it starts (``SCALELAB_SWEEPS_OUT`` overrides it).
OUT_ROOT = Path(__file__).resolve().parents[1] / "out" / "sweeps"
#: Every explorer of this process (the browser tests look inside).
EXPLORERS: weakref.WeakSet[SweepExplorer] = weakref.WeakSet()
#: KPIs the Pareto plot starts with, when the sweep collects them.
DEFAULT_AXES = ("vm_hours", "wait_p95")
FRONT_COLOR, POINT_COLOR, RUN_COLOR = "#d62728", "#1f77b4", "#bbbbbb"


class BackgroundSweep:
    """A sweep run in a thread of the server, on its own LocalCluster (or in that thread when ``workers`` is 0).

    The thread only appends to ``rows`` and replaces ``progress`` under a lock; the page reads them with
    :meth:`poll`, so no widget is touched from the thread.
    """

    def __init__(self, runner: SweepRun, workers: int):
        self.runner = runner
        self.workers = workers
        self.error: str | None = None
        self.finished = False
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._progress = dataclasses.replace(runner.progress)
        runner.on_progress = self._on_progress
        self._thread = threading.Thread(target=self._body, name=f"sweep-{runner.plan.name}", daemon=True)

    def start(self) -> BackgroundSweep:
        self._thread.start()
        return self

    def _on_progress(self, progress: Any, row: dict[str, Any] | None) -> None:
        with self._lock:
            self._progress = dataclasses.replace(progress)
            if row is not None:
                self._rows.append(row)

    def _body(self) -> None:
        try:
            if self.workers == 0:
                self.runner.run()
                return
            from distributed import Client, LocalCluster

            with (
                LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
                Client(cluster) as client,
            ):
                self.runner.client = client
                self.runner.run()
        except Exception as err:  # noqa: BLE001 - shown in the tab; the runs kept so far stay kept
            self.error = f"{type(err).__name__}: {err}"
        finally:
            self.finished = True

    def poll(self) -> tuple[list[dict[str, Any]], Any]:
        """Rows appended since the last poll, and the progress now."""
        with self._lock:
            rows, self._rows = self._rows, []
            return rows, dataclasses.replace(self._progress)

    def stop(self) -> None:
        self.runner.stop()


def _label(point: int, values: dict[str, Any]) -> str:
    return f"#{point} " + ", ".join(
        f"{k.split('.', 1)[-1]}={v:g}" if isinstance(v, int | float) else f"{k.split('.', 1)[-1]}={v}" for k, v in values.items()
    )


class SweepExplorer(pn.viewable.Viewer):
    """Start a sweep file or open a kept dataset; plot its KPIs as runs arrive; open a point as the live session."""

    sweep = param.Selector(default=None, objects=[], doc="A sweep file of data/sweeps/.")
    workers = param.Integer(2, bounds=(0, 64), doc="Worker processes of the LocalCluster (0: run in the server's thread).")
    dataset = param.Selector(default=None, objects=[], doc="A dataset kept by an earlier sweep.")
    x_kpi = param.Selector(default=None, objects=[], doc="The Pareto plot's x axis (minimised).")
    y_kpi = param.Selector(default=None, objects=[], doc="The Pareto plot's y axis (minimised).")
    heat_x = param.Selector(default=None, objects=[], doc="The heatmap's x parameter.")
    heat_y = param.Selector(default=None, objects=[], doc="The heatmap's y parameter.")
    heat_kpi = param.Selector(default=None, objects=[], doc="The KPI the heatmap colours by (mean over seeds).")
    box_kpi = param.Selector(default=None, objects=[], doc="The KPI of the box plots over seeds.")
    open_seed = param.Selector(default=None, objects=[], doc="The seed the selected point opens with.")
    out_root = param.String(default="", doc="Directory of the datasets this tab writes and lists.")
    sweep_dir = param.String(default="", doc="Directory of the sweep files offered (default data/sweeps).")

    def __init__(self, live: LiveSession | None = None, on_open: Callable[[], None] | None = None, **params: Any):
        super().__init__(**params)
        self.live = live
        self.on_open = on_open
        if not self.out_root:
            self.out_root = os.environ.get("SCALELAB_SWEEPS_OUT", str(OUT_ROOT))
        if not self.sweep_dir:
            self.sweep_dir = os.environ.get("SCALELAB_SWEEPS_DIR", str(SWEEP_FILES))
        names = list(list_sweeps(Path(self.sweep_dir)))
        self.param.sweep.objects = names
        self.sweep = "quick-look" if "quick-look" in names else (names[0] if names else None)
        self.running: BackgroundSweep | None = None
        self.runs = pd.DataFrame()
        self.means = pd.DataFrame()
        self.sweep_name = ""
        self.design = "grid"
        self.selected: int | None = None
        self._callback = None
        self._adopting = False
        self.parameters: list[str] = []
        self.kpis: list[str] = []
        self.pipe = hv.streams.Pipe(data=None)

        self.status = pn.pane.Markdown(
            "Pick a sweep file and start it, or open a kept dataset.", css_classes=["sweep-status"], margin=(0, 10)
        )
        self.progress = pn.indicators.Progress(
            value=0, max=1, bar_color="success", sizing_mode="stretch_width", css_classes=["sweep-progress"]
        )
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.start_button = pn.widgets.Button(label="Start sweep", color="primary", css_classes=["sweep-start"])
        self.start_button.on_click(lambda e: self.start_sweep())
        self.stop_button = pn.widgets.Button(label="Stop", color="warning", disabled=True, css_classes=["sweep-stop"])
        self.stop_button.on_click(lambda e: self.stop_sweep())
        self.load_button = pn.widgets.Button(label="Open dataset", color="default", css_classes=["sweep-load"])
        self.load_button.on_click(lambda e: self.load_dataset())
        self.open_button = pn.widgets.Button(label="Open in the Live tab", color="success", disabled=True, css_classes=["sweep-open"])
        self.open_button.on_click(lambda e: self.open_selected())
        self.point_info = pn.pane.Markdown("Click a point of the Pareto plot to select it.", css_classes=["sweep-point"])
        self.plots = pn.Column(sizing_mode="stretch_width")
        w = {"sizing_mode": "stretch_width"}
        self.controls = pn.FlexBox(
            pn.Column(
                pn.widgets.Select.from_param(self.param.sweep, **w),
                pn.widgets.IntInput.from_param(self.param.workers, **w),
                pn.Row(self.start_button, self.stop_button),
                width=300,
            ),
            pn.Column(pn.widgets.Select.from_param(self.param.dataset, **w), self.load_button, width=300),
            pn.Column(self.status, self.progress, min_width=300, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
        self.body = pn.Column(sizing_mode="stretch_width")  # axes, plots and the point panel: built with the first data
        self.layout = pn.Column(self.controls, self.alert, self.body, sizing_mode="stretch_width")
        self.refresh_datasets()
        EXPLORERS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def __panel__(self) -> pn.viewable.Viewable:
        pn.state.onload(self._start_polling)
        return self.layout

    def _start_polling(self) -> None:
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.poll, period=400)
            try:
                pn.state.on_session_destroyed(lambda ctx: self.close())
            except Exception:  # noqa: BLE001 - no server session (a notebook)
                pass

    def close(self) -> None:
        """Stop polling and the sweep (the runs kept so far stay in the dataset)."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self.stop_sweep()

    def refresh_datasets(self) -> None:
        names = list(list_datasets(self.out_root))
        self.param.dataset.objects = names
        if self.dataset not in names:
            self.dataset = names[0] if names else None

    # -- starting, stopping, loading -------------------------------------------------------------
    def start_sweep(self) -> None:
        """Validate the chosen sweep file (a bad one is shown, nothing runs), then run it in the background."""
        if self.running is not None and not self.running.finished:
            return
        try:
            spec = load_sweep(Path(self.sweep_dir) / f"{self.sweep}.yaml")
            runner = SweepRun(plan_sweep(spec), Path(self.out_root) / spec.name)
        except ValueError as err:  # SweepError, ScenarioError, ParamError: one line
            self._show_error(str(err))
            return
        self.alert.visible = False
        self._adopt(runner.frame(), spec.name, spec.design, spec.parameters, list(spec.kpis))  # runs kept from before show at once
        self.running = BackgroundSweep(runner, self.workers).start()
        self.start_button.disabled, self.stop_button.disabled = True, False
        self.status.object = (
            f"**{spec.name}**: starting {'a LocalCluster of ' + str(self.workers) + ' workers' if self.workers else 'in-process'} ..."
        )

    def stop_sweep(self) -> None:
        if self.running is not None:
            self.running.stop()

    def load_dataset(self) -> None:
        """Show a kept dataset (finished, or still being written by another process: Open again to refresh)."""
        self.refresh_datasets()
        if self.dataset is None:
            self._show_error(f"no sweep datasets in {self.out_root}")
            return
        try:
            df = read_sweep(Path(self.out_root) / self.dataset)
        except ValueError as err:
            self._show_error(str(err))
            return
        self.alert.visible = False
        design = df.attrs.get("spec", {}).get("design", "grid")
        self._adopt(df, df.attrs.get("name", self.dataset), design if isinstance(design, str) else design.get("kind", "grid"))
        self.progress.max, self.progress.value = max(1, len(df)), len(df)
        self.status.object = f"**{self.sweep_name}**: {len(df)} runs kept in `{Path(self.out_root) / self.dataset}`"

    def _show_error(self, message: str) -> None:
        self.alert.object, self.alert.visible = message, True

    # -- data ------------------------------------------------------------------------------------
    def _adopt(self, df: pd.DataFrame, name: str, design: str, parameters: list[str] | None = None, kpis: list[str] | None = None) -> None:
        """Take a new frame of runs: set the selectors from its columns and rebuild the plots."""
        self.sweep_name, self.design = name, design
        self.parameters = parameters if parameters is not None else parameter_columns(df)
        self.kpis = [k for k in (kpis if kpis is not None else kpi_columns(df)) if k not in ("policy",)]
        numeric = [k for k in self.kpis if k not in df.columns or pd.api.types.is_numeric_dtype(df[k])]
        self.runs = df.reset_index(drop=True)
        self.selected = None
        self.open_button.disabled = True
        self.point_info.object = "Click a point of the Pareto plot to select it."
        self._adopting = True  # one rebuild at the end, not one per selector
        try:
            for n in ("x_kpi", "y_kpi", "heat_kpi", "box_kpi"):
                self.param[n].objects = numeric
            x, y = DEFAULT_AXES if all(k in numeric for k in DEFAULT_AXES) else ((numeric + numeric)[:2] if numeric else (None, None))
            hx = self.parameters[0] if self.parameters else None
            self.param.heat_x.objects = self.param.heat_y.objects = self.parameters
            self.param.update(
                x_kpi=x, y_kpi=y, heat_kpi=y, box_kpi=y, heat_x=hx, heat_y=self.parameters[1] if len(self.parameters) > 1 else hx
            )
        finally:
            self._adopting = False
        self._recompute()
        self._build_plots()

    def _recompute(self) -> None:
        """Means over seeds per point, in the order points first arrived (so a selected point keeps its index)."""
        runs = self.runs
        if runs.empty:
            self.means = pd.DataFrame(columns=["point", "label", *self.parameters, "runs", *self.kpis, "on_front"])
            return
        figures = [k for k in self.kpis if k in runs.columns and pd.api.types.is_numeric_dtype(runs[k])]
        order = list(dict.fromkeys(runs["point"]))
        grouped = runs.groupby("point", sort=False)
        means = grouped[figures].mean()
        means["runs"] = grouped.size()
        first = grouped[self.parameters].first()
        means = pd.concat([first, means], axis=1).loc[order].reset_index()
        means.insert(
            1,
            "label",
            [_label(p, {k: r[k] for k in self.parameters}) for p, r in zip(means["point"], means.to_dict("records"), strict=True)],
        )
        means["on_front"] = pareto_front(means, self.x_kpi, self.y_kpi) if self.x_kpi and self.y_kpi else False
        self.means = means

    def poll(self) -> None:
        """The periodic callback: take the rows the sweep appended, update progress and (if anything arrived) the plots."""
        bg = self.running
        if bg is None:
            return
        finished = bg.finished  # read before the rows: once it is set, every row and the last progress are in
        rows, progress = bg.poll()
        if rows:
            self.runs = pd.concat([self.runs, pd.DataFrame(rows)], ignore_index=True) if len(self.runs) else pd.DataFrame(rows)
            self._recompute()
            self.pipe.send(self.runs)
            if len(self.plots) > 1:
                self.heat_pane.object, self.box_pane.object = self._heatmap(), self._boxes()
        self.progress.max = max(1, progress.total)
        self.progress.value = progress.skipped + progress.done + progress.failed
        self.status.object = f"**{self.sweep_name}**: {progress.line()}"
        if finished:
            self.running = None
            self.start_button.disabled, self.stop_button.disabled = False, True
            done = "stopped" if progress.interrupted else "finished"
            self.status.object = f"**{self.sweep_name}** {done}: {progress.line()} · kept in `{bg.runner.dataset.root}`"
            if bg.error:
                self._show_error(bg.error)
            elif bg.runner.errors:
                self._show_error(
                    f"{len(bg.runner.errors)} runs failed (start again to retry them): {next(iter(bg.runner.errors.values())).strip().splitlines()[-1]}"
                )
            self.refresh_datasets()

    # -- plots -----------------------------------------------------------------------------------
    @param.depends("x_kpi", "y_kpi", "heat_x", "heat_y", "heat_kpi", "box_kpi", watch=True)
    def _axes_changed(self) -> None:
        if self._adopting:
            return
        self._recompute()
        self._build_plots()

    def _build_body(self) -> None:
        """The axis selectors, the plots and the point panel: only once there is a sweep to show (a lighter page until then)."""
        if len(self.body):
            return
        # flex boxes, not rows: the selectors, plots and point panel wrap onto the next line in a narrow window (rows
        # overflowed the page at 1400 px)
        axes = pn.FlexBox(
            *(
                pn.widgets.Select.from_param(self.param[n], width=170)
                for n in ("x_kpi", "y_kpi", "heat_x", "heat_y", "heat_kpi", "box_kpi")
            ),
            sizing_mode="stretch_width",
        )
        point = pn.Column(self.point_info, pn.widgets.Select.from_param(self.param.open_seed), self.open_button, width=320)
        self.body[:] = [axes, pn.FlexBox(self.plots, point, sizing_mode="stretch_width")]

    def _build_plots(self) -> None:
        """New DynamicMaps for the chosen axes (data updates go through the pipe and keep zoom and selection)."""
        self._build_body()
        if not self.x_kpi or not self.y_kpi:
            self.plots[:] = [pn.pane.Markdown("This sweep has no numeric KPI to plot.")]
            return
        self.pipe = hv.streams.Pipe(data=self.runs)
        points = hv.DynamicMap(self._points, streams=[self.pipe])
        self.selection = hv.streams.Selection1D(source=points)
        self.selection.add_subscriber(self._selected)
        pareto = (hv.DynamicMap(self._singles, streams=[self.pipe]) * hv.DynamicMap(self._front, streams=[self.pipe]) * points).opts(
            width=620,
            height=400,
            title=f"{self.sweep_name}: {self.y_kpi} vs {self.x_kpi}, mean per point (front in red)",
            show_legend=False,
        )
        # categorical axes (grid values, point labels) grow as points arrive, which a DynamicMap's axes do not follow:
        # these two are redrawn whole when runs arrive (a few dozen cells or boxes)
        self.heat_pane = pn.pane.HoloViews(self._heatmap(), linked_axes=False)
        self.box_pane = pn.pane.HoloViews(self._boxes(), linked_axes=False)
        self.plots[:] = [
            pn.pane.HoloViews(pareto, css_classes=["sweep-pareto"], linked_axes=False),
            pn.FlexBox(self.heat_pane, self.box_pane, sizing_mode="stretch_width"),
        ]

    def _singles(self, data: pd.DataFrame | None) -> hv.Scatter:
        df = self.runs if data is None else data
        cols = [self.x_kpi, self.y_kpi, "point", "seed"]
        frame = df[cols] if len(df) else pd.DataFrame(columns=cols)
        return hv.Scatter(frame, self.x_kpi, [self.y_kpi, "point", "seed"]).opts(color=RUN_COLOR, size=4, tools=["hover"], framewise=True)

    def _front(self, data: pd.DataFrame | None) -> hv.Curve:
        m = self.means
        front = m[m["on_front"].astype(bool)].sort_values(self.x_kpi) if len(m) else pd.DataFrame(columns=[self.x_kpi, self.y_kpi])
        return hv.Curve(front, self.x_kpi, self.y_kpi).opts(color=FRONT_COLOR, line_width=2, interpolation="steps-post", framewise=True)

    def _points(self, data: pd.DataFrame | None) -> hv.Scatter:
        m = self.means
        vdims = [self.y_kpi, "label", "runs", "on_front", *[p for p in self.parameters if p not in (self.x_kpi, self.y_kpi)]]
        frame = m[[self.x_kpi, *vdims]].copy() if len(m) else pd.DataFrame(columns=[self.x_kpi, *vdims])
        frame["on_front"] = frame["on_front"].astype(bool)
        return hv.Scatter(frame, self.x_kpi, vdims).opts(
            color=hv.dim("on_front").categorize({True: FRONT_COLOR, False: POINT_COLOR}, default=POINT_COLOR),
            size=11,
            line_color="black",
            tools=["hover", "tap"],
            nonselection_alpha=0.35,
            selection_line_width=3,
            xlabel=self.x_kpi,
            ylabel=self.y_kpi,
            framewise=True,
        )

    def _heatmap(self) -> hv.Element:
        m, hx, hy, k = self.means, self.heat_x, self.heat_y, self.heat_kpi
        opts = {
            "width": 420,
            "height": 340,
            "cmap": "viridis",
            "colorbar": True,
            "tools": ["hover"],
            "title": f"mean {k}",
        }
        if not hx or not k or hx == hy:
            return hv.Points(pd.DataFrame({"x": [], "y": []}), ["x", "y"]).opts(
                title="the heatmap needs two parameters", width=420, height=340
            )
        if not len(m):
            return hv.HeatMap(pd.DataFrame(columns=[hx, hy, k]), [hx, hy], k).opts(**opts)
        if self.design == "grid":
            cells = m.groupby([hx, hy], sort=True)[k].mean().reset_index()
            cells[hx], cells[hy] = cells[hx].astype(str), cells[hy].astype(str)  # grid values as categories, in order
            return hv.HeatMap(cells, [hx, hy], k).opts(**opts)
        return hv.Points(m, [hx, hy], [k, "label"]).opts(color=k, size=12, **opts)  # sampled designs: one dot per point

    def _boxes(self) -> hv.BoxWhisker:
        df, k = self.runs, self.box_kpi
        title = f"{k} over seeds, per point"
        if not len(df) or not k:
            return hv.BoxWhisker(pd.DataFrame({"point": [], k or "kpi": []}), "point", k or "kpi").opts(width=460, height=340, title=title)
        frame = pd.DataFrame({"point": "#" + df["point"].astype(str), k: df[k].astype(float), "order": df["point"]}).sort_values("order")
        return hv.BoxWhisker(frame, "point", k).opts(width=460, height=340, title=title, xrotation=90, box_fill_color=POINT_COLOR)

    # -- a point -----------------------------------------------------------------------------------
    def _selected(self, index: list[int]) -> None:
        if not index or index[0] >= len(self.means):
            return
        self.select_point(int(self.means.iloc[index[0]]["point"]))

    def select_point(self, point: int) -> None:
        """Show a point's parameters, mean KPIs and runs, and offer its seeds to open with."""
        self.selected = point
        runs = self.runs[self.runs["point"] == point].sort_values("seed")
        row = self.means[self.means["point"] == point].iloc[0]
        params = "\n".join(f"* `{p}` = **{row[p]}**" for p in self.parameters)
        kpis = " · ".join(f"{k} {row[k]:.3g}" for k in self.kpis if k in row and isinstance(row[k], int | float))
        front = " (on the front)" if bool(row.get("on_front", False)) else ""
        self.point_info.object = f"### Point #{point}{front}\n{params}\n\nmean of {int(row['runs'])} runs: {kpis}"
        seeds = [int(s) for s in runs["seed"]]
        self.param.open_seed.objects = seeds
        self.open_seed = seeds[0]
        self.open_button.disabled = self.live is None

    def point_recording(self, point: int, seed: int) -> dict[str, Any]:
        """The recording to open a run with: the one kept by the sweep, or a fresh one of its scenario and seed at t=0."""
        row = self.runs[(self.runs["point"] == point) & (self.runs["seed"] == seed)].iloc[0]
        kept = row.get("recording")
        if isinstance(kept, str) and kept:
            rec = json.loads(kept)
        else:
            scenario = Scenario.from_dict(json.loads(row["scenario_json"]), origin=f"{self.sweep_name} point {point}")
            rec = Simulation(scenario, seed=seed).recording()
        rec = copy.deepcopy(rec)
        # its own name: the live session must not take this point for the scenario file it came from
        rec["scenario"]["name"] = f"{self.sweep_name} #{point}"
        rec["scenario"]["description"] = f"point #{point} of sweep {self.sweep_name}: " + ", ".join(
            f"{p}={row[p]}" for p in self.parameters
        )
        return rec

    def open_selected(self) -> None:
        """Make the selected point (with the chosen seed) the live session, and show it."""
        if self.selected is None or self.live is None or self.open_seed is None:
            return
        try:
            self.live.load_recording(self.point_recording(self.selected, int(self.open_seed)))
        except ValueError as err:
            self._show_error(f"point #{self.selected} not opened: {err}")
            return
        self.live.playing = True
        if self.on_open is not None:
            self.on_open()


class SweepsTab(SweepExplorer, TabBase):
    """The Sweeps tab of the dashboard (``dashboard.tabtable.TABS``): the explorer, which polls its own sweep; the live
    run's rows are not its business, and a reset of the live run leaves a sweep and its plots as they are."""

    tables: tuple[str, ...] = ()
