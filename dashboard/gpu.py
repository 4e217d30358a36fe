"""Per-device GPU use: the cluster's GPU nodes (grouped by model) x their devices, milli-GPU taken, as a Bokeh image.

Fed from the recorded tables only: the ``nodes`` table (``gpu_count``, ``gpu_model``) lays out the grid, each
``placements`` bind adds the pod's ``gpu_milli`` to the devices of its ``gpu_devices`` bit mask, each release or
loss takes it away; so a live session, a finished run and a recording draw the same. Shown only when the
cluster has GPUs; made on demand (the Replay tab), its figure is made only then (a recording of a cluster without GPUs
pays for no hidden figure: ~50 models a page would build for nothing). A numpy grid in one ``ColumnDataSource`` (named :data:`SOURCE_NAME`), replaced only when a
placement changed it; the hover names the node (and its GPU model) and the device under the mouse.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import ColorBar, ColumnDataSource, CustomJSHover, FixedTicker, HoverTool, LinearColorMapper, Range1d
from bokeh.plotting import figure

#: The bokeh source of the image, by name (tests find it in the page).
SOURCE_NAME = "gpu-devices"


def device_figure(source: ColumnDataSource, node_labels: CustomJSHover, name: str = "gpu-device-heatmap") -> figure:
    """GPU nodes (rows) x devices (columns) of ``source``'s image, share in use 0..1 (blank: no such device)."""
    fig = figure(
        name=name,
        x_range=Range1d(0.0, 1.0),
        y_range=Range1d(0.0, 1.0),
        height=360,
        min_width=300,
        sizing_mode="stretch_width",
        tools="pan,wheel_zoom,box_zoom,reset,save",
        active_scroll=None,
        toolbar_location="right",
        x_axis_label="GPU device",
        y_axis_label="GPU nodes by model",
    )
    fig.toolbar.autohide = True
    fig.grid.visible = False
    mapper = LinearColorMapper(palette="Viridis256", low=0.0, high=1.0, nan_color="#f0f0f0")
    image = fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=source, color_mapper=mapper)
    fig.add_layout(ColorBar(color_mapper=mapper, title="GPUs in use", width=10), "right")
    fig.add_tools(
        HoverTool(
            renderers=[image],
            tooltips=[("node", "$y{custom}"), ("device", "$x{custom}"), ("GPUs in use", "@image{0.[000]}")],
            formatters={"$y": node_labels, "$x": CustomJSHover(code="return 'GPU ' + Math.floor(value);")},
        )
    )
    return fig


class GpuDeviceView:
    """GPU nodes x devices: the share of each device in use (empty: 0, whole: 1; cells past a node's devices are blank)."""

    def __init__(self, on_demand: bool = False) -> None:
        """``on_demand``: the figure is made when a cluster first has GPUs (the Replay tab, whose first drawing is held with
        the tab's models); else at once, so that a live tab that only streams adds no model in a tick."""
        self.source = ColumnDataSource({"image": [], "x": [], "y": [], "dw": [], "dh": []}, name=SOURCE_NAME)
        self.hover_labels = CustomJSHover(args={"labels": []}, code="return labels[Math.floor(value)] ?? '';")
        self.figure: figure | None = None  # made with the first cluster that has GPUs (see :meth:`set_nodes`)
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        self.layout = pn.Column(visible=False, sizing_mode="stretch_width")
        if not on_demand:
            self._make_figure()
        self.clear()

    def _make_figure(self) -> figure:
        """The figure and its heading, made once, when a cluster first has GPUs."""
        self.figure = device_figure(self.source, self.hover_labels)
        self.layout[:] = [
            pn.pane.Markdown("### GPU devices in use"),
            self.summary,
            pn.pane.Bokeh(self.figure, sizing_mode="stretch_width", min_height=360),
        ]
        return self.figure

    def clear(self) -> None:
        self.rows: np.ndarray | None = None  # node position -> grid row (-1: no GPU)
        self.used = np.zeros((0, 0))
        self.models: list[str] = []
        self.names: list[str] = []
        self.changed = False
        if len(self.source.data["image"]):  # a new run: nothing of the old grid stays
            self.source.data = {"image": [], "x": [], "y": [], "dw": [], "dh": []}
        self.hover_labels.args = {"labels": []}

    def set_nodes(self, nodes: pd.DataFrame) -> None:
        """The grid's layout from the ``nodes`` table: GPU nodes by model, then position; one column per device."""
        count = nodes["gpu_count"].to_numpy(dtype=np.int64) if "gpu_count" in nodes else np.zeros(len(nodes), dtype=np.int64)
        gpu = nodes[count > 0].assign(gpu_count=count[count > 0]).sort_values(["gpu_model", "node_index"], kind="stable")
        self.rows = np.full(int(nodes["node_index"].max()) + 1 if len(nodes) else 0, -1, dtype=np.int64)
        self.rows[gpu["node_index"].to_numpy()] = np.arange(len(gpu))
        width = int(gpu["gpu_count"].max()) if len(gpu) else 0
        self.used = np.where(np.arange(width)[None, :] < gpu["gpu_count"].to_numpy()[:, None], 0.0, np.nan)
        self.models = gpu["gpu_model"].astype(str).tolist()
        self.names = gpu["node"].astype(str).tolist() if "node" in gpu else [f"node {i}" for i in gpu["node_index"]]
        if len(gpu) and self.figure is None:
            self._make_figure()
        self.layout.visible = len(gpu) > 0
        self.changed = True

    def push(self, nodes: pd.DataFrame, placements: pd.DataFrame) -> None:
        """New rows of the ``nodes`` and ``placements`` tables."""
        if len(nodes):
            self.set_nodes(nodes)
        if self.rows is None or not len(placements) or "gpu_devices" not in placements or not self.used.size:
            return
        action = placements["action"].astype(str).to_numpy()
        sign = np.where(action == "bind", 1.0, np.where(np.isin(action, ["release", "lost"]), -1.0, 0.0))
        masks = placements["gpu_devices"].to_numpy(dtype=float, na_value=0).astype(np.int64)
        keep = (sign != 0) & (masks > 0)
        if not keep.any():
            return
        rows = self.rows[placements["node_index"].to_numpy(dtype=float, na_value=0).astype(np.int64)[keep]]
        milli = placements["gpu_milli"].to_numpy(dtype=float)[keep] * sign[keep]
        bits = (masks[keep][:, None] >> np.arange(self.used.shape[1])[None, :]) & 1  # which devices each row touches
        r, d = np.nonzero(bits)
        np.add.at(self.used, (rows[r], d), milli[r] / 1000.0)
        self.changed = True

    def render(self) -> None:
        """Replace the image's data if the grid changed (and the rows' names and ticks if the nodes did)."""
        if self.changed and self.used.size and self.figure is not None:
            n, width = self.used.shape
            labels = [f"{name} ({model})" for name, model in zip(self.names, self.models, strict=True)][::-1]  # bottom row first
            if self.hover_labels.args.get("labels") != labels:
                self.hover_labels.args = {"labels": labels}
                edges = [i for i in range(1, n) if self.models[i] != self.models[i - 1]]
                starts = [0, *edges]
                ticks = {n - (a + b) / 2: self.models[a] for a, b in zip(starts, [*edges, n], strict=True)} if 0 < len(starts) <= 40 else {}
                self.figure.yaxis.ticker = FixedTicker(ticks=list(ticks))
                self.figure.yaxis.major_label_overrides = ticks
                self.figure.xaxis.ticker = FixedTicker(ticks=[d + 0.5 for d in range(width)])
                self.figure.xaxis.major_label_overrides = {d + 0.5: str(d) for d in range(width)}
                self.figure.x_range.update(start=0.0, end=float(width))
                self.figure.y_range.update(start=0.0, end=float(n))
            # row 0 of the grid on top: an image's first row is drawn at the bottom; sent as float32 (half the bytes of
            # every placement's resend; a share of milli-GPUs needs 4 digits, float32 holds 7)
            image = self.used[::-1].astype(np.float32)
            self.source.data = {"image": [image], "x": [0.0], "y": [0.0], "dw": [float(width)], "dh": [float(n)]}
            in_use = np.nansum(self.used)
            devices = int(np.isfinite(self.used).sum())
            shared = int(((self.used > 0) & (self.used < 1)).sum())
            self.summary.object = (
                f"{len(self.models)} GPU nodes, {devices} devices: {in_use:.2f} GPUs in use "
                f"({in_use / max(devices, 1):.1%}); {shared} devices shared, {int((self.used == 0).sum())} idle"
            )
        self.changed = False
