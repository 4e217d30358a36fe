"""The What-if tab: open a table ``python -m engine whatif ... --out FILE`` wrote and plot actual against recommended replicas.

The file is uploaded in the page (CSV or Parquet), read with ``engine.read_whatif_table`` (its columns and numbers
checked) and drawn by :func:`dashboard.whatif_plots.whatif_plot`: both replica counts as steps over time, a marker at
each change of recommendation with the rule behind it on hover. A file that cannot be shown gets one line in the tab;
nothing of an upload reaches the server log. The tab reads no table of the live run.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import panel as pn

from dashboard.context import AppContext
from dashboard.plothooks import name_hook
from dashboard.tabs import TabBase
from dashboard.whatif_plots import whatif_plot
from engine import ParamError, read_whatif_table

#: How to make a file to open here (docs/how-to/whatif.md).
HOW = (
    "Open a table written by `python -m engine whatif HISTORY.csv --policy hpa|kpa|keda|queue_drain --out FILE` "
    "(`.csv` or `.parquet`; e.g. `data/whatif/example-hpa.csv --policy hpa --out out/whatif-hpa.csv`) to see the replicas "
    "you had beside those the policy would have recommended, with the rule behind each change."
)
#: The figure's name in the page's Bokeh document (tests find it by this).
FIGURE = "whatif-replicas"


def read_upload(filename: str, data: bytes) -> pd.DataFrame:
    """The uploaded table, checked; raises :class:`ParamError` with one line naming the file (not a temporary path)."""
    name = Path(filename or "uploaded.csv").name or "uploaded.csv"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            return read_whatif_table(path)
        except ParamError as err:
            raise ParamError(err.field, err.message.replace(f"{tmp}/", "")) from None


def describe(name: str, table: pd.DataFrame) -> str:
    """One line about the table: its rows, its time span, how often the recommendation differs and moves."""
    differs = int((table["recommended"] != table["replicas"]).sum())
    return (
        f"**{name}**: {len(table):,} rows, t = {table['time'].iloc[0]:g} .. {table['time'].iloc[-1]:g} s; recommended differs "
        f"from actual in {differs:,} rows; {int(table['change'].sum()):,} changes of recommendation (hover a marker for its rule)."
    )


class WhatIfTab(TabBase, pn.viewable.Viewer):
    """Upload a whatif table, see both replica lines."""

    def __init__(self, ctx: AppContext | None = None):
        super().__init__()
        self.upload = pn.widgets.FileInput(
            accept=".csv,.parquet",
            multiple=False,
            css_classes=["whatif-load"],
            description="A table written by python -m engine whatif --out (CSV or Parquet)",
        )
        self.upload.param.watch(self._uploaded, "value")
        self.message = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=["whatif-message"])
        self.info = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["whatif-info"])
        self.pane = pn.pane.HoloViews(None, sizing_mode="stretch_width", visible=False)
        self.table: pd.DataFrame | None = None
        self.layout = pn.Column(
            pn.pane.Markdown(HOW, sizing_mode="stretch_width"), self.upload, self.message, self.info, self.pane, sizing_mode="stretch_width"
        )

    def _uploaded(self, event) -> None:
        if event.new:
            self.load(self.upload.filename or "uploaded.csv", event.new)

    def load(self, filename: str, data: bytes) -> bool:
        """Show the table in ``data`` (the bytes of ``filename``); a file that cannot be shown: one line, the plot kept."""
        try:
            table = read_upload(filename, data)
            plot = whatif_plot(table, title=f"{Path(filename).name}: actual and recommended replicas").opts(hooks=[name_hook(FIGURE)])
        except ParamError as err:
            self._refuse(f"Not opened: {err}")
            return False
        except Exception as err:  # noqa: BLE001 - an upload never raises into the server; one line, none of its bytes
            self._refuse(f"Not opened: {Path(filename).name}: {type(err).__name__}; allowed: a table written by whatif --out")
            return False
        self.table = table
        self.message.visible = False
        self.info.object = describe(Path(filename).name, table)
        self.pane.object = plot
        self.pane.visible = True
        return True

    def _refuse(self, line: str) -> None:
        self.message.object = line.splitlines()[0][:400]
        self.message.visible = True

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
