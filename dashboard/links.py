"""Shareable links: ``?scenario=...&seed=...&speed=...&playing=...&tab=...&section.NAME=value``, written and read here only.

No UI imports: :func:`link_query` writes the query that reproduces a view; :func:`apply_link` applies one to a live
session and says what it could not apply (one message; the rest still applies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from dashboard.session import LiveSession, scenario_names

#: Query keys that are not parameters (the page's theme is Panel's own).
PAGE_KEYS = ("theme",)


def link_query(session: LiveSession, tab: str) -> str:
    """The query of a link that reproduces this view: scenario, seed, speed, playing, tab and every parameter change."""
    query: dict[str, Any] = {
        "scenario": session.scenario,
        "seed": session.seed,
        "speed": f"{session.speed:g}",
        "playing": json.dumps(bool(session.playing)),
        "tab": tab,
    }
    for key, value in session.overrides.items():
        query[key] = value if isinstance(value, str) else json.dumps(value)
    return "?" + urlencode(query)


def from_query(text: str) -> Any:
    """A link's value: JSON when it parses (numbers, booleans, lists), else the text itself (a selector's choice)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class LinkResult:
    """What applying a link did: the tab it asks for, whether parameters changed, and what could not be applied."""

    tab: str | None = None
    changed_params: bool = False
    problems: list[str] = field(default_factory=list)

    def message(self) -> str:
        return ("Link not fully applied: " + "; ".join(self.problems) + ".") if self.problems else ""


def link_start(search: str, scenario: Any = None, seed: int | None = None) -> tuple[Any, int | None, bool | None, str]:
    """What a page opened with a link starts from, before its session is built: the link's scenario (when it is one of
    the shipped ones) and seed (when it is an integer), else ``scenario`` and ``seed``; the link's play state (None:
    none asked for), and the rest of the link, for :func:`apply_link` (which names whatever it cannot apply)."""
    items = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))
    playing = {"true": True, "false": False}.get(items.pop("playing", ""))
    name = items.get("scenario")
    if name is not None and name in scenario_names():
        scenario, seed = name, None  # the link's scenario with its own seed (as choosing it in the list), unless it names one
    text = items.get("seed", "")
    if text.isdigit() and int(text) <= LiveSession.param.seed.bounds[1]:
        seed = int(text)
    return scenario, seed, playing, ("?" + urlencode(items) if items else "")


def apply_link(session: LiveSession, search: str) -> LinkResult:
    """Apply a link's query to ``session``; a bad value is named in the result and the others still apply."""
    items = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))
    out = LinkResult()
    scenario = items.pop("scenario", None)
    if scenario is not None:
        if scenario in session.param.scenario.objects:
            session.scenario = scenario
        else:
            allowed = ", ".join(session.param.scenario.objects)
            out.problems.append(f"scenario {scenario!r} is not here (allowed: {allowed}); showing {session.scenario!r}")
    seed = items.pop("seed", None)
    if seed not in (None, ""):
        try:
            session.seed = int(seed)
        except ValueError:
            out.problems.append(f"seed {seed!r} is not an integer in [0, 2**53-1]")
    speed = items.pop("speed", None)
    if speed is not None:
        lo, hi = session.param.speed.bounds
        try:
            session.speed = float(speed)
        except ValueError:
            out.problems.append(f"speed {speed!r}: allowed a number in [{lo:g}, {hi:g}]")
    playing = items.pop("playing", None)
    out.tab = items.pop("tab", None)
    for key in PAGE_KEYS:
        items.pop(key, None)
    changes = {k: from_query(v) for k, v in items.items() if "." in k}
    if changes:
        out.changed_params = True
        if session.apply(changes):  # one bad value refuses the lot (atomic): one by one, so the good ones still apply
            for key, value in changes.items():
                problem = session.apply({key: value})
                if problem:
                    out.problems.append(problem)
    if playing in ("true", "false"):
        session.playing = playing == "true"
    return out
