"""Reset and scenario switch, per world: the engine's build CPU, how long the server's clock stood still, and the wall
time in Chromium from the click to the new run drawn.

* ``build_cpu_s``: process CPU of ``Simulation(scenario)``, the first in this process (files read, modules imported)
  and again (median of 5: what a Reset pays); ``--profile`` prints cProfile's top entries of the second.
* ``reset_s`` / ``switch_s``: a served app in Chromium; Reset clicked when the old run is past twice the first frame's
  minutes, to the plot's newest time going back (the new run drawn); a switch from ``default`` to the world's plots
  with data (and back to ``default`` for the VM world). Medians over ``--repeat``, load average (1 min) beside each.
* ``swap_cpu`` (``--swap``): the event loop's CPU (the thread's clock) of swapping a new run into the page, per world: Reset,
  a switch to the world's scenario (from ``faas-basic`` for the VM world, else from ``default``) and Branch here (a
  900 s recording of the world, shown in the Replay tab, then branched at 600 s; ``branch_drawn_s`` with the tick that
  draws the Branch tab), Compare (the tab opened, the pair
  adopted and its first two frames) and replay open (that recording uploaded, then two ticks), each in an in-process Dashboard driven as when served (models in
  a Bokeh document, open cards filled, changes held and serialized as ``PATCH-DOC`` messages). The build and the
  re-simulation, which run off the loop when served, are not counted. Medians over ``--repeat``; ``--profile`` prints
  cProfile's top entries over all of them.
* ``stall_s``: the longest gap between two of the server's ticks during that Reset or switch (the event loop was busy:
  no click was answered meanwhile).

The browser part is opt-in (``--browser``): on 2026-12-02 at load 14-20 its first wait (the old run past 700 s) timed
out and it has not yet been seen to finish. ``--peer main`` measures the same on the main branch's tree in a subprocess right after (before/after side by side).
The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dashboard_latency import CHROMIUM_ARGS, export_main  # noqa: E402
from dashboard_worlds import JS_FIGURES, JS_LAST_X, WORLDS  # noqa: E402

TIMEOUT = 180_000


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def build_cpu(profile: bool) -> dict:
    from engine import Simulation

    out = {}
    for name in WORLDS:
        c0 = time.process_time()
        Simulation(name)
        first = time.process_time() - c0
        again = []
        for _ in range(5):
            c0 = time.process_time()
            Simulation(name)
            again.append(time.process_time() - c0)
        out[name] = {"first_s": round(first, 4), "again_s": round(statistics.median(again), 4), "load": _load()}
        print(f"build {name}: first {first:.3f} s CPU, again {statistics.median(again):.4f} s CPU (load {_load()})", flush=True)
        if profile:
            pr = cProfile.Profile()
            pr.enable()
            Simulation(name)
            pr.disable()
            text = io.StringIO()
            pstats.Stats(pr, stream=text).sort_stats("cumulative").print_stats(12)
            print(text.getvalue(), flush=True)
    return out


def _stamped(d) -> list[float]:
    """Wall times of the server's ticks from now on (the dashboard's clock: one per event-loop turn it gets)."""
    stamps: list[float] = []
    tick = d.loop.tick

    def stamped_tick(wall_dt):
        stamps.append(time.perf_counter())
        return tick(wall_dt)

    d.loop.tick = stamped_tick
    return stamps


def _stall(stamps: list[float], t0: float, t1: float) -> float:
    inside = [t0, *(t for t in stamps if t0 <= t <= t1), t1]
    return round(max(b - a for a, b in zip(inside, inside[1:], strict=False)), 3)


def browser_figures(chromium: str, repeat: int) -> dict:
    """Reset and switch per world in one served app (see the module docs)."""
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
        return d.page()

    port = serve_and_wait(app)
    base = f"http://127.0.0.1:{port}/"
    out: dict = {name: {"reset": [], "switch": []} for name in WORLDS}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        for name, (_world, prefix) in WORLDS.items():
            page.goto(f"{base}?scenario={name}", wait_until="domcontentloaded", timeout=TIMEOUT)
            page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=TIMEOUT, polling=20)
            d = made[-1]
            stamps = _stamped(d)
            d.session.speed = 600.0
            for _ in range(repeat):
                # the old run past twice the new run's first frame (300 s): the new run shows as the newest time going back
                page.wait_for_function(f"() => ({JS_LAST_X})('{prefix}') > 700", timeout=TIMEOUT, polling=50)
                t0 = time.perf_counter()
                page.locator(".bk-btn", has_text="Reset").first.click()
                page.wait_for_function(
                    f"() => {{ const x = ({JS_LAST_X})('{prefix}'); return x >= 0 && x < 650; }}", timeout=TIMEOUT, polling=20
                )
                t1 = time.perf_counter()
                out[name]["reset"].append({"s": round(t1 - t0, 3), "stall_s": _stall(stamps, t0, t1), "load": _load()})
                print(f"reset {name}: {out[name]['reset'][-1]}", flush=True)
        page.goto(base, wait_until="domcontentloaded", timeout=TIMEOUT)
        page.wait_for_function(JS_FIGURES, arg=["ts-", 1, 2], timeout=TIMEOUT, polling=20)
        d = made[-1]
        stamps = _stamped(d)
        for _ in range(repeat):
            for name, (_world, prefix) in [*list(WORLDS.items())[1:], ("default", WORLDS["default"])]:
                t0 = time.perf_counter()
                page.locator("select").first.select_option(name)
                page.locator(".run-state", has_text=name).first.wait_for(timeout=TIMEOUT)
                page.wait_for_function(JS_FIGURES, arg=[prefix, 1, 2], timeout=TIMEOUT, polling=20)
                t1 = time.perf_counter()
                out[name]["switch"].append({"s": round(t1 - t0, 3), "stall_s": _stall(stamps, t0, t1), "load": _load()})
                print(f"switch to {name}: {out[name]['switch'][-1]}", flush=True)
        browser.close()
    state.kill_all_servers()
    for d in made:
        d.stop(clear_plots=False)
    return {
        name: {
            kind: {
                "median_s": statistics.median(v["s"] for v in runs),
                "stall_median_s": statistics.median(v["stall_s"] for v in runs),
                "load": [v["load"] for v in runs],
            }
            for kind, runs in kinds.items()
            if runs
        }
        for name, kinds in out.items()
    }


def _served(d, doc) -> None:
    """An unserved Dashboard driven as a served one: its models in ``doc``, its open cards filled, a clock that says it is
    served (so a new run's controls are made at once, as on a page) and ticks that run when a build is done."""

    class Clock:
        def stop(self) -> None:
            pass

    doc.add_root(d.__panel__().get_root(doc))
    d.controls.fill()
    d._callback = Clock()
    d.ctx.served = lambda: True


class _Patches:
    """What a served session's loop pays to send a change: every model change held while an action runs, then each
    serialized as a ``PATCH-DOC`` message (Bokeh's public protocol), as the server does when the hold ends."""

    def __init__(self, doc):
        from bokeh.protocol import Protocol

        self.doc, self.protocol, self.sent = doc, Protocol(), 0
        doc.on_change(self._patched)

    def _patched(self, event) -> None:
        from bokeh.document.events import DocumentPatchedEvent

        if isinstance(event, DocumentPatchedEvent):
            msg = self.protocol.create("PATCH-DOC", [event])
            self.sent += len(msg.content_json)

    def __enter__(self):
        self.doc.hold("combine")
        return self

    def __exit__(self, *exc) -> None:
        self.doc.unhold()


def swap_cpu(repeat: int, profile: bool) -> dict:
    """Event-loop CPU (the calling thread's clock) of swapping a new run into the page, per world: Reset, a switch to the
    world's scenario, Branch here. The builds and the branch's re-simulation, which run off the loop when served, are
    run in this thread between the timed parts and not counted; the model changes' serialization is counted."""
    from bokeh.document import Document

    import dashboard.compare as compare
    import dashboard.recordcard as recordcard
    from dashboard.ui import Dashboard
    from engine import Simulation, load_recording

    queued: list = []

    def runner(work, done, failed):
        queued.append((work, done, failed))
        return True

    recordcard.off_loop = runner
    compare.off_loop = runner
    prof = cProfile.Profile() if profile else None

    def timed(d, action, patches) -> float:
        """CPU of ``action`` plus the done() of each build it queued (their work untimed)."""
        cpu = 0.0
        steps = [action]
        while steps:
            step = steps.pop(0)
            d._last_wall = time.perf_counter()  # the tick that swaps the run in simulates no wall time spent building
            c0 = time.thread_time()
            if prof is not None:
                prof.enable()
            with patches:
                step()
            if prof is not None:
                prof.disable()
            cpu += time.thread_time() - c0
            while queued:
                work, done, failed = queued.pop(0)
                result = work()
                steps.append(lambda done=done, result=result: done(result))
        return cpu

    def dashboard(name: str):
        d = Dashboard(name)
        doc = Document()
        _served(d, doc)
        d.session.runner = runner
        for _ in range(3):
            d._tick()
        return d, _Patches(doc)

    out: dict = {}
    other = {"default": "faas-basic"}
    with tempfile.TemporaryDirectory() as tmp:
        for name in WORLDS:
            fig: dict = {}
            d, patches = dashboard(name)
            fig["reset_s"] = [timed(d, d._reset, patches) for _ in range(repeat + 1)][1:]
            d.stop()
            d, patches = dashboard(other.get(name, "default"))
            cpu = []
            for _ in range(repeat + 1):
                back = other.get(name, "default")
                cpu.append(timed(d, lambda d=d, name=name: setattr(d.session, "scenario", name), patches))
                timed(d, lambda d=d, back=back: setattr(d.session, "scenario", back), patches)
            fig["switch_s"] = cpu[1:]
            d.stop()
            sim = Simulation(name)
            sim.advance(900.0)
            rec = load_recording(sim.record(Path(tmp) / f"{name}.scalelab"))
            cpu, drawn = [], []
            for _ in range(repeat + 1):
                d, patches = dashboard(name)
                d.recordings.warmup.submit = lambda job: None  # no warm-up: the branch is re-simulated in full, untimed
                d.recordings.open(rec)
                timed(d, d._tick, patches)  # the recording drawn (as the page shows it before the click), untimed
                cpu.append(timed(d, lambda d=d, rec=rec: d.recordings.branch(rec, 600.0), patches))
                drawn.append(cpu[-1] + timed(d, d._tick, patches))  # and the tick that draws the Branch tab's plots
                assert d.session.branched_from is rec
                d.stop()
            fig["branch_s"] = cpu[1:]
            fig["branch_drawn_s"] = drawn[1:]
            data = rec.path.read_bytes()
            cpu = []
            for _ in range(repeat + 1):  # replay open: the upload handled, then two ticks (the first frame, the heatmaps)
                d, patches = dashboard(name)
                d.recordings.warmup.submit = lambda job: None  # the Branch-here warm-up runs off the loop: not counted
                upload = d.recordings.upload

                def opened(upload=upload, name=rec.path.name, data=data) -> None:
                    upload.param.update(filename=name, value=data)

                cpu.append(timed(d, opened, patches) + timed(d, d._tick, patches) + timed(d, d._tick, patches))
                assert d.recordings.replay_tab.rec is not None and d.active_tab == "Replay", d.message.object
                d.stop()
            fig["open_s"] = cpu[1:]
            cpu = []
            for _ in range(repeat + 1):  # Compare opened: the pair built (untimed), adopted, its first two frames
                d, patches = dashboard(name)
                cpu.append(timed(d, lambda d=d: d.show_tab("Compare"), patches) + timed(d, d._tick, patches) + timed(d, d._tick, patches))
                assert d.compare.pair is not None
                d.stop()
            fig["compare_s"] = cpu[1:]
            out[name] = {k: round(statistics.median(v), 4) for k, v in fig.items()} | {"load": _load()}
            print(f"swap {name}: " + ", ".join(f"{k} {v}" for k, v in out[name].items()), flush=True)
    if prof is not None:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
        print(text.getvalue(), flush=True)
    return out


def measure(args: argparse.Namespace) -> dict:
    out = {"build_cpu": build_cpu(args.profile and not args.swap)}
    if args.swap:
        out["swap_cpu"] = swap_cpu(args.repeat, args.profile)
    out["browser"] = browser_figures(args.chromium, args.repeat) if args.browser else {}
    return out


def export_ref(ref: str, into: Path) -> Path:
    """The tree of git ``ref`` (a branch or a commit) in ``into`` (``git archive``): the peer measured beside this one."""
    if ref == "main":
        return export_main(into)
    archive = into / "peer.tar"
    subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "archive", "--format=tar", "-o", str(archive), ref], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "peer", filter="data")
    return into / "peer"


def run_peer(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        where = export_ref(args.peer, Path(tmp))
        cmd = [sys.executable, __file__, "--measure-only", "--repeat", str(args.repeat)] + (["--browser"] if args.browser else [])
        cmd += ["--swap"] if args.swap else []
        cmd += ["--profile"] if args.profile else []
        env = {**os.environ, "PYTHONPATH": str(where)}
        done = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=3600)
        print(done.stdout, flush=True)
        line = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"the peer run failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        return json.loads(line[len("RESULT ") :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="Resets per world and switch rounds (default 3)")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top entries of each world's build")
    ap.add_argument(
        "--browser",
        action="store_true",
        help="also Reset and switch in Chromium (not yet seen to finish: at load 14-20 its first wait timed out)",
    )
    ap.add_argument("--peer", default=None, help="the same on this git ref's tree (main, integ, a commit), right after")
    ap.add_argument("--swap", action="store_true", help="also the event loop's CPU of Reset, switch and Branch here per world")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)  # the peer's subprocess
    args = ap.parse_args()
    if args.measure_only:
        print("RESULT " + json.dumps(measure(args)))
        return
    result: dict = {"load_average_start": [round(v, 2) for v in os.getloadavg()], "ours": measure(args)}
    if args.peer:
        result["peer"] = {"name": args.peer, **run_peer(args)}
    result["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
