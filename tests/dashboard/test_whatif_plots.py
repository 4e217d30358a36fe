"""dashboard.whatif_plots: the whatif table drawn as actual vs recommended replicas, changes marked with their rule."""

from __future__ import annotations

from pathlib import Path

import holoviews as hv
import pandas as pd
import pytest

from dashboard.whatif_plots import whatif_plot
from engine.runs.whatif import read_history, whatif

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "whatif" / "example-hpa.csv"


def test_plot_of_the_example_table() -> None:
    history, metric = read_history(EXAMPLE, "keda")
    table = whatif(history, "keda", metric)
    plot = whatif_plot(table)
    actual, recommended, marks = plot.values()
    assert actual.data["replicas"].tolist() == table["replicas"].tolist()
    assert recommended.data["recommended"].tolist() == table["recommended"].tolist()
    assert len(marks.data) == int(table["change"].sum()) > 0
    assert set(marks.data["rule"]) <= set(table["rule"])
    fig = hv.render(plot, backend="bokeh")
    assert fig.title.text == "Actual and recommended replicas" and fig.yaxis[0].axis_label == "replicas"


def test_plot_refuses_a_table_without_its_columns() -> None:
    with pytest.raises(ValueError, match="missing recommended, rule"):
        whatif_plot(pd.DataFrame({"time": [0.0], "replicas": [1]}))


def test_the_whatif_tab_opens_a_written_table_and_refuses_a_bad_one_in_one_line(tmp_path: Path) -> None:
    from dashboard.whatiftab import WhatIfTab

    history, metric = read_history(EXAMPLE, "hpa")
    table = whatif(history, "hpa", metric)
    tab = WhatIfTab()
    for name in ("w.csv", "w.parquet"):
        path = tmp_path / name
        table.to_parquet(path, index=False) if name.endswith(".parquet") else table.to_csv(path, index=False)
        assert tab.load(name, path.read_bytes())
        assert not tab.message.visible and tab.pane.visible and name in tab.info.object
        assert tab.table["recommended"].tolist() == table["recommended"].tolist()
    shown = tab.pane.object
    bad = table.to_csv(index=False).encode() + b"1e9,2.5,,3,hold,False,x\n"  # a fractional replica count
    assert not tab.load("bad.csv", bad)
    line = tab.message.object
    assert tab.message.visible and len(line.splitlines()) == 1 and "bad.csv: line " in line and "column 'replicas'" in line
    assert str(tmp_path) not in line and "/tmp" not in line
    assert not tab.load("junk.parquet", b"\x00\x01 not parquet")
    assert "junk.parquet" in tab.message.object and len(tab.message.object.splitlines()) == 1
    assert tab.pane.object is shown  # what was shown stays
