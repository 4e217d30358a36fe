"""Replay open, and where its time goes: a ``.scalelab`` set in the Recordings card's upload to every Replay plot drawn.

Serves the app's page (``Dashboard().page()``) from a process of its own, and with ``--peer REF`` the same from that
git ref's tree in a second process, the two trees' pages alternating (the same load for both). Per world and page: a
fresh browser context on ``?scenario=NAME``, its first data, then a recording of that world (``--until`` simulated
seconds, made once) set in the upload widget, timed to every Replay figure of the world holding data (as
``dashboard_worlds.py`` times ``replay_open``). Beside the wall time (load average given):

* ``upload_s``: the file set -> the server's ``FileInput`` has the decoded bytes (the browser reads and base64-encodes
  the file, the websocket carries it, Bokeh parses the message);
* ``handler_s`` / ``handler_cpu_s``: the upload's watcher (decode of the recording, the Replay views, the tab shown, the
  held patch sent), wall and process CPU;
* ``browser_s``: the watcher's end -> every Replay figure drawn (BokehJS builds the new models, lays out, paints);
* ``server_cpu_s``: the server process's CPU over the whole open (``/proc``, every thread);
* Chromium's counters over the open (``Performance.getMetrics``): main-thread task, script, layout and style seconds.

``--trace DIR`` also records a Chromium performance trace of one open per world (this tree) into ``DIR``; the summary
prints the main thread's longest tasks with their forced style recalculations and layouts.

    python benchmarks/replay_open.py --pages 3 --peer main
    python benchmarks/replay_open.py --pages 1 --worlds faas-basic --trace /tmp/replay-trace

Goal (issue 18; printed, never asserted): replay open <= 1.5 s in every world at load <= 1. Last line ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import add_page_options, alternate_pages  # noqa: E402
from dashboard_builds import export_ref  # noqa: E402
from dashboard_first_data import METRICS, Server  # noqa: E402
from dashboard_memory import CHROMIUM_ARGS  # noqa: E402
from dashboard_worlds import JS_FIGURES, REPLAY_FIGURES, WORLDS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 180_000


def serve(port: int, stamps: str) -> None:
    """The served app, with the upload's stamps (epoch s, process CPU s) appended to ``stamps`` as JSON lines: when the
    ``FileInput`` has the decoded bytes, and when the upload's watcher (``Recordings._uploaded``) starts and ends."""
    import functools

    import panel as pn
    from panel.widgets import FileInput

    import dashboard.recordcard as recordcard
    from dashboard.ui import Dashboard

    def note(kind: str) -> None:
        with open(stamps, "a") as f:
            f.write(json.dumps({"kind": kind, "t": time.time(), "cpu": time.process_time()}) + "\n")

    decode = FileInput._process_property_change

    @functools.wraps(decode)
    def decoded(self, props):
        out = decode(self, props)
        if "value" in props:
            note("decoded")
        return out

    uploaded = recordcard.Recordings._uploaded

    @functools.wraps(uploaded)
    def handler(self, event):
        note("start")
        try:
            return uploaded(self, event)
        finally:
            note("end")

    FileInput._process_property_change = decoded
    recordcard.Recordings._uploaded = handler
    pn.extension(notifications=False)
    pn.serve({"/": lambda: Dashboard().page()}, port=port, address="127.0.0.1", show=False, threaded=False, title="scalelab")


class ReplayServer(Server):
    """A tree's app served with the upload's stamps (see :func:`serve`)."""

    def __init__(self, name: str, tree: Path, tmp: Path):
        self.stamps = tmp / f"stamps-{name}.jsonl"
        self.stamps.write_text("")
        super().__init__(name, tree, tmp)

    def _command(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--serve", str(self.port), str(self.stamps)]

    def read_stamps(self) -> list[dict]:
        return [json.loads(line) for line in self.stamps.read_text().splitlines() if line.strip()]


def _metrics(cdp) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def open_once(browser, server: ReplayServer, name: str, path: Path, trace: Path | None = None) -> dict:
    """One fresh page of world ``name``, then ``path`` uploaded, to every Replay figure drawn."""
    prefix = WORLDS[name][1]
    figures = REPLAY_FIGURES[WORLDS[name][0]]
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(f"http://127.0.0.1:{server.port}/?scenario={name}", wait_until="domcontentloaded", timeout=TIMEOUT)
        page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=TIMEOUT, polling=20)
        upload = page.locator(".rec-load input[type=file]").first
        upload.wait_for(state="attached", timeout=TIMEOUT)
        n_stamps = len(server.read_stamps())
        if trace is not None:
            browser.start_tracing(
                page=page,
                path=str(trace),
                categories=["devtools.timeline", "disabled-by-default-devtools.timeline", "disabled-by-default-devtools.timeline.stack"],
            )
        m0, c0, e0, t0 = _metrics(cdp), server.cpu(), time.time(), time.perf_counter()
        upload.set_input_files(str(path), timeout=TIMEOUT)
        page.wait_for_function(JS_FIGURES, arg=["rp-", figures, 2], timeout=TIMEOUT, polling=10)
        t1, e1, c1, m1 = time.perf_counter(), time.time(), server.cpu(), _metrics(cdp)
        if trace is not None:
            browser.stop_tracing()
        stamps = {s["kind"]: s for s in server.read_stamps()[n_stamps:]}
        row = {
            "open_s": t1 - t0,
            "upload_s": stamps["decoded"]["t"] - e0 if "decoded" in stamps else float("nan"),
            "handler_s": stamps["end"]["t"] - stamps["start"]["t"] if "end" in stamps else float("nan"),
            "handler_cpu_s": stamps["end"]["cpu"] - stamps["start"]["cpu"] if "end" in stamps else float("nan"),
            "browser_s": e1 - stamps["end"]["t"] if "end" in stamps else float("nan"),
            "server_cpu_s": c1 - c0,
            "load": os.getloadavg()[0],
        }
        row.update({m: m1.get(m, 0.0) - m0.get(m, 0.0) for m in METRICS if m != "Nodes"})
        return row
    finally:
        context.close()


def trace_summary(path: Path, top: int = 6) -> list[dict]:
    """The renderer main thread's longest tasks in a trace: thread time, and the forced style recalcs and layouts."""
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    main = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"}
    ours = [e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X"]
    tasks = sorted((e for e in ours if e.get("name") == "RunTask"), key=lambda e: -e.get("tdur", e.get("dur", 0)))[:top]
    out = []
    for task in tasks:
        start, end = task["ts"], task["ts"] + task.get("dur", 0)
        inside = [e for e in ours if start <= e["ts"] < end and e is not task]
        part = {}
        for e in inside:
            if e["name"] in ("UpdateLayoutTree", "Layout", "FunctionCall", "Paint", "ParseHTML", "MajorGC", "MinorGC", "EventDispatch"):
                n, ms = part.get(e["name"], (0, 0.0))
                part[e["name"]] = (n + 1, ms + e.get("tdur", e.get("dur", 0)) / 1000)
        out.append(
            {"ms": round(task.get("tdur", task.get("dur", 0)) / 1000, 1), "parts": {k: [n, round(ms, 1)] for k, (n, ms) in part.items()}}
        )
    return out


def record(tree: Path, name: str, until: float, folder: Path) -> Path:
    """A recording of scenario ``name`` written by ``tree``'s own engine (its writer decides the file's encoding)."""
    code = (
        "import sys; from pathlib import Path; from engine import Simulation; sim = Simulation(sys.argv[1]); "
        "sim.advance(max(float(sys.argv[2]), 20 * sim.sections['run'].sample_interval)); sim.record(Path(sys.argv[3]))"
    )
    path = folder / f"{name}.scalelab"
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", code, name, str(until), str(path)], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True
    )
    return path


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


def measure(trees: dict[str, Path], worlds: list[str], pages: int, chromium: str, until: float, trace: Path | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        files = {(tree, name): record(tree_path, name, until, Path(tmp) / tree) for tree, tree_path in trees.items() for name in worlds}
        servers = [ReplayServer(name, tree, Path(tmp)) for name, tree in trees.items()]

        def once(browser, server: ReplayServer, name: str, i: int) -> dict:
            traced = trace / f"{name}.json" if trace is not None and i == 1 and server.name == "this" else None
            row = open_once(browser, server, name, files[(server.name, name)], traced)
            for task in trace_summary(traced) if traced is not None else []:
                print(f"  trace {name}: task {task['ms']} ms {task['parts']}", flush=True)
            return row

        rows = alternate_pages(servers, worlds, pages, chromium, CHROMIUM_ARGS, once)
    out: dict = {tree: {} for tree in trees}
    for tree, by_world in rows.items():
        for name, tree_rows in by_world.items():
            fields = [k for k in tree_rows[0] if k != "load"]
            out[tree][name] = {k: _median([r[k] for r in tree_rows]) for k in fields}
            out[tree][name]["load"] = [round(min(r["load"] for r in tree_rows), 2), round(max(r["load"] for r in tree_rows), 2)]
            out[tree][name]["file_bytes"] = files[(tree, name)].stat().st_size
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_page_options(ap, list(WORLDS), pages=3, what="opens")
    ap.add_argument("--until", type=float, default=900.0, help="simulated seconds of each recording (as dashboard_worlds.py)")
    ap.add_argument("--trace", type=Path, default=None, help="a Chromium trace of one open per world (this tree) into this folder")
    ap.add_argument("--serve", nargs=2, metavar=("PORT", "STAMPS"), help=argparse.SUPPRESS)  # a tree's server process
    args = ap.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    if args.trace is not None:
        args.trace.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this": ROOT}
        if args.peer:
            trees["peer"] = export_ref(args.peer, Path(tmp))
        result = measure(trees, args.worlds, args.pages, args.chromium, args.until, args.trace)
    for tree, worlds in result.items():
        for name, r in worlds.items():
            print(
                f"{tree:5} {name:11} open {r['open_s']:.2f} s: upload {r['upload_s']:.2f} s, handler {r['handler_s']:.2f} s "
                f"(CPU {r['handler_cpu_s']:.2f} s), browser {r['browser_s']:.2f} s; server CPU {r['server_cpu_s']:.2f} s; Chromium "
                f"tasks {r['TaskDuration']:.2f} s, script {r['ScriptDuration']:.2f} s, layout {r['LayoutDuration']:.2f} s, style "
                f"{r['RecalcStyleDuration']:.2f} s; file {r['file_bytes'] / 1e6:.2f} MB; load {r['load'][0]}-{r['load'][1]}"
            )
    out = {"this": result["this"], "replay_open_s": max(r["open_s"] for r in result["this"].values())}
    out["goal_met"] = out["replay_open_s"] <= 1.5
    if args.peer:
        out["peer"] = {"ref": args.peer, **result["peer"]}
        out["ratio"] = {n: round(r["open_s"] / result["peer"][n]["open_s"], 2) for n, r in result["this"].items()}
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
