"""What the dashboard and the exported page read from a loaded ``engine.Recording``, with no simulation behind it.

No UI imports here: the sample interval the plots need (from the recorded scenario, or the default), the timeline's
markers (:func:`dashboard.timeline.markers` over the stored events and control actions), the KPI row at a time, a
description of the file (scenario, seed, span, parent), and a download name.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import pandas as pd

from dashboard import plots
from dashboard.kpis import kpis_at as world_kpis_at
from dashboard.kpis import recording_world, world_view
from dashboard.timeline import markers
from engine import SECTION_CLASSES, Recording


def sample_interval(rec: Recording) -> float:
    """The recorded run's ``run.sample_interval`` (the scenario's value, else the parameter's default)."""
    value = (rec.manifest.get("scenario") or {}).get("run", {}).get("sample_interval")
    return (
        float(value)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        else float(SECTION_CLASSES["run"]().sample_interval)
    )


def recording_markers(rec: Recording) -> pd.DataFrame:
    """The timeline of a recording: faults and parameter changes from its events, and its control actions."""
    return markers(rec.tables.get("events", pd.DataFrame()), rec.manifest.get("controls", []))


def recording_view(rec: Recording) -> Any:
    """The UI declaration of the recording's world (its KPIs, tables and views)."""
    return world_view(recording_world(rec.manifest))


def kpis_at(rec: Recording, at: float) -> dict[str, Any]:
    """The recording's KPI row as it stood at simulated time ``at`` (the same tracker the live row uses)."""
    return world_kpis_at(recording_view(rec), rec.tables, at)


def scenario_name(rec: Recording) -> str:
    """The recorded scenario's name, read from the manifest (the scenario is not rebuilt: that may read files)."""
    return str((rec.manifest.get("scenario") or {}).get("name") or "unnamed")


def describe(rec: Recording) -> str:
    """One line of HTML: file, scenario, seed, span, when a branch: its parent and branch time."""
    parts = [
        f"<b>{html.escape(rec.path.name)}</b>",
        f"scenario <b>{html.escape(scenario_name(rec))}</b>",
        f"seed {rec.seed}",
        f"0:00:00 to {plots.hms(rec.until)} simulated",
        f"{len(rec.inputs)} input(s)",
    ]
    parent = rec.parent
    if parent:
        parts.append(f"branched from {html.escape(str(parent.get('file', '?')))} at {plots.hms(float(parent['branch_time']))}")
    return " · ".join(parts)


def download_name(scenario: str, seed: int, at: float, suffix: str) -> str:
    """``default-seed1-t0h30m.scalelab``: a file name that says what is inside (safe on every file system)."""
    minutes = int(math.floor(at / 60.0))
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", scenario).strip("-") or "session"
    return f"{safe}-seed{seed}-t{minutes // 60}h{minutes % 60:02d}m{suffix}"
