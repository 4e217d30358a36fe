"""Entry point: ``panel serve dashboard/app.py`` (see ``make serve``): the dashboard in its template."""

import panel as pn

from dashboard.ui import Dashboard

pn.extension(notifications=False)

Dashboard().page().servable(title="scalelab")
