"""Dashboard latency in a real browser: slider -> engine -> plot at speeds 60, 600 and 3600, first data, server time.

Serves the app's page in-process (so server-side times can be read), drives Debian's Chromium with Playwright,
nudges the upper handle of the queue-drain band back and forth and times, in the page, keydown -> the first
animation frame after the time_left plot's source holds the new ``band_high``. Also: page load -> first plot with
data, the server's time per tick and where it goes, and its CPU share. ``--peer DIR`` runs the same measurement
on another checkout in a subprocess (``--peer main`` exports the main branch: the dashboard before HoloViews,
raw bokeh figures and ColumnDataSource streams) and prints both side by side. Memory over open-and-close sessions
is ``benchmarks/dashboard_memory.py``; this script runs it too unless ``--no-soak``.

    python benchmarks/dashboard_latency.py --quick            # ~3 min: 3 speeds x 10 s, 20-session soak of 0.5 s each
    python benchmarks/dashboard_latency.py                    # 3 speeds x 60 s, 20 sessions of 4 s
    python benchmarks/dashboard_latency.py --quick --peer main --no-soak   # before/after, side by side

Per world (``dashboard_worlds.py``; skip with ``--no-worlds``): first data, scenario switch, Reset, Compare, upload to
every Replay view drawn, Branch here, and a scrub step's server time, each with the load average beside it.

Goals (printed, never asserted; at load <= 1): slider->plot p95 <= 200 ms at every speed; first data <= 1 s; scenario
switch, Reset, replay open and Branch here <= 1.5 s; a scrub step <= 100 ms of server time; memory flat within 10% over
20 sessions. The last line is ``RESULT {json}`` with ``first_data_s``, ``slider_p95_s`` (by speed), ``replay_open_s``,
``branch_s``, ``scrub_step_s`` and ``worlds``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_memory import CHROMIUM_ARGS, JS_HAS_DATA, soak  # noqa: E402

SPEEDS = (60.0, 600.0, 3600.0)
#: JS: the source the time_left plot draws band_high from (new: a renderer of figure ts-time_left; before: samples-live).
JS_BAND_SOURCE = """() => { const d = Bokeh.documents[0]; const old = d.get_model_by_name('samples-live'); if (old) return old;
  let found = null;
  for (const m of d._all_models.values()) if (m.name === 'ts-time_left')
    for (const r of m.renderers) if (r.data_source && r.data_source.data && 'band_high' in r.data_source.data) found = r.data_source;
  return found; }"""
JS_LAST_BAND_HIGH = (
    f"() => {{ const s = ({JS_BAND_SOURCE})(); const v = s ? s.data.band_high : []; return v.length ? v[v.length - 1] : null; }}"
)
#: In the page: stamp each keydown; when the plotted band_high next changes, stamp the following animation frame.
JS_WATCH = f"""() => {{
  window._lat = {{kd: null, results: [], source: null}};
  let last = null;
  const hook = () => {{
    const s = ({JS_BAND_SOURCE})();
    if (!s || s === window._lat.source) return;
    window._lat.source = s;
    const check = () => {{
      const v = s.data.band_high, now = v.length ? v[v.length - 1] : null;
      if (now !== null && last !== null && Math.abs(now - last) > 1e-9 && window._lat.kd !== null) {{
        const kd = window._lat.kd; window._lat.kd = null;
        requestAnimationFrame(() => window._lat.results.push(performance.now() - kd));
      }}
      last = now;
    }};
    s.streaming.connect(check); s.change.connect(check); s.patching.connect(check);
  }};
  hook(); setInterval(hook, 200);  // a plot re-rendered gets a new source
  document.addEventListener('keydown', () => {{ window._lat.kd = performance.now(); }}, true);
}}"""


def descendants_cpu_s(root: int | None = None) -> float:
    """CPU seconds (user + system) of every process below ``root`` (this one): Chromium and Playwright's driver."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def main_thread_seconds(cdp) -> dict[str, float]:
    """Seconds the page's main thread has spent so far (Chromium's ``Performance.getMetrics``): in tasks, in scripts,
    recalculating style and laying out."""
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    names = {"task": "TaskDuration", "script": "ScriptDuration", "style": "RecalcStyleDuration", "layout": "LayoutDuration"}
    return {k: float(got.get(v, 0.0)) for k, v in names.items()}


def pct(a: list[float], q: float) -> float:
    return float(np.percentile(a, q)) if a else float("nan")


def summary(values: list[float], digits: int = 1) -> dict:
    return {"median": round(pct(values, 50), digits), "p95": round(pct(values, 95), digits), "n": len(values)}


def measure(duration: float, interval: float, chromium: str, speeds: tuple[float, ...] = SPEEDS, worlds: bool = False) -> dict:
    """One dashboard in this process, one browser: first data, then ``duration`` s of band changes at each speed."""
    import panel as pn
    from panel.io.state import state
    from panel.tests.util import serve_and_wait
    from playwright.sync_api import sync_playwright

    from dashboard.ui import Dashboard

    pn.extension()
    made: list = []

    def app():
        d = Dashboard()
        made.append(d)
        return d.page() if hasattr(d, "page") else d

    port = serve_and_wait(app)
    out: dict = {"speeds": {}}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        t_open = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded", timeout=120000)
        page.wait_for_function(JS_HAS_DATA, timeout=120000, polling=20)
        out["first_data_s"] = round(time.perf_counter() - t_open, 2)
        out["first_data_load"] = round(os.getloadavg()[0], 2)
        d = made[0]
        applied: list[float] = []
        real_apply = d.session.apply

        def timed_apply(changes):  # when a change reached the engine (same clock as the key press)
            applied.append(time.perf_counter())
            return real_apply(changes)

        d.session.apply = timed_apply  # the controls call the session through this attribute
        controls = type(d.controls)
        d.controls = (
            controls(d.session, on_applied=d._applied) if "on_applied" in controls.__init__.__code__.co_varnames else controls(d.session)
        )
        d.controls_holder[:] = [d.controls.layout]
        page.wait_for_timeout(1500)
        cdp = page.context.new_cdp_session(page)  # Chromium's own clock of its main thread (Performance domain)
        cdp.send("Performance.enable")
        page.evaluate(JS_WATCH)
        handle = page.locator(".ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME .noUi-handle").nth(1)
        for speed in speeds:
            d.session.speed = speed
            page.wait_for_timeout(1500)  # settle at the new speed
            page.evaluate("() => { window._lat.results = []; }")
            d.tick_seconds.clear()
            d.part_seconds.clear()
            to_engine, misses = [], 0
            cpu0, wall0, sim0 = time.process_time(), time.perf_counter(), d.session.sim.now
            browser0 = descendants_cpu_s()
            main0 = main_thread_seconds(cdp)
            up = True
            handle.focus()
            while time.perf_counter() - wall0 < duration:
                current = page.evaluate(JS_LAST_BAND_HIGH)
                target = (current or 30.0) + (1.0 if up else -1.0)
                n = len(applied)
                t0 = time.perf_counter()
                handle.press("ArrowRight" if up else "ArrowLeft")
                try:
                    page.wait_for_function(f"() => Math.abs(({JS_LAST_BAND_HIGH})() - {target}) < 1e-6", polling="raf", timeout=5000)
                except Exception:  # noqa: BLE001 - a miss is counted, not fatal
                    misses += 1
                if len(applied) > n:
                    to_engine.append((applied[n] - t0) * 1000)
                up = not up
                page.wait_for_timeout(max(0.0, interval - (time.perf_counter() - t0)) * 1000)
            wall = time.perf_counter() - wall0
            in_browser = page.evaluate("() => window._lat.results")
            parts = {k: summary([x * 1000 for x in v], 2) for k, v in d.part_seconds.items() if v}
            out["speeds"][f"{speed:g}"] = {
                "slider_to_plot_in_browser_ms": {**summary(in_browser), "misses": misses},
                "slider_to_engine_ms": summary(to_engine),
                "server_tick_ms": summary([t * 1000 for t in d.tick_seconds], 2),
                "server_tick_parts_ms": parts,
                "server_cpu_share": round((time.process_time() - cpu0) / wall, 3),  # of one core: server and engine together
                "browser_cpu_share": round((descendants_cpu_s() - browser0) / wall, 3),  # Chromium's processes (and the driver)
                # the page's main thread, share of the wall time: all its tasks, JS, style recalculation, layout
                "browser_main_thread": {k: round((v - main0[k]) / wall, 3) for k, v in main_thread_seconds(cdp).items()},
                "achieved_speed": round((d.session.sim.now - sim0) / wall, 1),
                "load_average": round(os.getloadavg()[0], 2),
            }
        if worlds:
            from dashboard_worlds import measure_worlds

            try:
                out["worlds"] = measure_worlds(page, port, made, quick=duration <= 10)
            except Exception as err:  # noqa: BLE001 - a world's timeout (a loaded machine) keeps the speeds' figures
                out["worlds_error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        browser.close()
    for dd in made:
        dd.stop(clear_plots=False)  # the server destroys the documents; their plots go with them
    state.kill_all_servers()
    return out


def export_main(into: Path) -> Path:
    """The main branch's tree (``git archive``) in ``into``: the dashboard before this work, with its engine."""
    archive = into / "main.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), "main"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "main", filter="data")
    return into / "main"


def run_peer(peer: str, args: argparse.Namespace) -> dict:
    """The same measurement on another checkout, in a subprocess importing that checkout's dashboard and engine."""
    with tempfile.TemporaryDirectory() as tmp:
        where = export_main(Path(tmp)) if peer == "main" else Path(peer)
        cmd = [sys.executable, __file__, "--measure-only", "--duration", str(args.duration), "--interval", str(args.interval)]
        cmd += ["--speeds", args.speeds]
        env = {**os.environ, "PYTHONPATH": str(where)}
        done = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=1800)
        line = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"the peer run failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        return json.loads(line[len("RESULT ") :])


def main_thread_text(v: dict) -> str:
    m = v.get("browser_main_thread")
    if not m:
        return ""
    return f"; its main thread {m['task']:.0%}: JS {m['script']:.0%}, style {m['style']:.0%}, layout {m['layout']:.0%}"


def goals(result: dict) -> dict:
    speeds = result["ours"]["speeds"]
    met = {f"p95_under_200ms_at_{s}": v["slider_to_plot_in_browser_ms"]["p95"] < 200 for s, v in speeds.items()}
    met["first_data_under_1s"] = result["first_data_s"] <= 1.0
    for kind in ("switch_s", "reset_s", "replay_open_s", "branch_s", "compare_s"):
        if kind in result:
            met[f"{kind[:-2]}_under_1.5s"] = result[kind] <= 1.5
    if "scrub_step_s" in result:
        met["scrub_step_under_100ms_server"] = result["scrub_step_s"] <= 0.1
    if "memory" in result:
        met["memory_flat_within_10pct"] = result["memory"]["goal_flat_within_10pct"]
    return met


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 s per speed and a 20-session soak of 0.5 s each (about 3 minutes)")
    ap.add_argument("--duration", type=float, default=None, help="wall seconds of band changes per speed (default 60; quick 10)")
    ap.add_argument("--interval", type=float, default=1.0, help="wall seconds between two changes")
    ap.add_argument("--peer", default=None, help="another checkout to measure side by side ('main': the main branch)")
    ap.add_argument("--speeds", default=",".join(f"{v:g}" for v in SPEEDS), help="comma-separated speeds (default 60,600,3600)")
    ap.add_argument("--no-soak", action="store_true", help="skip the memory soak")
    ap.add_argument("--no-worlds", action="store_true", help="skip the per-world measurements (first data, switch, Reset, ...)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)  # the peer's subprocess
    args = ap.parse_args()
    args.duration = args.duration or (10.0 if args.quick else 60.0)
    speeds = tuple(float(v) for v in args.speeds.split(","))
    if args.measure_only:
        print("RESULT " + json.dumps(measure(args.duration, args.interval, args.chromium, speeds)))
        return
    load = os.getloadavg()
    result: dict = {"load_average_start": [round(v, 2) for v in load], "duration_per_speed_s": args.duration}
    result["ours"] = measure(args.duration, args.interval, args.chromium, speeds, worlds=not args.no_worlds)
    if args.peer:
        result["peer"] = {"name": args.peer, **run_peer(args.peer, args)}
    if not args.no_soak:
        result["memory"] = soak(ROOT, 20, 0.5 if args.quick else 4.0, args.chromium, gap_s=0.5 if args.quick else 1.0)
    result["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    ours = result["ours"]
    result["first_data_s"] = ours["first_data_s"]
    result["slider_p95_s"] = {s: round(v["slider_to_plot_in_browser_ms"]["p95"] / 1000, 3) for s, v in ours["speeds"].items()}
    if "worlds" in ours:
        from dashboard_worlds import summarise

        result.update(summarise(ours["worlds"]))
        result["first_data_s"] = max(result["first_data_s"], result.pop("first_data_s_worlds", 0.0))
        result["worlds"] = sorted(ours["worlds"])
    result["goals_met"] = goals(result)
    for who in ("ours", "peer"):
        if who not in result:
            continue
        for speed, v in result[who]["speeds"].items():
            b = v["slider_to_plot_in_browser_ms"]
            print(
                f"{who:5} speed {speed:>5}: slider->plot median {b['median']} ms, p95 {b['p95']} ms ({b['n']} changes, {b['misses']} missed); "
                f"server tick median {v['server_tick_ms']['median']} ms, CPU {v['server_cpu_share']:.0%} of a core "
                f"(browser {v.get('browser_cpu_share', float('nan')):.0%}{main_thread_text(v)}), "
                f"achieved {v['achieved_speed']:g}x"
            )
        print(f"{who:5} first data {result[who]['first_data_s']} s (load {result[who].get('first_data_load', float('nan'))})")
        for world, w in result[who].get("worlds", {}).items():
            figures = ", ".join(f"{k} {v['s']} s (load {v['load']})" for k, v in w.items() if isinstance(v, dict) and "s" in v)
            scrub = w["scrub_step_server"]
            print(
                f"{who:5} {world:9} {w['scenario']}: {figures}; scrub step server median {scrub['median_s'] * 1000:.1f} ms, p95 {scrub['p95_s'] * 1000:.1f} ms"
            )
    if "worlds_error" in result["ours"]:
        print(f"ours  worlds not measured to the end: {result['ours']['worlds_error']}")
    if "memory" in result:
        m = result["memory"]
        print(
            f"memory: {m['rss_mib_after_each'][0]} MiB after the first session, {m['rss_mib_settled']} MiB after 20 ({m['growth_vs_first']:+.1%})"
        )
    print(f"load average {load[0]:.2f} at start, {result['load_average_end'][0]:.2f} at end; goals {result['goals_met']}")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
