"""Where a band change's time goes: a Chromium performance trace of a few changes and the server's timestamps.

Serves the app in-process, drives Chromium with Playwright (as ``dashboard_latency.py``), sets a speed and nudges the
upper handle of the queue-drain band ``--changes`` times while Chromium records a trace (``Browser.start_tracing``,
categories ``devtools.timeline``). Prints, from the trace, the page's main-thread **CPU** (thread time, which holds
under load, unlike wall time): per kind of task (BokehJS painting the figures in an animation frame, WebSocket
messages, the key press), per task its median and p90, and inside it the forced style recalculations and layouts;
and, per change, on one clock (epoch ms): keydown (page) -> the server has the value -> the engine has it -> the
ticks after it (wall and their CPU) -> the page's source holds the new ``band_high`` -> the next animation frame.

    python benchmarks/dashboard_trace.py --speed 600 --changes 8 --out /tmp/trace600

The trace (``trace.json``) opens in Chromium's DevTools (Performance, Load profile) or https://ui.perfetto.dev.
The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_latency import JS_BAND_SOURCE, JS_LAST_BAND_HIGH  # noqa: E402
from dashboard_memory import CHROMIUM_ARGS, JS_HAS_DATA  # noqa: E402

#: JS: stamp keydowns, the streams that bring a new band_high, and the animation frame after each (epoch ms).
JS_STAMPS = f"""() => {{
  window._stamps = {{keydown: [], received: [], frame: []}};
  const now = () => performance.timeOrigin + performance.now();
  let last = null, hooked = null;
  const hook = () => {{
    const s = ({JS_BAND_SOURCE})(); if (!s || s === hooked) return; hooked = s;
    s.streaming.connect(() => {{
      const v = s.data.band_high, high = v.length ? v[v.length - 1] : null;
      if (last !== null && high !== null && Math.abs(high - last) > 1e-9) {{
        window._stamps.received.push(now()); requestAnimationFrame(() => window._stamps.frame.push(now()));
      }}
      last = high;
    }});
  }};
  hook(); setInterval(hook, 200);
  document.addEventListener('keydown', () => window._stamps.keydown.push(now()), true);
}}"""
#: Trace events whose thread time is summed inside each task.
PARTS = ("UpdateLayoutTree", "Layout", "Paint", "PrePaint", "Commit", "FunctionCall", "ParseHTML", "MinorGC", "MajorGC")


def epoch_ms() -> float:
    return time.time() * 1000


def record(speed: float, changes: int, out: Path, chromium: str) -> dict:
    """Serve the dashboard, trace ``changes`` band changes at ``speed``; the stamps of both sides."""
    import panel as pn
    from bokeh.document.events import ModelChangedEvent
    from panel.io.state import state
    from panel.tests.util import serve_and_wait
    from playwright.sync_api import sync_playwright

    from dashboard.ui import Dashboard

    pn.extension()
    made: list = []
    server: list[tuple[float, str]] = []

    def app():
        d = Dashboard()
        made.append(d)

        def on_change(event) -> None:  # the browser's change applied to the slider's model (before Panel's debounce)
            if isinstance(event, ModelChangedEvent) and type(event.model).__name__ == "RangeSlider":
                server.append((epoch_ms(), event.attr))

        pn.state.curdoc.on_change(on_change)
        return d.page() if hasattr(d, "page") else d

    port = serve_and_wait(app)
    applied: list[float] = []
    ticks: list[tuple[float, float, float]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded", timeout=120000)
        page.wait_for_function(JS_HAS_DATA, timeout=120000, polling=20)
        d = made[0]
        real_apply, real_tick = d.session.apply, d.loop.tick

        def timed_apply(values):
            applied.append(epoch_ms())
            return real_apply(values)

        def timed_tick(wall_dt):
            t0, cpu0 = epoch_ms(), time.thread_time()
            real_tick(wall_dt)
            ticks.append((t0, epoch_ms(), (time.thread_time() - cpu0) * 1000))

        d.session.apply, d.loop.tick = timed_apply, timed_tick
        d.controls = type(d.controls)(d.session, on_applied=d._applied)  # its widgets call the timed apply
        d.controls_holder[:] = [d.controls.layout]
        d.session.speed = speed
        page.wait_for_timeout(2500)
        page.evaluate(JS_STAMPS)
        handle = page.locator(".ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME .noUi-handle").nth(1)
        handle.focus()
        server.clear(), ticks.clear()
        categories = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "toplevel"]
        browser.start_tracing(page=page, path=str(out / "trace.json"), categories=categories)
        misses, up = 0, True
        for _ in range(changes):
            target = (page.evaluate(JS_LAST_BAND_HIGH) or 30.0) + (1.0 if up else -1.0)
            handle.press("ArrowRight" if up else "ArrowLeft")
            try:
                page.wait_for_function(f"() => Math.abs(({JS_LAST_BAND_HIGH})() - {target}) < 1e-6", polling="raf", timeout=10000)
            except Exception:  # noqa: BLE001 - a miss is counted
                misses += 1
            up = not up
            page.wait_for_timeout(800)
        browser.stop_tracing()
        stamps = page.evaluate("() => window._stamps")
        browser.close()
    for dd in made:
        dd.stop(clear_plots=False)
    state.kill_all_servers()
    return {"page": stamps, "server": server, "applied": applied, "ticks": ticks, "misses": misses}


def main_thread_tasks(trace_path: Path) -> dict:
    """The page's main-thread tasks in the trace, by kind: their count, thread time and what it went to."""
    raw = json.loads(trace_path.read_text())
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    mains = Counter((e.get("pid"), e.get("tid")) for e in events if names.get((e.get("pid"), e.get("tid"))) == "CrRendererMain")
    main = mains.most_common(1)[0][0]
    timed = [e for e in events if (e.get("pid"), e.get("tid")) == main and e.get("ph") == "X" and "dur" in e]
    timed.sort(key=lambda e: (e["ts"], -e["dur"]))
    tasks: list[dict] = []
    end = -1.0
    for e in timed:  # an event not inside the previous top-level one starts a task
        if e["ts"] >= end:
            tasks.append({"top": e, "inside": []})
            end = e["ts"] + e["dur"]
        else:
            tasks[-1]["inside"].append(e)
    span_s = (timed[-1]["ts"] - timed[0]["ts"]) / 1e6

    def kind(task: dict) -> str:
        inside = task["inside"]
        functions = {e.get("args", {}).get("data", {}).get("functionName") for e in inside if e["name"] == "FunctionCall"}
        frame = any(e["name"] == "FireAnimationFrame" for e in inside)
        if frame and any(e["name"] == "UpdateLayoutTree" for e in inside):
            return "frame_with_style"  # BokehJS painting figures (it forces style recalculation)
        if "socket.onmessage" in functions:
            return "websocket_message"
        if any(e["name"] == "EventDispatch" and e.get("args", {}).get("data", {}).get("type") == "keydown" for e in inside):
            return "keydown"
        return "frame_other" if frame else "other"

    out: dict = {"span_s": round(span_s, 2), "kinds": {}}
    grouped: dict[str, list[dict]] = {}
    for task in tasks:
        grouped.setdefault(kind(task), []).append(task)
    total = 0.0
    for k, group in grouped.items():
        cpu = [t["top"].get("tdur", t["top"]["dur"]) / 1e3 for t in group]
        total += sum(cpu)
        parts, counts = Counter(), Counter()
        for t in group:
            for e in t["inside"]:
                if e["name"] in PARTS:
                    parts[e["name"]] += e.get("tdur", e["dur"]) / 1e3
                    counts[e["name"]] += 1
        out["kinds"][k] = {
            "n": len(group),
            "cpu_s": round(sum(cpu) / 1e3, 3),
            "cpu_ms_median": round(statistics.median(cpu), 2),
            "cpu_ms_p90": round(sorted(cpu)[int(0.9 * len(cpu))], 2),
            "per_task_ms": {p: round(v / len(group), 2) for p, v in parts.most_common()},
            "per_task_count": {p: round(counts[p] / len(group), 1) for p in parts},
        }
    out["main_thread_cpu_share"] = round(total / 1e3 / span_s, 3)
    return out


def per_change(stamps: dict) -> list[dict]:
    """For each keydown: ms after it when the server had the value, the engine had it, the ticks ran, the page had it."""
    keydowns = stamps["page"]["keydown"]
    rows = []
    for i, k in enumerate(keydowns):
        nxt = keydowns[i + 1] if i + 1 < len(keydowns) else float("inf")

        def first(values, k=k, nxt=nxt):
            inside = [v for v in values if k <= v < nxt]
            return round(inside[0] - k, 1) if inside else None

        applied = first(stamps["applied"])
        ticks = [t for t in stamps["ticks"] if applied is not None and t[0] >= k + applied and t[0] < nxt][:3]
        rows.append(
            {
                "server_has_it": first([t for t, attr in stamps["server"] if attr.startswith("value")]),
                "engine_has_it": applied,
                "ticks_after": [(round(a - k, 1), round(b - k, 1), round(cpu, 1)) for a, b, cpu in ticks],
                "page_has_it": first(stamps["page"]["received"]),
                "frame": first(stamps["page"]["frame"]),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", type=float, default=600.0)
    ap.add_argument("--changes", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("/tmp/dashboard-trace"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    stamps = record(args.speed, args.changes, args.out, args.chromium)
    (args.out / "stamps.json").write_text(json.dumps(stamps))
    result = {"speed": args.speed, "load_average_start": round(load, 2), "misses": stamps["misses"]}
    result["main_thread"] = main_thread_tasks(args.out / "trace.json")
    result["changes"] = per_change(stamps)
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    for k, v in sorted(result["main_thread"]["kinds"].items(), key=lambda kv: -kv[1]["cpu_s"]):
        parts = " ".join(f"{p} {ms} ms x{v['per_task_count'][p]}" for p, ms in v["per_task_ms"].items())
        print(f"{k:18} {v['n']:6} tasks, CPU {v['cpu_s']:.2f} s, median {v['cpu_ms_median']} ms, p90 {v['cpu_ms_p90']} ms | {parts}")
    print(f"main thread CPU {result['main_thread']['main_thread_cpu_share']:.0%} of {result['main_thread']['span_s']} s")
    for row in result["changes"]:
        print(row)
    print(f"load average {load:.2f} at start, {result['load_average_end']:.2f} at end")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
