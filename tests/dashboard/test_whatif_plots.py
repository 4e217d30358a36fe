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
