"""First data, and where its time goes: a fresh page in Chromium to the world's first plot with data, per world.

Serves the app's page in-process (``Dashboard().page()``, as ``dashboard/app.py`` does), opens ``?scenario=NAME`` in a
new browser context each time (nothing cached between pages) and times, with the load average beside each figure:

* ``first_data_s``: navigation start -> the first figure of the world's tab holds two rows (median and p95 of the
  pages); ``html_s`` (the server's answer: the session is built while the page's HTML is made), ``doc_s`` (BokehJS
  has the document) and the rest in the browser;
* ``server_cpu_s``: the server's CPU (this process's clock) from navigation to first data, and
  ``session_cpu_s``: the CPU of building the session (``Dashboard()`` and ``page()``), both medians;
* Chromium's own counters of the page at first data (``Performance.getMetrics`` over CDP): script, layout and
  style-recalculation seconds of the renderer's main thread, and the number of DOM nodes.

    python benchmarks/dashboard_first_data.py                  # 5 pages per world
    python benchmarks/dashboard_first_data.py --pages 3 --worlds default

Goal (issue 18; printed, never asserted): first data <= 1.0 s at load <= 1. Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_memory import CHROMIUM_ARGS  # noqa: E402
from dashboard_worlds import JS_FIGURES, WORLDS  # noqa: E402

#: Chromium's counters kept (seconds of the renderer's main thread, and a count).
METRICS = ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration", "Nodes")
#: JS: BokehJS holds the page's document.
JS_DOC = "() => !!(window.Bokeh && Bokeh.documents && Bokeh.documents.length)"


def _median(values: list[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits) if values else float("nan")


def _p95(values: list[float], digits: int = 3) -> float:
    return round(sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))], digits) if values else float("nan")


def measure(worlds: list[str], pages: int, chromium: str) -> dict:
    import panel as pn
    from panel.tests.util import serve_and_wait
    from playwright.sync_api import sync_playwright

    from dashboard.ui import Dashboard

    pn.extension(notifications=False)
    built: list[float] = []
    made: list = []

    def app():
        c0 = time.process_time()
        d = Dashboard()
        page = d.page()
        built.append(time.process_time() - c0)
        made.append(d)
        return page

    port = serve_and_wait(app)
    out: dict = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for name in worlds:
            prefix = WORLDS[name][1]
            rows: list[dict] = []
            for i in range(pages + 1):  # the first page of a world warms the process's caches: not counted
                context = browser.new_context(viewport={"width": 1600, "height": 1000})
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable")
                n_built = len(built)
                c0, t0 = time.process_time(), time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/?scenario={name}", wait_until="commit")
                t_html = time.perf_counter()
                page.wait_for_function(JS_DOC, timeout=180_000, polling=10)
                t_doc = time.perf_counter()
                page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=180_000, polling=10)
                t1, c1 = time.perf_counter(), time.process_time()
                metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
                row = {
                    "first_data_s": t1 - t0,
                    "html_s": t_html - t0,
                    "doc_s": t_doc - t0,
                    "server_cpu_s": c1 - c0,
                    "session_cpu_s": built[n_built] if len(built) > n_built else float("nan"),
                    "load": os.getloadavg()[0],
                    **{m: metrics.get(m, float("nan")) for m in METRICS},
                }
                if i:
                    rows.append(row)
                    print(f"{name} page {i}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
                context.close()
                while made:
                    made.pop().stop(clear_plots=False)
            fields = [k for k in rows[0] if k != "load"]
            out[name] = {k: _median([r[k] for r in rows]) for k in fields}
            out[name]["first_data_p95_s"] = _p95([r["first_data_s"] for r in rows])
            out[name]["load"] = [round(min(r["load"] for r in rows), 2), round(max(r["load"] for r in rows), 2)]
            out[name]["pages"] = len(rows)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=5, help="pages per world (after one warm-up page)")
    ap.add_argument("--worlds", nargs="*", default=list(WORLDS), choices=list(WORLDS))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    result = measure(args.worlds, args.pages, args.chromium)
    for name, r in result.items():
        print(
            f"{name:11} first data {r['first_data_s']:.2f} s median, {r['first_data_p95_s']:.2f} s p95 (html {r['html_s']:.2f} s, "
            f"document {r['doc_s']:.2f} s); server CPU {r['server_cpu_s']:.2f} s (session {r['session_cpu_s']:.2f} s); "
            f"Chromium script {r['ScriptDuration']:.2f} s, layout {r['LayoutDuration']:.2f} s, style {r['RecalcStyleDuration']:.2f} s, "
            f"{r['Nodes']:.0f} DOM nodes; load {r['load'][0]}-{r['load'][1]}"
        )
    result["first_data_s"] = max(r["first_data_s"] for r in result.values())
    result["goal_met"] = result["first_data_s"] <= 1.0
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
