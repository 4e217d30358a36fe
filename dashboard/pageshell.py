"""The served page's shell: a header bar over a fixed-width sidebar and the tabs, in one plain column (no template).

A Panel template renders its header, sidebar and main area as separate roots (six with its own), and Panel walks the
whole model graph after each and again for its design's hooks; its page also loads the template's Bootstrap bundles.
One column is one root: one walk, fewer requests. The look is the template's (Bootstrap design, the same header
colour and sidebar width); ``?theme=dark`` still selects the dark theme (Panel reads it from the page's arguments).
"""

from __future__ import annotations

import panel as pn
from panel.theme import Bootstrap

HEADER_BACKGROUND = "#24476b"
SIDEBAR_WIDTH = 370
#: The page in the theme's background (the template's body was), the header bar (white on the template's blue), and the
#: sidebar scrolling on its own beside the tabs.
SHELL_CSS = f"""
:host(.app-page) {{background: var(--panel-background-color); color: var(--panel-on-background-color); min-height: 100vh;}}
:host(.app-header) {{background: {HEADER_BACKGROUND}; color: white; padding: 10px 16px; box-shadow: 0 2px 4px rgba(0, 0, 0, 0.2);}}
:host(.app-sidebar) {{position: sticky; top: 0; max-height: 100vh; overflow-y: auto; padding: 8px;}}
:host(.app-main) {{padding: 8px 12px;}}
"""


def app_page(header: list[pn.viewable.Viewable], sidebar: pn.viewable.Viewable, main: pn.viewable.Viewable) -> pn.Column:
    """The page: ``header`` in a bar across the top, ``sidebar`` on the left, ``main`` beside it."""
    doc = pn.state.curdoc
    if doc is not None:  # served: this session's components in the Bootstrap design, its plots in its theme (as the template did)
        pn.config.design = Bootstrap
        plot_theme = Bootstrap(theme=pn.config.theme).theme.bokeh_theme
        if plot_theme:
            doc.theme = plot_theme
    bar = pn.Row(*header, sizing_mode="stretch_width", css_classes=["app-header"], stylesheets=[SHELL_CSS], margin=0)
    side = pn.Column(sidebar, width=SIDEBAR_WIDTH, css_classes=["app-sidebar"], stylesheets=[SHELL_CSS], margin=0)
    body = pn.Row(
        side,
        pn.Column(main, sizing_mode="stretch_width", css_classes=["app-main"], stylesheets=[SHELL_CSS], margin=0),
        sizing_mode="stretch_width",
        margin=0,
    )
    return pn.Column(bar, body, sizing_mode="stretch_width", css_classes=["app-page"], stylesheets=[SHELL_CSS], margin=0)
