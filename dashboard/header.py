"""The header's run state (running/paused, speed, simulated time, scenario and seed) as HTML, and the header's styles."""

from __future__ import annotations

import html
import json
import math
from typing import Any

from dashboard import plots

HINT = "Press ▶ to run or pause; every control in the sidebar changes the running simulation at once."
STATUS_CSS = """
.run-state {display: flex; gap: 6px 14px; align-items: center; font-size: 15px; flex-wrap: wrap;}
.run-state .state {font-weight: 700; padding: 2px 10px; border-radius: 12px; background: #1a9850; color: white;}
.run-state .state.paused {background: #d73027;}
.run-state .state.compare {background: #7b3294;}
.run-state .state.replay {background: #01665e;}
.run-state .behind {color: #fdae61; font-weight: 600;}
.run-state .building {font-weight: 600; color: #fee08b;}
.run-state .build-error {font-weight: 600; color: #f46d43;}
"""
HEADER_CSS = """
.app-hint {font-size: 13px; opacity: 0.9;} .app-title {font-size: 19px; font-weight: 700;}
@media (max-width: 1100px) {.app-hint {display: none;} .app-title {font-size: 16px;}}
"""


def status_html(session: Any, view: Any) -> str:
    """The run state; while a tab with its own clock (Compare, Replay) is shown, its state and time, and where the live
    run waits."""
    own = view is not None and view.own_clock
    sim_now = view.now() if own else (session.sim.now if session.sim is not None else 0.0)
    achieved = (view if own else session).achieved_speed()
    if own:
        state, cls = view.run_state(session.playing)
    else:
        state, cls = ("Running" if session.playing else "Paused"), "state" + ("" if session.playing else " paused")
    behind = ""
    if session.playing and math.isfinite(achieved) and achieved < 0.8 * session.speed:
        behind = f"<span class='behind' title='The server cannot simulate faster'>achieved {achieved:,.0f}×</span>"
    live = f"<span>live run waits at {plots.hms(session.sim.now)}</span>" if own and session.sim is not None else ""
    if getattr(session, "building", False):  # a new run is built off the event loop; the old frame stays meanwhile
        live += f"<span class='building' data-building='true'>building {html.escape(session.scenario)}…</span>"
    elif getattr(session, "build_error", ""):
        live += f"<span class='build-error'>not built: {html.escape(session.build_error)}</span>"
    seed = "…" if session.seed is None else session.seed
    return (
        f"<div class='run-state'><span class='{cls}' data-state='{state.lower()}'>{state}</span>"
        f"<span>speed {session.speed:,.0f}×</span>{behind}"
        f"<span data-kpi='sim-time'>t = {plots.hms(sim_now)}</span>"
        f"<span>{html.escape(session.scenario)} · seed {seed}</span>{live}</div>"
    )


def stuck_alert_text(events: Any) -> str | None:
    """The warning for the newest engine alert among new ``events`` rows: the controller stuck in the original's dead
    end (its text), another alert ("": no warning); None when no alert came."""
    if events is None or not len(events) or "command" not in events:
        return None
    alerts = events[events["kind"] == "alert"]
    if not len(alerts):
        return None
    last = alerts.iloc[-1]
    if last["command"] != "controller_stuck":
        return ""
    suspended = json.loads(last["value"] or "{}").get("suspended", "some")
    return (
        f"**Controller stuck since t = {last['time']:.0f} s**: work is queued, no worker serves or starts, and "
        f"{suspended} are suspended. The original controller never resumes them; switch seed-exact mode off and "
        "turn on *resume_when_stuck* in the Controller card to let it."
    )
