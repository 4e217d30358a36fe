"""The stuck-controller warning is made from the engine's alert events (no UI needed)."""

from __future__ import annotations

import pandas as pd

from dashboard.header import stuck_alert_text


def _events(*rows: tuple[str, str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"time": 120.0, "kind": k, "command": c, "value": v} for k, c, v in rows])


def test_the_newest_alert_decides_the_warning():
    assert stuck_alert_text(None) is None and stuck_alert_text(_events(("command", "scale_up", ""))) is None  # no alert
    text = stuck_alert_text(_events(("alert", "controller_stuck", '{"suspended": "3 workers"}')))
    assert text.startswith("**Controller stuck since t = 120 s**") and "3 workers are suspended" in text
    assert stuck_alert_text(_events(("alert", "controller_stuck", "{}"), ("alert", "other", ""))) == ""  # over: hidden
