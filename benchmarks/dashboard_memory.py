"""Server memory over open-and-close sessions: ``panel serve dashboard/app.py`` (the flags of ``make serve``) as a
subprocess, Debian's Chromium opening one tab after another, each left streaming a few seconds and closed.

The server's resident memory is read from ``/proc/<pid>/status`` after each session, and at the end once the
server has collected the closed sessions (``--unused-session-lifetime``). Goal: the last reading within 10% of the
reading after the first session, which holds everything a first session loads once (imports, caches).

    python benchmarks/dashboard_memory.py                 # 20 sessions of 4 s
    python benchmarks/dashboard_memory.py --sessions 5    # a quick look
    python benchmarks/dashboard_memory.py --app-dir /tmp/old-checkout   # another checkout, side by side

The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
#: make serve's session clean-up: check every second, drop a session 15 s after its last browser left.
CHECK_MS, LIFETIME_MS = 1000, 15000
#: JS: has the live queue plot (new: figure ts-queue; before the redesign: source samples-live) got rows?
JS_HAS_DATA = """() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;
  const old = d.get_model_by_name('samples-live'); if (old) return old.data.time.length > 3;
  for (const m of d._all_models.values()) if (m.name === 'ts-queue')
    return m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length > 3);
  return false; }"""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def serve(app_dir: Path) -> tuple[subprocess.Popen, int]:
    """``panel serve dashboard/app.py`` on a free port in ``app_dir``; returns the process and its port."""
    env = {**os.environ, "PYTHONPATH": str(app_dir), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "panel", "serve", "dashboard/app.py", "--port", "0", "--address", "127.0.0.1"]
    cmd += ["--check-unused-sessions", str(CHECK_MS), "--unused-session-lifetime", str(LIFETIME_MS)]
    proc = subprocess.Popen(cmd, cwd=app_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"Bokeh app running at: http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise RuntimeError("panel serve did not start")


def soak(app_dir: Path = ROOT, sessions: int = 20, hold_s: float = 4.0, chromium: str = "/usr/bin/chromium", gap_s: float = 1.0) -> dict:
    """Open and close ``sessions`` tabs one after another; the server's RSS after each and at the end (MiB)."""
    from playwright.sync_api import sync_playwright

    proc, port = serve(app_dir)
    readings, first_data = [], []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            for _ in range(sessions):
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                t0 = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/app", wait_until="domcontentloaded", timeout=180000)  # a busy machine
                page.wait_for_function(JS_HAS_DATA, timeout=120000, polling=50)
                first_data.append(time.perf_counter() - t0)
                page.wait_for_timeout(hold_s * 1000)
                page.close()
                time.sleep(gap_s)
                readings.append(round(rss_mib(proc.pid), 1))
            browser.close()
        time.sleep((LIFETIME_MS + 2 * CHECK_MS) / 1000)  # every closed session collected by the server
        settled = round(rss_mib(proc.pid), 1)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    first = readings[0]
    return {
        "sessions": sessions,
        "hold_s": hold_s,
        "gap_s": gap_s,
        "rss_mib_after_each": readings,
        "rss_mib_settled": settled,
        "growth_vs_first": round(settled / first - 1, 3),
        "per_session_mib": round((settled - first) / max(1, sessions - 1), 2),
        "first_data_s": {"median": round(sorted(first_data)[len(first_data) // 2], 2), "max": round(max(first_data), 2)},
        "goal_flat_within_10pct": settled <= 1.10 * first,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--hold", type=float, default=4.0, help="wall seconds each tab streams before it is closed")
    ap.add_argument("--gap", type=float, default=1.0, help="wall seconds between closing a tab and reading the RSS / opening the next")
    ap.add_argument("--app-dir", type=Path, default=ROOT, help="checkout whose dashboard/app.py is served")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    load = os.getloadavg()
    result = soak(args.app_dir, args.sessions, args.hold, args.chromium, args.gap)
    result["load_average_start"] = [round(v, 2) for v in load]
    result["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    print(
        f"server RSS after the first session {result['rss_mib_after_each'][0]} MiB, after {args.sessions} and clean-up "
        f"{result['rss_mib_settled']} MiB ({result['growth_vs_first']:+.1%}); load {load[0]:.2f}"
    )
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
