"""Entry point: ``panel serve dashboard/app.py`` (see ``make serve``)."""

import panel as pn

from dashboard.ui import Dashboard

pn.extension(notifications=False)

Dashboard().servable(title="scalelab")
