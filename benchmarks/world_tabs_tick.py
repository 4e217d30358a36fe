"""Server CPU of the dashboard's tick on the Functions and GPU tabs, in-process (no browser): where a tick goes.

Each world's tab is shown in a Dashboard whose page is rendered into a Bokeh ``Document`` (so every pane makes its
models, as when served), then ``TickLoop.tick`` runs every ``--period`` wall seconds (the served tick period) at
``--speed``; the CPU (process clock) of each tick is measured and the ticks are profiled with cProfile on the process
clock. Run it against two trees (``PYTHONPATH=<tree>``) to compare them side by side; the load average is printed.

    python benchmarks/world_tabs_tick.py --ticks 150
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import time

import panel as pn
from bokeh.document import Document

from dashboard.ui import Dashboard

WORLDS = {"faas-edge": "Functions", "openb-fgd": "GPU"}


def measure(scenario: str, tab: str, ticks: int, period: float, speed: float, top: int) -> dict:
    d = Dashboard(scenario)
    d.session.speed = speed
    doc = Document()
    pn.state.curdoc = doc
    doc.add_root(d.main.get_root(doc))
    d.show_tab(tab)
    d.warm_up()
    cpu: list[float] = []
    prof = cProfile.Profile(time.process_time)
    for _ in range(ticks):
        t0 = time.process_time()
        prof.enable()
        d.loop.tick(period)
        prof.disable()
        cpu.append(time.process_time() - t0)
        time.sleep(period)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    flush = d.loop.part_seconds.get(f"flush_{tab}", [])
    result = {
        "scenario": scenario,
        "tab": tab,
        "ticks": ticks,
        "sim_s": round(d.session.sim.now, 1),
        "tick_cpu_ms_median": round(1000 * statistics.median(cpu), 2),
        "tick_cpu_ms_mean": round(1000 * statistics.fmean(cpu), 2),
        "tick_cpu_ms_p95": round(1000 * sorted(cpu)[int(0.95 * len(cpu))], 2),
        "flush_wall_ms_mean": round(1000 * statistics.fmean(flush), 2) if flush else None,
        "flushes": len(flush),
    }
    d.stop()
    pn.state.curdoc = None
    return result | {"profile": out.getvalue()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=150)
    ap.add_argument("--period", type=float, default=0.1, help="wall seconds between ticks (the served tick period)")
    ap.add_argument("--speed", type=float, default=60.0)
    ap.add_argument("--top", type=int, default=25, help="profile lines printed per world")
    args = ap.parse_args()
    results = []
    for scenario, tab in WORLDS.items():
        load = os.getloadavg()[0]
        r = measure(scenario, tab, args.ticks, args.period, args.speed, args.top)
        r["load"] = round(load, 2)
        print(r.pop("profile"))
        print(json.dumps(r))
        results.append(r)
    print("RESULT " + json.dumps({"worlds": results, "load_end": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
