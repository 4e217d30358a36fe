"""Per-device GPU use: the cluster's GPU nodes (grouped by model) x their devices, milli-GPU taken, as an ``hv.Image``.

Fed from the recorded tables only: the ``nodes`` table (``gpu_count``, ``gpu_model``) lays out the grid, each
``placements`` bind adds the pod's ``gpu_milli`` to the devices of its ``gpu_devices`` bit mask, each release or
loss takes it away; so a live session, a finished run and a recording draw the same. Shown only when the
cluster has GPUs. A numpy grid rendered as an image (not a long-form heat map): ~10 ms per update.
"""

from __future__ import annotations

from typing import Any

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn

#: The bokeh source of the image, by name (tests find it in the page).
SOURCE_NAME = "gpu-devices"


def _name_source(plot: Any, element: Any) -> None:
    plot.handles["source"].name = SOURCE_NAME


def _device_hover_hook(labels: list[str]) -> Any:
    """The hover names the node (row -> its name and GPU model, bottom row first) and the device under the mouse."""

    def hook(plot: Any, element: Any) -> None:
        from bokeh.models import CustomJSHover, HoverTool

        for tool in plot.state.tools:
            if isinstance(tool, HoverTool):
                tool.formatters = {
                    "$y": CustomJSHover(args={"labels": labels}, code="return labels[Math.floor(value)] ?? '';"),
                    "$x": CustomJSHover(code="return 'GPU ' + Math.floor(value);"),
                }

    return hook


class GpuDeviceView:
    """GPU nodes x devices: the share of each device in use (empty: 0, whole: 1; cells past a node's devices are blank)."""

    def __init__(self) -> None:
        self.pipe = hv.streams.Pipe(data=self._empty())
        self.image = hv.DynamicMap(self._image, streams=[self.pipe])
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        self.layout = pn.Column(
            pn.pane.Markdown("### GPU devices in use"),
            self.summary,
            pn.pane.HoloViews(self.image, sizing_mode="stretch_width"),
            visible=False,
            sizing_mode="stretch_width",
        )
        self.clear()

    def clear(self) -> None:
        self.rows: np.ndarray | None = None  # node position -> grid row (-1: no GPU)
        self.used = np.zeros((0, 0))
        self.models: list[str] = []
        self.names: list[str] = []
        self.changed = False

    @staticmethod
    def _empty() -> tuple[np.ndarray, list[str], list[str]]:
        return np.zeros((1, 1)), [], []

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
        """Send the grid to the plot if it changed."""
        if self.changed and self.used.size:
            self.pipe.send((self.used.copy(), list(self.models), list(self.names)))
            in_use = np.nansum(self.used)
            devices = int(np.isfinite(self.used).sum())
            shared = int(((self.used > 0) & (self.used < 1)).sum())
            self.summary.object = (
                f"{len(self.models)} GPU nodes, {devices} devices: {in_use:.2f} GPUs in use "
                f"({in_use / max(devices, 1):.1%}); {shared} devices shared, {int((self.used == 0).sum())} idle"
            )
        self.changed = False

    def _image(self, data: tuple[np.ndarray, list[str], list[str]]) -> hv.Image:
        grid, models, names = data
        n, width = grid.shape
        edges = [i for i in range(1, len(models)) if models[i] != models[i - 1]]
        starts = [0, *edges]
        # row 0 of the grid on top: an hv.Image's first array row is its top
        ticks = [(n - (a + b) / 2, models[a]) for a, b in zip(starts, [*edges, n], strict=True)] if models else []
        return hv.Image(grid, bounds=(0, 0, width, n), kdims=["device", "node"], vdims=["GPUs in use"]).opts(
            cmap="viridis",
            clim=(0, 1),
            colorbar=True,
            clipping_colors={"NaN": "#f0f0f0"},
            height=360,
            responsive=True,
            xticks=[(d + 0.5, str(d)) for d in range(width)],
            yticks=ticks if 0 < len(ticks) <= 40 else None,
            xlabel="GPU device",
            ylabel="GPU nodes by model",
            tools=["hover"],
            hover_tooltips=[("node", "$y{custom}"), ("device", "$x{custom}"), ("GPUs in use", "@image{0.[000]}")],
            toolbar="right",
            hooks=[_name_source, _device_hover_hook([f"{n} ({m})" for n, m in zip(names, models, strict=True)][::-1])],
            framewise=True,  # each new grid brings its own extent and ticks
        )
