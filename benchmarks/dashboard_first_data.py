"""First data, and where its time goes: a fresh page in Chromium to the world's first plot with data, per world.

Serves the app's page (``Dashboard().page()``, as ``dashboard/app.py`` does) from a process of its own, and with
``--peer REF`` the same from that git ref's tree in a second process, the two trees' pages alternating (the same
load for both). Opens ``?scenario=NAME`` in a new browser context each time (nothing cached between pages) and times,
with the load average beside each figure:

* ``first_data_s``: navigation start -> the first figure of the world's tab holds two rows (median and p95 of the
  pages); ``html_s`` (the server's answer: the session is built while the page's HTML is made), ``doc_s`` (BokehJS
  has the document) and the rest in the browser;
* ``server_cpu_s``: the server process's CPU (every thread, from ``/proc``) from navigation to first data (it may
  include what the page does at start, after its first frame), ``server_html_cpu_s`` to the HTML answer, and
  ``session_cpu_s``: the CPU of building the session (``Dashboard()`` and ``page()``), both medians;
* Chromium's own counters of the page at first data (``Performance.getMetrics`` over CDP): main-thread task, script,
  layout and style-recalculation seconds of the renderer, and the number of DOM nodes.

With ``--floor`` a third server, in a process of its own, serves the floor: a bare Panel page in the same template
(``pn.template.BootstrapTemplate``) holding one Bokeh figure whose ``ColumnDataSource`` has its first rows in the first
document and streams a row per 100 ms after the page loads (as ours does), measured the same way, its pages
alternating with ours. ``ours / floor`` then says how much of the 1.0 s goal the libraries alone take here.
``--floor template plain`` adds a second floor, the same figure in a plain ``pn.Column`` page (no template: Panel's
own page, one root), named ``floor-plain``: what the template itself costs.

The servers are killed at the end (never shut down while a session's callback may still be scheduled).

    python benchmarks/dashboard_first_data.py                  # 5 pages per world
    python benchmarks/dashboard_first_data.py --pages 3 --worlds default --peer main
    python benchmarks/dashboard_first_data.py --pages 3 --peer main --floor   # and the libraries' floor
    python benchmarks/dashboard_first_data.py --pages 3 --floor template plain   # and the floor without a template

Goal (issue 18; printed, never asserted): first data <= 1.0 s at load <= 1. Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import add_page_options, alternate_pages  # noqa: E402
from dashboard_builds import export_ref  # noqa: E402
from dashboard_memory import CHROMIUM_ARGS  # noqa: E402
from dashboard_worlds import JS_FIGURES, WORLDS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Chromium's counters kept (seconds of the renderer's main thread, and a count).
METRICS = ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration", "Nodes")
#: JS: BokehJS holds the page's document.
JS_DOC = "() => !!(window.Bokeh && Bokeh.documents && Bokeh.documents.length)"
#: The floor page's figure name (``JS_FIGURES`` finds it by this prefix), its first rows and the rows streamed a second.
FLOOR_PREFIX, FLOOR_FIRST_ROWS, FLOOR_PERIOD_MS = "floor-", 6, 100


def _median(values: list[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits) if values else float("nan")


def _p95(values: list[float], digits: int = 3) -> float:
    return round(sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))], digits) if values else float("nan")


def serve(port: int, built_log: str) -> None:
    """The served app (``Dashboard().page()``, as ``dashboard/app.py``) in this process, until it is killed; the CPU of
    building each session (``Dashboard()`` and ``page()``) is appended to ``built_log``, one line each."""
    import panel as pn

    from dashboard.ui import Dashboard

    pn.extension(notifications=False)

    def app():
        c0 = time.process_time()
        page = Dashboard().page()
        with open(built_log, "a") as log:
            log.write(f"{time.process_time() - c0}\n")
        return page

    pn.serve({"/": app}, port=port, address="127.0.0.1", show=False, threaded=False, title="scalelab")


#: The floors' shells: the dashboard's template, or Panel's own page around a plain column (one root).
FLOOR_SHELLS = ("template", "plain")


def serve_floor(port: int, built_log: str, shell: str = "template") -> None:
    """The floor: a bare Panel page in the dashboard's template (``shell="plain"``: a plain column, no template) with one
    Bokeh figure over a ``ColumnDataSource`` that holds its first rows in the first document and streams one row per
    period once the page has loaded."""
    import panel as pn
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    pn.extension(notifications=False)

    def app():
        c0 = time.process_time()
        source = ColumnDataSource(
            {"time": [10.0 * i for i in range(FLOOR_FIRST_ROWS)], "y": [float(i % 3) for i in range(FLOOR_FIRST_ROWS)]}
        )
        fig = figure(name=f"{FLOOR_PREFIX}queue", height=260, sizing_mode="stretch_width", x_axis_label="time (s)")
        fig.line("time", "y", source=source)
        plot = pn.pane.Bokeh(fig, sizing_mode="stretch_width")
        if shell == "plain":
            template = pn.Column(plot, sizing_mode="stretch_width")
        else:
            template = pn.template.BootstrapTemplate(title="floor", main=[plot], header_background="#24476b", busy_indicator=None)

        def stream() -> None:
            t = source.data["time"][-1] + 10.0
            source.stream({"time": [t], "y": [float(int(t) % 3)]}, rollover=1500)

        pn.state.onload(lambda: pn.state.add_periodic_callback(stream, period=FLOOR_PERIOD_MS))
        with open(built_log, "a") as log:
            log.write(f"{time.process_time() - c0}\n")
        return template

    pn.serve({"/": app}, port=port, address="127.0.0.1", show=False, threaded=False, title="floor")


def profile_html(world: str, pages: int, top: int, floor: str = "", out: str | None = None) -> None:
    """cProfile (process CPU clock; Python 3.12's profiler sees every thread) of the served app from the request to the
    HTML answer, plain HTTP fetches of ``?scenario=world`` (no browser), summed over ``pages`` after a warm one; prints
    the ``top`` functions by cumulative time and the request's process CPU (``out``: the stats written there too)."""
    import cProfile
    import pstats
    import threading
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tempfile.NamedTemporaryFile(suffix=".txt", delete=False).name
    target = (lambda port, log: serve_floor(port, log, floor)) if floor else serve

    def run() -> None:  # the server's own event loop, in its thread
        import asyncio

        asyncio.set_event_loop(asyncio.new_event_loop())
        target(port, log)

    threading.Thread(target=run, daemon=True).start()
    url = f"http://127.0.0.1:{port}/?scenario={world}"
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(url, timeout=300).read()  # the warm page
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    prof = cProfile.Profile(time.process_time)
    cpu = []
    for _ in range(pages):
        c0 = time.process_time()
        if top:
            prof.enable()
        urllib.request.urlopen(url, timeout=300).read()
        prof.disable()
        cpu.append(time.process_time() - c0)
    under = "under the profiler" if top else "(no profiler)"
    print(
        f"request -> HTML, process CPU {under}: {', '.join(f'{c:.3f}' for c in cpu)} s, median {_median(cpu)} s; load {os.getloadavg()[0]:.2f}"
    )
    if not top:
        os._exit(0)
    if out:
        prof.dump_stats(out)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)
    os._exit(0)  # the served sessions' callbacks never run into the interpreter's shutdown


def _cpu(pid: int) -> float:
    """A process's CPU seconds so far (user + system, every thread), from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """One tree's app served in a process of its own (this tree, or a peer's checkout): its CPU is that process's."""

    def __init__(self, name: str, tree: Path, tmp: Path, floor: str = ""):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.name, self.built, self.floor = name, tmp / f"built-{name}.txt", floor
        self.built.write_text("")
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(self._command(), cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # listening?
            with socket.socket() as probe, contextlib.suppress(OSError):
                probe.connect(("127.0.0.1", self.port))
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {name} server exited ({self.proc.returncode})")
            time.sleep(0.2)
        raise RuntimeError(f"the {name} server did not listen within 300 s")

    def _command(self) -> list[str]:
        """The server process's command line (this script serving the tree, or a floor)."""
        serve_args = (
            ["--serve-floor", str(self.port), str(self.built), self.floor] if self.floor else ["--serve", str(self.port), str(self.built)]
        )
        return [sys.executable, str(Path(__file__).resolve()), *serve_args]

    def cpu(self) -> float:
        return _cpu(self.proc.pid)

    def builds(self) -> list[float]:
        return [float(x) for x in self.built.read_text().split()]

    def stop(self) -> None:
        """Killed, not shut down: nothing of a stopping server (Bokeh's executor, a session's callback) runs on."""
        self.proc.kill()
        self.proc.wait()


def page_once(browser, server: Server, name: str) -> dict:
    """One fresh page of world ``name`` (a new browser context: nothing cached) to its first plot with data."""
    prefix = FLOOR_PREFIX if server.floor else WORLDS[name][1]
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        n_built = len(server.builds())
        c0, t0 = server.cpu(), time.perf_counter()
        page.goto(f"http://127.0.0.1:{server.port}/?scenario={name}", wait_until="commit", timeout=180_000)
        t_html, c_html = time.perf_counter(), server.cpu()
        page.wait_for_function(JS_DOC, timeout=180_000, polling=10)
        t_doc = time.perf_counter()
        page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=180_000, polling=10)
        t1, c1 = time.perf_counter(), server.cpu()
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        built = server.builds()
        return {
            "first_data_s": t1 - t0,
            "html_s": t_html - t0,
            "doc_s": t_doc - t0,
            "server_cpu_s": c1 - c0,
            "server_html_cpu_s": c_html - c0,
            "session_cpu_s": built[n_built] if len(built) > n_built else float("nan"),
            "load": os.getloadavg()[0],
            **{m: metrics.get(m, float("nan")) for m in METRICS},
        }
    finally:
        context.close()


def _summary(rows: list[dict]) -> dict:
    fields = [k for k in rows[0] if k != "load"]
    out = {k: _median([r[k] for r in rows]) for k in fields}
    out["first_data_p95_s"] = _p95([r["first_data_s"] for r in rows])
    out["load"] = [round(min(r["load"] for r in rows), 2), round(max(r["load"] for r in rows), 2)]
    out["pages"] = len(rows)
    return out


def measure(trees: dict[str, Path], worlds: list[str], pages: int, chromium: str, floors: tuple[str, ...] = ()) -> dict:
    """Per world, per tree: medians of ``pages`` fresh pages after one warm page; the trees' pages alternate (same load).
    ``floors``: each floor page's shell as a tree too (``floor``, ``floor-plain``; the same page for every world)."""
    names = {shell: "floor" if shell == "template" else f"floor-{shell}" for shell in floors}
    with tempfile.TemporaryDirectory() as tmp:
        servers = [Server(name, tree, Path(tmp)) for name, tree in trees.items()]
        for shell, floor_name in names.items():
            servers.append(Server(floor_name, ROOT, Path(tmp), floor=shell))
        rows = alternate_pages(
            servers, worlds, pages, chromium, CHROMIUM_ARGS, lambda browser, server, name, i: page_once(browser, server, name)
        )
    return {tree: {name: _summary(world_rows) for name, world_rows in by_world.items()} for tree, by_world in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_page_options(ap, list(WORLDS), pages=5)
    ap.add_argument(
        "--floor",
        nargs="*",
        choices=FLOOR_SHELLS,
        default=None,
        help="also the floor: a bare Panel page in the same template, one streamed Bokeh figure ('plain': without a template)",
    )
    ap.add_argument("--serve", nargs=2, metavar=("PORT", "BUILT_LOG"), help=argparse.SUPPRESS)  # a tree's server process
    ap.add_argument("--serve-floor", nargs=3, metavar=("PORT", "BUILT_LOG", "SHELL"), help=argparse.SUPPRESS)  # a floor's
    ap.add_argument("--profile", metavar="WORLD", help="cProfile the server from request to HTML answer for this world, then exit")
    ap.add_argument("--top", type=int, default=60, help="functions shown by --profile (0: no profiler, the request's CPU only)")
    ap.add_argument("--profile-out", default=None, help="--profile's stats written to this file (pstats)")
    args = ap.parse_args()
    floors = tuple(dict.fromkeys(args.floor or ["template"])) if args.floor is not None else ()
    if args.profile:
        profile_html(args.profile, args.pages, args.top, floor=floors[0] if floors else "", out=args.profile_out)
        return
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    if args.serve_floor:
        serve_floor(int(args.serve_floor[0]), args.serve_floor[1], args.serve_floor[2])
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this": ROOT}
        if args.peer:
            trees["peer"] = export_ref(args.peer, Path(tmp))
        result = measure(trees, args.worlds, args.pages, args.chromium, floors=floors)
    for tree, worlds in result.items():
        for name, r in worlds.items():
            print(
                f"{tree:11} {name:11} first data {r['first_data_s']:.2f} s median, {r['first_data_p95_s']:.2f} s p95 (html {r['html_s']:.2f} s, "
                f"document {r['doc_s']:.2f} s); server CPU {r['server_cpu_s']:.2f} s (to the HTML {r['server_html_cpu_s']:.2f} s, session {r['session_cpu_s']:.2f} s); "
                f"Chromium tasks {r['TaskDuration']:.2f} s, script {r['ScriptDuration']:.2f} s, layout {r['LayoutDuration']:.2f} s, "
                f"style {r['RecalcStyleDuration']:.2f} s, {r['Nodes']:.0f} DOM nodes; load {r['load'][0]}-{r['load'][1]}"
            )
    out = dict(result["this"])
    out["first_data_s"] = max(r["first_data_s"] for r in result["this"].values())
    out["goal_met"] = out["first_data_s"] <= 1.0
    if args.peer:
        out["peer"] = {"ref": args.peer, **result["peer"]}
    for floor_name in (k for k in result if k.startswith("floor")):
        floor = result[floor_name]
        out[floor_name] = floor
        out[f"{floor_name}_first_data_s"] = max(r["first_data_s"] for r in floor.values())
        over = out["over_floor" if floor_name == "floor" else f"over_{floor_name}"] = {}
        for name, r in result["this"].items():
            f = floor[name]
            ratios = {
                k: round(r[k] / f[k], 2) if f[k] else float("nan") for k in ("first_data_s", "server_html_cpu_s", "TaskDuration", "Nodes")
            }
            over[name] = ratios
            print(
                f"ours / {floor_name} {name:11} first data {ratios['first_data_s']:.2f}x ({r['first_data_s']:.2f} / {f['first_data_s']:.2f} s), "
                f"server CPU to the HTML {ratios['server_html_cpu_s']:.2f}x, Chromium tasks {ratios['TaskDuration']:.2f}x, "
                f"DOM nodes {ratios['Nodes']:.2f}x"
            )
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
