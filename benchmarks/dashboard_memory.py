"""Server memory over open-and-close sessions: ``panel serve dashboard/app.py`` (the flags of ``make serve``) as a
subprocess, Debian's Chromium opening one tab after another, each left streaming a few seconds and closed.

The server's resident memory is read from ``/proc/<pid>/status`` after each session, and at the end once the
server has collected the closed sessions (``--unused-session-lifetime``). Goal: the last reading within 10% of the
reading after the first session, which holds everything a first session loads once (imports, caches).

    python benchmarks/dashboard_memory.py                 # 20 sessions of 4 s
    python benchmarks/dashboard_memory.py --sessions 5    # a quick look
    python benchmarks/dashboard_memory.py --app-dir /tmp/old-checkout   # another checkout, side by side
    python benchmarks/dashboard_memory.py --sessions 40 --diagnose      # what the server keeps (memory_probe.py)
    python benchmarks/dashboard_memory.py --sessions 40 --diagnose --trace   # and where it was allocated (slow)

``--diagnose`` (off by default) serves with ``--setup benchmarks/memory_probe.py`` and, after sessions 1, 5, 10, 20, 40
and once more after the clean-up, has the server count its live objects by type (after a full collection) and read
its heap; it prints the types that grew most since session 1 and, with ``--trace``, ``tracemalloc``'s largest growths.
The RSS readings are taken before each probe, as without it.

The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
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


def serve(app_dir: Path, probe_dir: Path | None = None, trace: bool = False) -> tuple[subprocess.Popen, int]:
    """``panel serve dashboard/app.py`` on a free port in ``app_dir``; returns the process and its port. With
    ``probe_dir``, served with :mod:`memory_probe` (its snapshots go there)."""
    env = {**os.environ, "PYTHONPATH": str(app_dir), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "panel", "serve", "dashboard/app.py", "--port", "0", "--address", "127.0.0.1"]
    cmd += ["--check-unused-sessions", str(CHECK_MS), "--unused-session-lifetime", str(LIFETIME_MS)]
    if probe_dir is not None:
        cmd += ["--setup", str(Path(__file__).with_name("memory_probe.py"))]
        env["SCALELAB_MEMORY_PROBE_DIR"] = str(probe_dir)
        if trace:
            env["SCALELAB_MEMORY_PROBE_TRACE"] = "1"
    proc = subprocess.Popen(cmd, cwd=app_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"Bokeh app running at: http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise RuntimeError("panel serve did not start")


#: Sessions after which ``--diagnose`` probes the server (and once more after the clean-up).
PROBE_AT = (1, 5, 10, 20, 40)
#: Types whose live counts ``--diagnose`` always prints (what a served session is made of).
WATCHED = (
    "dashboard.ui.Dashboard",
    "dashboard.session.LiveSession",
    "engine.sim.simulation.Simulation",
    "bokeh.document.document.Document",
    "bokeh.server.session.ServerSession",
    "bokeh.models.sources.ColumnDataSource",
    "bokeh.plotting._figure.figure",
    "pandas.core.frame.DataFrame",
    "panel.io.callbacks.PeriodicCallback",
)


def soak(
    app_dir: Path = ROOT,
    sessions: int = 20,
    hold_s: float = 4.0,
    chromium: str = "/usr/bin/chromium",
    gap_s: float = 1.0,
    diagnose: bool = False,
    trace: bool = False,
) -> dict:
    """Open and close ``sessions`` tabs one after another; the server's RSS after each and at the end (MiB). With
    ``diagnose``, the server's probes (:mod:`memory_probe`) under ``"probes"``."""
    from playwright.sync_api import sync_playwright

    probe_dir = Path(tempfile.mkdtemp(prefix="scalelab-memory-probe-")) if diagnose or trace else None
    proc, port = serve(app_dir, probe_dir, trace)
    readings, first_data, probes = [], [], {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            for i in range(1, sessions + 1):
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                t0 = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/app", wait_until="domcontentloaded", timeout=180000)  # a busy machine
                page.wait_for_function(JS_HAS_DATA, timeout=120000, polling=50)
                first_data.append(time.perf_counter() - t0)
                page.wait_for_timeout(hold_s * 1000)
                page.close()
                time.sleep(gap_s)
                readings.append(round(rss_mib(proc.pid), 1))
                if probe_dir is not None and i in PROBE_AT:
                    probes[f"after {i}"] = probe(proc.pid, probe_dir, len(probes) + 1)
            browser.close()
        time.sleep((LIFETIME_MS + 2 * CHECK_MS) / 1000)  # every closed session collected by the server
        settled = round(rss_mib(proc.pid), 1)
        if probe_dir is not None:
            probes["settled"] = probe(proc.pid, probe_dir, len(probes) + 1)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    first = readings[0]
    result = {
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
    if probes:
        result["probes"] = probes
        result["probe_dir"] = str(probe_dir)
    return result


def probe(pid: int, probe_dir: Path, n: int) -> dict:
    """Have the server write its ``n``-th snapshot (SIGUSR1 to :mod:`memory_probe`) and read it."""
    os.kill(pid, signal.SIGUSR1)
    path = probe_dir / f"probe-{n}.json"
    while not path.exists():  # the server answers between two of its callbacks; a busy machine takes its time
        time.sleep(0.1)
    return json.loads(path.read_text())


def print_probes(result: dict) -> None:
    """The watched types at each probe, then the largest growths of live objects (and traced memory) since session 1."""
    from memory_probe import top_growers, trace_growers

    probes = result["probes"]
    names = list(probes)
    print("probe        " + "".join(f"{n:>11}" for n in names))
    print("rss MiB      " + "".join(f"{probes[n]['rss_mib']:>11}" for n in names))
    for key in ("in_use_mib", "free_mib"):
        print(f"heap {key:<8}" + "".join(f"{probes[n]['heap'].get(key, '-'):>11}" for n in names))
    if "traced_mib" in probes[names[0]]:
        print("traced MiB   " + "".join(f"{probes[n].get('traced_mib', '-'):>11}" for n in names))
    print("threads      " + "".join(f"{sum(probes[n]['threads'].values()):>11}" for n in names))
    for t in WATCHED:
        print(f"{t.rsplit('.', 1)[1][:12]:<13}" + "".join(f"{probes[n]['types'].get(t, 0):>11}" for n in names))
    first, last = probes[names[0]], probes[names[-1]]
    print(f"live objects that grew most from '{names[0]}' to '{names[-1]}' (type, count, growth):")
    for t, count, grown in top_growers(first, last):
        print(f"  {grown:+8d} {count:8d}  {t}")
    new = sorted(set(last["modules"]) - set(first["modules"]))
    print(f"modules imported after '{names[0]}': {len(new)}" + (f" ({', '.join(sorted({m.split('.')[0] for m in new}))})" if new else ""))
    print("threads: " + ", ".join(f"{k}: {probes[names[0]]['threads'].get(k, 0)} -> {v}" for k, v in last["threads"].items()))
    if "traced_mib" in first:
        trace_dir = Path(result["probe_dir"])
        for a, b in ((1, 2), (2, len(names))):
            print(f"traced memory that grew most from '{names[a - 1]}' to '{names[b - 1]}':")
            for line in trace_growers(trace_dir / f"trace-{a}.bin", trace_dir / f"trace-{b}.bin"):
                print("  " + line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--hold", type=float, default=4.0, help="wall seconds each tab streams before it is closed")
    ap.add_argument("--gap", type=float, default=1.0, help="wall seconds between closing a tab and reading the RSS / opening the next")
    ap.add_argument("--app-dir", type=Path, default=ROOT, help="checkout whose dashboard/app.py is served")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--diagnose", action="store_true", help=f"probe the server after sessions {PROBE_AT} and at the end")
    ap.add_argument("--trace", action="store_true", help="with --diagnose: tracemalloc in the server too (slower)")
    args = ap.parse_args()
    load = os.getloadavg()
    result = soak(args.app_dir, args.sessions, args.hold, args.chromium, args.gap, args.diagnose or args.trace, args.trace)
    result["load_average_start"] = [round(v, 2) for v in load]
    result["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    print(
        f"server RSS after the first session {result['rss_mib_after_each'][0]} MiB, after {args.sessions} and clean-up "
        f"{result['rss_mib_settled']} MiB ({result['growth_vs_first']:+.1%}); load {load[0]:.2f}"
    )
    if "probes" in result:
        print_probes(result)
        result["probes"] = {
            n: {k: v for k, v in p.items() if k not in ("types", "modules")} for n, p in result["probes"].items()
        }  # the counts: in probe_dir
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
