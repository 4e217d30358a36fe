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
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP localhost 127.0.0.1",
]
JS_LAST_BAND_HIGH = """() => { const s = Bokeh.documents[0].get_model_by_name('samples-live');
  const v = s.data.band_high; return v.length ? v[v.length - 1] : null; }"""
#: In the page: stamp each keydown; when the plotted band_high next changes, stamp the following animation frame.
JS_WATCH = """() => {
  const s = Bokeh.documents[0].get_model_by_name('samples-live');
  const lastOf = () => { const v = s.data.band_high; return v.length ? v[v.length - 1] : null; };
  window._lat = {kd: null, results: []};
  let last = lastOf();
  document.addEventListener('keydown', () => { window._lat.kd = performance.now(); }, true);
  s.streaming.connect(() => {
    const v = lastOf();
    if (v !== null && last !== null && Math.abs(v - last) > 1e-9 && window._lat.kd !== null) {
      const kd = window._lat.kd; window._lat.kd = null;
      requestAnimationFrame(() => window._lat.results.push(performance.now() - kd));
    }
    last = v;
  });
}"""
JS_ROWS = """names => names.map(n => { const s = Bokeh.documents[0].get_model_by_name(n); return s ? s.data.time.length : 0; })"""


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(a: list[float], q: float) -> float:
    return float(np.percentile(a, q)) if a else float("nan")


def soak(ticks: int) -> dict:
    """Server side only: tick one dashboard ``ticks`` times at the default speed; RSS every tenth of the way."""
    import gc

    from dashboard.ui import Dashboard

    d = Dashboard()
    rss = []
    t0 = time.perf_counter()
    for i in range(ticks):
        d.session.tick(0.1)
        d.refresh()
        if i % max(1, ticks // 10) == 0:
            gc.collect()
            rss.append(round(rss_mib(), 1))
    gc.collect()
    rss.append(round(rss_mib(), 1))
    return {
        "ticks": ticks,
        "simulated_s": round(d.session.sim.now, 1),
        "wall_s": round(time.perf_counter() - t0, 1),
        "rss_mib_every_tenth": rss,
        "samples_in_engine": d.session.sim.sample_count,
        "events_in_engine": d.session.sim.event_count,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0, help="wall seconds of measuring (600 for the 10-minute check)")
    ap.add_argument("--interval", type=float, default=1.0, help="wall seconds between two slider changes")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument(
        "--soak-ticks",
        type=int,
        default=0,
        help="then tick a headless dashboard this many times (18000 = 30 min at 10 ticks/s) and report server memory",
    )
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
        page.wait_for_function(
            "() => { const d = window.Bokeh && Bokeh.documents[0]; const s = d && d.get_model_by_name('samples-live');"
            " return s && s.data.time.length > 3; }",
            timeout=60000,
        )
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
        page.evaluate(JS_WATCH)
        ticks_before = d._ticks
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
        in_browser = page.evaluate("() => window._lat.results")
        ticks = d._ticks - ticks_before
        tick_ms = [t * 1000 for t in d.tick_seconds]
        engine_ms = [t * 1000 for t in d.session.tick_seconds]
        points = {
            name: rows * len([r for r in fig.renderers if getattr(r, "data_source", None) is d.views.sources["live"]])
            for name, fig in d.views.figures.items()
        }
        grid = d.placement.source.data["image"][0]
        points["placement_heatmap"] = int(np.size(grid))
        points["score_heatmap"] = len(d.scores.source.data["weighted"])
        parts = {
            k: {
                "median": round(pct([x * 1000 for x in v], 50), 2),
                "p95": round(pct([x * 1000 for x in v], 95), 2),
                "max": round(max(v) * 1000, 1),
            }
            for k, v in d.part_seconds.items()
            if v
        }
        elapsed = time.perf_counter() - start
        sim_now = d.session.sim.now
        browser.close()
    rss_end = rss_mib()
    for dd in made:
        dd.stop()
    state.kill_all_servers()

    lat = [ms for _, ms in latencies]
    third = max(1, len(latencies) // 3)
    n = len(in_browser)
    per_minute = [round(pct(in_browser[i : i + 60], 50), 1) for i in range(0, n, 60)] if n else []
    result = {
        "duration_s": round(elapsed, 1),
        "first_data_s": round(first_data_s, 2),
        "slider_to_plot_in_browser_ms": {  # keydown -> first frame after the new band reached the plot's source
            "median": round(pct(in_browser, 50), 1),
            "p95": round(pct(in_browser, 95), 1),
            "max": round(max(in_browser), 1) if in_browser else None,
            "n": n,
            "median_per_minute": per_minute,
        },
        "slider_to_plot_via_driver_ms": {
            "median": round(pct(lat, 50), 1),
            "p95": round(pct(lat, 95), 1),
            "max": round(max(lat), 1) if lat else None,
            "n": len(lat),
            "misses": misses,
            "median_first_third": round(pct(lat[:third], 50), 1),
            "median_last_third": round(pct(lat[-third:], 50), 1),
        },
        "slider_to_engine_via_driver_ms": {"median": round(pct(to_engine, 50), 1), "p95": round(pct(to_engine, 95), 1)},
        "server_tick_ms": {
            "median": round(pct(tick_ms, 50), 2),
            "p95": round(pct(tick_ms, 95), 2),
            "max": round(max(tick_ms), 1) if tick_ms else None,
        },
        "engine_advance_ms": {"median": round(pct(engine_ms, 50), 2), "p95": round(pct(engine_ms, 95), 2)},
        "server_tick_parts_ms": parts,
        "ticks_per_s": round(ticks / elapsed, 2) if elapsed else None,
        "simulated_s": round(sim_now, 1),
        "points_per_plot": points,
        "server_rss_mib": {"start": round(rss_start, 1), "end": round(rss_end, 1)},
    }
    if args.soak_ticks:
        result["soak"] = soak(args.soak_ticks)
    b = result["slider_to_plot_in_browser_ms"]
    print(
        f"slider->plot in the browser: median {b['median']} ms, p95 {b['p95']} ms ({n} changes; {misses} missed); "
        f"server tick median {result['server_tick_ms']['median']} ms, {result['ticks_per_s']} ticks/s"
    )
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
