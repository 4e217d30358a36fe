"""Dashboard latency in a real browser: slider -> engine -> plot, server time per tick, points on screen.

Serves the dashboard in-process (so server-side tick times can be read), drives Debian's Chromium with
Playwright, nudges the MAX_AVG_TIME handle of the drain band back and forth and times how long until the
browser's plotted ``band_high`` shows the new value. Run for minutes to check that latency stays flat.

    python benchmarks/dashboard_latency.py --duration 60       # quick
    python benchmarks/dashboard_latency.py --duration 600      # the 10-minute flat-latency check

The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP localhost 127.0.0.1",
]
JS_LAST_BAND_HIGH = """() => { const s = Bokeh.documents[0].get_model_by_name('samples-live');
  const v = s.data.band_high; return v.length ? v[v.length - 1] : null; }"""
JS_ROWS = """names => names.map(n => { const s = Bokeh.documents[0].get_model_by_name(n); return s ? s.data.time.length : 0; })"""


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(a: list[float], q: float) -> float:
    return float(np.percentile(a, q)) if a else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0, help="wall seconds of measuring (600 for the 10-minute check)")
    ap.add_argument("--interval", type=float, default=1.0, help="wall seconds between two slider changes")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()

    import panel as pn
    from panel.io.state import state
    from panel.tests.util import serve_and_wait
    from playwright.sync_api import sync_playwright

    from dashboard.ui import Dashboard

    pn.extension()
    made: list[Dashboard] = []

    def app():
        d = Dashboard()
        made.append(d)
        return d

    port = serve_and_wait(app)
    latencies: list[tuple[float, float]] = []  # (elapsed s, latency ms)
    misses = 0
    to_engine: list[float] = []  # key press -> set_params on the server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        t_open = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
        page.wait_for_function("() => { const d = window.Bokeh && Bokeh.documents[0]; const s = d && d.get_model_by_name('samples-live');"
                               " return s && s.data.time.length > 3; }", timeout=60000)
        first_data_s = time.perf_counter() - t_open
        d = made[0]
        applied_at: list[float] = []
        real_apply = d.session.apply

        def timed_apply(changes):  # when the change reached the engine (same clock as the key press)
            applied_at.append(time.perf_counter())
            return real_apply(changes)

        d.session.apply = timed_apply
        d.controls = type(d.controls)(d.session)  # rebuild the controls so they call the timed apply
        d.controls_holder[:] = [d.controls.layout]
        page.wait_for_timeout(1500)
        rss_start = rss_mib()
        handle = page.locator(".ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME .noUi-handle").nth(1)
        handle.focus()
        start = time.perf_counter()
        up = True
        d.tick_seconds.clear()
        d.part_seconds.clear()
        while time.perf_counter() - start < args.duration:
            current = page.evaluate(JS_LAST_BAND_HIGH)
            target = current + (1.0 if up else -1.0)
            t0 = time.perf_counter()
            handle.press("ArrowRight" if up else "ArrowLeft")
            n_applied = len(applied_at)
            try:
                page.wait_for_function(f"() => Math.abs(({JS_LAST_BAND_HIGH})() - {target}) < 1e-6", polling="raf", timeout=5000)
                latencies.append((t0 - start, (time.perf_counter() - t0) * 1000))
                if len(applied_at) > n_applied:
                    to_engine.append((applied_at[n_applied] - t0) * 1000)
            except Exception:  # noqa: BLE001 - a miss is counted, not fatal
                misses += 1
            up = not up
            page.wait_for_timeout(max(0.0, args.interval - (time.perf_counter() - t0)) * 1000)
        rows = page.evaluate(JS_ROWS, ["samples-live"])[0]
        ticks = len(d.tick_seconds)
        tick_ms = [t * 1000 for t in d.tick_seconds]
        engine_ms = [t * 1000 for t in d.session.tick_seconds]
        points = {name: rows * len([r for r in fig.renderers if getattr(r, "data_source", None) is d.views.sources["live"]])
                  for name, fig in d.views.figures.items()}
        grid = d.placement.source.data["image"][0]
        points["placement_heatmap"] = int(np.size(grid))
        points["score_heatmap"] = len(d.scores.source.data["weighted"])
        parts = {k: {"median": round(pct([x * 1000 for x in v], 50), 2), "p95": round(pct([x * 1000 for x in v], 95), 2),
                     "max": round(max(v) * 1000, 1)} for k, v in d.part_seconds.items() if v}
        elapsed = time.perf_counter() - start
        sim_now = d.session.sim.now
        browser.close()
    rss_end = rss_mib()
    for dd in made:
        dd.stop()
    state.kill_all_servers()

    lat = [ms for _, ms in latencies]
    third = max(1, len(latencies) // 3)
    result = {
        "duration_s": round(elapsed, 1),
        "first_data_s": round(first_data_s, 2),
        "slider_to_plot_ms": {"median": round(pct(lat, 50), 1), "p95": round(pct(lat, 95), 1), "max": round(max(lat), 1) if lat else None,
                              "n": len(lat), "misses": misses,
                              "median_first_third": round(pct(lat[:third], 50), 1), "median_last_third": round(pct(lat[-third:], 50), 1)},
        "slider_to_engine_ms": {"median": round(pct(to_engine, 50), 1), "p95": round(pct(to_engine, 95), 1)},
        "server_tick_ms": {"median": round(pct(tick_ms, 50), 2), "p95": round(pct(tick_ms, 95), 2), "max": round(max(tick_ms), 1) if tick_ms else None},
        "engine_advance_ms": {"median": round(pct(engine_ms, 50), 2), "p95": round(pct(engine_ms, 95), 2)},
        "server_tick_parts_ms": parts,
        "ticks_per_s": round(ticks / elapsed, 2) if elapsed else None,
        "simulated_s": round(sim_now, 1),
        "points_per_plot": points,
        "server_rss_mib": {"start": round(rss_start, 1), "end": round(rss_end, 1)},
    }
    print(f"slider->plot median {result['slider_to_plot_ms']['median']} ms, p95 {result['slider_to_plot_ms']['p95']} ms "
          f"({len(lat)} changes, {misses} missed); server tick median {result['server_tick_ms']['median']} ms")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
