"""Per world, in a real browser: first data, scenario switch, Reset, upload to every Replay view drawn, Branch here,
Compare; and a replay scrub step's server time. Called by ``dashboard_latency.py`` (its ``worlds`` figures).

Every figure is a wall time from the user's action (page asked for, option chosen, button clicked, file set) to the
condition a person sees in the page (the world's plots hold data), with the load average (1 min) beside it. Nothing
is asserted: the goals are printed by ``dashboard_latency.py``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

#: The world of each scenario measured, and the figure name prefix of its first tab's plots.
WORLDS = {"default": ("vm", "ts-"), "faas-basic": ("functions", "fn-"), "openb-fgd": ("pod", "pod-")}
#: Figures of the Replay tab a recording of each world draws.
REPLAY_FIGURES = {"vm": 6, "functions": 5, "pod": 4}
#: JS: do at least ``n`` figures named ``prefix...`` hold a renderer with at least ``rows`` points?
JS_FIGURES = """([prefix, n, rows]) => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false; let k = 0;
  for (const m of d._all_models.values()) {
    if (!m.name || !m.name.startsWith(prefix) || !m.renderers) continue;
    if (m.renderers.some(r => r.data_source && r.data_source.data &&
        ((r.data_source.data.time || r.data_source.data.x || r.data_source.data.arrived_pct || []).length >= rows))) k += 1; }
  return k >= n; }"""
#: JS: the newest x of the first renderer with data among figures named ``prefix...`` (-1: none).
JS_LAST_X = """prefix => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return -1;
  for (const m of d._all_models.values()) if (m.name && m.name.startsWith(prefix) && m.renderers)
    for (const r of m.renderers) { const x = r.data_source && r.data_source.data && r.data_source.data.time;
      if (x && x.length) return x[x.length - 1]; }
  return -1; }"""
TIMEOUT = 180_000


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _figure(seconds: float) -> dict:
    return {"s": round(seconds, 3), "load": _load()}


def scrub_step_server_s(rec_path: Path, steps: int = 20) -> list[float]:
    """Server CPU of one scrub step (seek, then one tick drawn as a served tick draws it: in a hold, frozen unless the
    tab only streams, within the tick's draw budget) in this process, the page's models in a Bokeh document as when
    served (without one, HoloViews draws nothing and a step looks cheaper than it is). CPU of this thread
    (``time.thread_time``): the served page's server thread and the Branch-here warm-up worker, which share the process,
    are not the step's."""
    import contextlib

    import panel as pn
    from bokeh.document import Document

    from dashboard.ticker import DRAW_BUDGET
    from dashboard.ui import Dashboard
    from engine import load_recording

    d = Dashboard("default")
    doc = Document()
    doc.add_root(d.__panel__().get_root(doc))
    d.recordings.open(load_recording(rec_path))
    r = d.recordings.replay_tab
    out = []
    for t in np.linspace(r.until * 0.2, r.until, steps):
        t0 = time.thread_time()
        r.seek(float(t))
        with pn.io.hold(doc), contextlib.nullcontext() if r.streams_only else doc.models.freeze():
            r.tick(0.1, 60.0, False)
            r.flush(r.now(), DRAW_BUDGET)
        out.append(time.thread_time() - t0)
    d.stop()
    return out


def measure_worlds(page, port: int, made: list, quick: bool = True) -> dict:
    """Every measurement for every world of :data:`WORLDS`, in one served app (see the module docs)."""
    from engine import Simulation

    out: dict = {}
    base = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as tmp:
        for name, (world, prefix) in WORLDS.items():
            w: dict = {"scenario": name}
            # first data: a fresh page on the scenario, to its first plot with data
            t0 = time.perf_counter()
            page.goto(f"{base}?scenario={name}", wait_until="domcontentloaded", timeout=TIMEOUT)
            page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=TIMEOUT, polling=20)
            w["first_data"] = _figure(time.perf_counter() - t0)
            print(f"worlds: {name} first_data {w['first_data']}", flush=True)
            d = made[-1]
            # Reset: to the new run's first frame in the plot (its newest time goes back)
            before = page.evaluate(JS_LAST_X, prefix)
            page.wait_for_function(f"() => ({JS_LAST_X})('{prefix}') > {before}", timeout=TIMEOUT, polling=20)
            generation = d.session.generation
            t0 = time.perf_counter()
            page.locator(".bk-btn", has_text="Reset").first.click()
            # to the new run's first frame drawn: the server has the new run, then the plot's newest time moves (the
            # new run may already be past the old one's time: simulated time catches up with the wall clock while a
            # large world such as openb-fgd is rebuilt, so "the newest time went back" never comes there)
            deadline = time.monotonic() + TIMEOUT / 1000
            while d.session.generation == generation and time.monotonic() < deadline:
                page.wait_for_timeout(10)
            at_new_run = page.evaluate(JS_LAST_X, prefix)
            page.wait_for_function(f"() => ({JS_LAST_X})('{prefix}') != {at_new_run}", timeout=TIMEOUT, polling=20)
            w["reset"] = _figure(time.perf_counter() - t0)
            print(f"worlds: {name} reset {w['reset']}", flush=True)
            # Compare: the tab opened to A's and B's plots with data
            t0 = time.perf_counter()
            page.locator(".bk-tab", has_text="Compare").first.click()
            page.wait_for_function(JS_FIGURES, arg=["cmp", 2, 2], timeout=TIMEOUT, polling=20)
            w["compare"] = _figure(time.perf_counter() - t0)
            print(f"worlds: {name} compare {w['compare']}", flush=True)
            # replay open: a recording of this world uploaded, to every Replay view drawn
            sim = Simulation(name)
            sim.advance(max(900.0, 20 * sim.sections["run"].sample_interval))
            path = sim.record(Path(tmp) / f"{name}.scalelab")
            t0 = time.perf_counter()
            page.locator(".rec-load input[type=file]").first.set_input_files(str(path), timeout=TIMEOUT)
            page.wait_for_function(JS_FIGURES, arg=["rp-", REPLAY_FIGURES[world], 2], timeout=TIMEOUT, polling=20)
            w["replay_open"] = _figure(time.perf_counter() - t0)
            print(f"worlds: {name} replay_open {w['replay_open']}", flush=True)
            # Branch here: the click to the Branch tab shown with its parent
            t0 = time.perf_counter()
            page.locator(".replay-branch .bk-btn").first.click(timeout=TIMEOUT)
            page.locator(".bk-tab.bk-active", has_text="Branch").first.wait_for(timeout=TIMEOUT)
            page.locator(".branch-info", has_text="Branch of").first.wait_for(timeout=TIMEOUT)
            w["branch"] = _figure(time.perf_counter() - t0)
            print(f"worlds: {name} branch {w['branch']}", flush=True)
            steps = scrub_step_server_s(path, 10 if quick else 40)
            w["scrub_step_server"] = {
                "median_s": round(float(np.median(steps)), 4),
                "p95_s": round(float(np.percentile(steps, 95)), 4),
                "load": _load(),
            }
            w["branched"] = d.session.branched_from is not None
            out[world] = w
        # scenario switch: from the default scenario's page, each world chosen in the list, to its plots with data
        page.goto(base, wait_until="domcontentloaded", timeout=TIMEOUT)
        page.wait_for_function(JS_FIGURES, arg=["ts-", 1, 2], timeout=TIMEOUT, polling=20)
        for name, (world, prefix) in [*list(WORLDS.items())[1:], ("default", WORLDS["default"])]:
            t0 = time.perf_counter()
            page.locator("select").first.select_option(name)
            page.locator(".run-state", has_text=name).first.wait_for(timeout=TIMEOUT)
            page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=TIMEOUT, polling=20)
            out[world]["switch"] = _figure(time.perf_counter() - t0)
    return out


def summarise(worlds: dict) -> dict:
    """The RESULT line's per-kind figures over the worlds: the worst world's time (and the load then)."""

    def worst(kind: str) -> float:
        return max(w[kind]["s"] for w in worlds.values() if kind in w)

    return {
        "first_data_s_worlds": worst("first_data"),
        "replay_open_s": worst("replay_open"),
        "branch_s": worst("branch"),
        "switch_s": worst("switch"),
        "reset_s": worst("reset"),
        "compare_s": worst("compare"),
        "scrub_step_s": max(w["scrub_step_server"]["p95_s"] for w in worlds.values()),
    }
