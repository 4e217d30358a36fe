"""The scalelab dashboard: ``panel serve dashboard/app.py`` (``make serve``), or inline in Jupyter::

    import panel as pn
    from dashboard.ui import Dashboard
    pn.extension()
    Dashboard()            # or Dashboard("edge", seed=7), or Dashboard(scenario_object)

``dashboard.session`` (no UI imports) owns the simulation and its clock; ``dashboard.controls`` builds
widgets from the engine's param classes; ``dashboard.views`` holds the streaming plots and heatmaps;
``dashboard.replay`` the recorded sessions (save, load into a replay, branch) and ``dashboard.export`` a
recording as one self-contained HTML page (``python -m engine export``).
"""
