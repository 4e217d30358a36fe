"""dashboard.keepalive_plots: the keep-alive trade-off table drawn as one curve per policy family, points labelled."""

from __future__ import annotations

import holoviews as hv
import pandas as pd
import pytest

from dashboard.keepalive_plots import tradeoff_plot

TABLE = pd.DataFrame(
    {
        "policy": ["fixed-10", "fixed-60", "hybrid-1h", "hybrid-4h"],
        "p75_cold_start_pct": [12.0, 5.0, 4.0, 3.0],
        "wasted_memory_norm": [1.0, 3.2, 0.8, 1.1],
    }
)


def test_one_curve_per_family_sorted_by_memory() -> None:
    plot = tradeoff_plot(TABLE)
    curves = [el for el in plot.values() if isinstance(el, hv.Curve)]
    assert sorted(c.label for c in curves) == ["fixed", "hybrid"]
    fixed = next(c for c in curves if c.label == "fixed")
    assert fixed.data["policy"].tolist() == ["fixed-10", "fixed-60"]
    labels = [el for el in plot.values() if isinstance(el, hv.Labels)]
    assert sorted(p for lab in labels for p in lab.data["policy"]) == sorted(TABLE["policy"])
    fig = hv.render(plot, backend="bokeh")
    assert fig.xaxis[0].axis_label.startswith("wasted memory time") and "cold starts" in fig.yaxis[0].axis_label


def test_refuses_a_table_without_its_columns() -> None:
    with pytest.raises(ValueError, match="wasted_memory_norm"):
        tradeoff_plot(TABLE.drop(columns=["wasted_memory_norm"]))
