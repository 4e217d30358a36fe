"""The message line above the tabs: shown and hidden by its display style, never by Bokeh's ``visible`` (whose change
lays out the whole page again in the browser)."""

from __future__ import annotations

from bokeh.document import Document

from dashboard.messageline import MessageLine


def test_the_message_line_shows_and_hides_its_text_by_its_display_style_and_stays_visible_to_bokeh():
    line = MessageLine()
    doc = Document()
    model = line.__panel__().get_root(doc)
    doc.add_root(model)
    assert not line.visible and model.styles["display"] == "none" and model.visible
    line.object, line.visible = "Branching x at 0:10:00", True
    assert model.styles["display"] == "block" and model.visible and "Branching x" in line.pane.object
    line.object = "Branched from x"
    assert model.styles["display"] == "block" and line.pane.object == "Branched from x"
    line.object, line.visible = "", False
    assert model.styles["display"] == "none" and model.visible
