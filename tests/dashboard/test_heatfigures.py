"""The placement and score heatmaps as Bokeh figures made once: what their hovers name, and that a redraw replaces the
data only when what they show changed (seen as the document's change events, what the browser would be sent)."""

from __future__ import annotations

import numpy as np
import pytest
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ModelChangedEvent
from bokeh.models import ColorBar

from dashboard import plots
from dashboard.frames import NodeLayout, latest_decision, placement_deltas, placement_grid, rescore
from dashboard.heatfigures import PlacementFigure, ScoreFigure
from engine import Scenario, Simulation, load_scenario


@pytest.fixture(scope="module")
def run():
    """The default scenario on a 12-node cluster, 900 s."""
    data = load_scenario("default").to_dict()
    data.update(name="default-on-cluster", cluster={"topology": "cloud_regions", "nodes": 12, "regions": 3}, scheduler={})
    return Simulation(Scenario.from_dict(data, origin="tests")).advance(900).frames()


def _data_changes(doc: Document) -> list:
    """Every change of a source's data the document would send (set or patched)."""
    seen: list = []
    doc.on_change(
        lambda e: (
            seen.append(e) if isinstance(e, ColumnDataChangedEvent) or (isinstance(e, ModelChangedEvent) and e.attr == "data") else None
        )
    )
    return seen


def test_the_placement_heatmap_names_each_node_and_the_time_in_its_hover(run):
    layout = NodeLayout.from_nodes(run["nodes"])
    heat = PlacementFigure("placement-heatmap")
    times = np.linspace(0, 900, 40)
    heat.draw(layout, placement_deltas(run["placements"]), times)
    node, time, value = heat.hover.tooltips
    assert node == ("node", "$y{custom}") and time == ("time", "$x{custom}") and value[0] == "replicas"
    labels = heat.hover.formatters["$y"]
    assert labels is heat.labels and labels.args["labels"] == layout.labels  # row i (from the bottom) is labels[i]
    assert all(n in " ".join(layout.labels) for n in run["nodes"]["node"].astype(str))
    assert "hms" not in heat.hover.formatters["$x"].code and "padStart" in heat.hover.formatters["$x"].code  # h:mm:ss
    grid = heat.image.data["image"][0]
    np.testing.assert_array_equal(grid, placement_grid(layout, placement_deltas(run["placements"]), times))
    assert heat.figure.title.text == plots.placement_title("replicas") and heat.bar.title == "replicas"
    assert (heat.figure.y_range.start, heat.figure.y_range.end) == (0.0, float(len(layout.labels)))
    heat.draw(layout, placement_deltas(run["placements"]), times, "utilisation")
    assert heat.bar.title == "cpu allocated (share)" and heat.hover.tooltips[2][0] == "cpu allocated (share)"


def test_the_placement_heatmap_replaces_its_data_only_when_the_grid_changed(run):
    layout = NodeLayout.from_nodes(run["nodes"])
    deltas = placement_deltas(run["placements"])
    heat = PlacementFigure("placement-heatmap")
    doc = Document()
    doc.add_root(heat.figure)
    changes = _data_changes(doc)
    times = np.linspace(0, 900, 40)
    assert heat.draw(layout, deltas, times) and len(changes) >= 1
    changes.clear()
    assert not heat.draw(layout, deltas, times) and changes == []  # the same grid: nothing sent
    models = set(doc.models)
    assert heat.draw(layout, deltas, np.linspace(0, 600, 40)) and len(changes) >= 1
    assert set(doc.models) == models  # a new grid is new data, never new models


def test_the_score_heatmap_hovers_node_priority_and_scores_and_redraws_only_a_changed_decision(run):
    block = latest_decision(run["breakdowns"])
    chose = str(block.loc[block.winner, "node"].iloc[0])
    heat = ScoreFigure("score-heatmap")
    doc = Document()
    doc.add_root(heat.figure)
    changes = _data_changes(doc)
    assert heat.draw(block, placed_at=120.0)
    assert heat.figure.title.text.startswith("Scores of the placement at 0:02:00: chose " + chose)
    (hover,) = [t for t in heat.figure.tools if t.tooltips]
    assert [name for name, _ in hover.tooltips] == plots.hover_columns()
    cells = heat.cells.data
    assert set(cells["node"]) <= set(block["node"].astype(str)) and chose in set(cells["node"])
    assert set(cells["priority"]) == set(block["priority"].astype(str))
    assert len(heat.figure.select({"type": ColorBar})) == 1
    changes.clear()
    assert not heat.draw(block, placed_at=120.0) and changes == []
    weights = {p: 0.0 for p in block["priority"].unique()} | {"LeastAllocated": 1.0}
    assert heat.draw(block, weights=weights, placed_at=120.0) and changes
    again = rescore(block, weights)
    expected = str(again.loc[again.winner, "node"].iloc[0])
    assert heat.figure.title.text.startswith(f"PREVIEW at 0:02:00: would choose {expected} (chose {chose})")
    assert heat.winner.glyph.line_dash == "dashed"
    heat.clear()
    assert heat.figure.title.text == ScoreFigure.EMPTY_TITLE and len(heat.cells.data["node"]) == 0
    assert all(heat.cells.data[c].dtype == object for c in ("text", "ink", "node", "priority"))  # BokehJS: strings, not floats


def test_a_score_heatmap_of_one_node_or_one_priority_has_bounds_of_one_cell(run):
    block = latest_decision(run["breakdowns"])
    one_node = block[block["node"] == block.loc[block.winner, "node"].iloc[0]]
    one_priority = block[block["priority"] == block["priority"].iloc[0]]
    heat = ScoreFigure("score-heatmap")
    for shown, (cols, rows) in ((one_node, (None, 1)), (one_priority, (1, None))):
        heat.draw(shown, placed_at=120.0)
        data = heat.image.data
        assert (data["x"][0], data["y"][0]) == (0.0, 0.0) and data["dw"][0] >= 1 and data["dh"][0] >= 1
        assert (cols is None or data["dw"][0] == cols) and (rows is None or data["dh"][0] == rows)
        assert heat.figure.x_range.end == data["dw"][0] and heat.figure.y_range.end == data["dh"][0]
