"""Recorded sessions: the exported page against its bound and a peer, and opening a file against re-simulating it.

For a one-hour session of each scenario (a parameter change at 15 min, a fault at 30 min), in one process:

* **export**: ``dashboard.export.export_html`` -- wall and CPU seconds, size -- against the goal (< 5 MB) and against
  the plain ``hv.save(plots.run_layout(tables), resources="inline")`` of the same tables (the recipe's way: the
  plots only, no timeline, KPI row or event table);
* **open**: ``engine.load_recording`` (checks every table's digest) against ``Recording.replay()`` (re-simulates
  and compares every table), the work a dashboard's replay does not do.

Repetitions are interleaved and medians reported (a shared, noisy machine); the load average is printed at the start
and in ``RESULT``. Goals are printed, never asserted.

    .venv/bin/python benchmarks/recordings.py            # default and edge, 5 repetitions (~1-2 min)
    .venv/bin/python benchmarks/recordings.py --quick    # default only, 2 repetitions
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import holoviews as hv  # noqa: E402

from dashboard import plots  # noqa: E402
from dashboard.export import export_html  # noqa: E402
from dashboard.recordings import sample_interval  # noqa: E402
from engine import Simulation, load_recording  # noqa: E402

GOAL_BYTES = 5 * 10**6  # "under 5 MB for a 1-hour session"


def one_hour(scenario: str, folder: Path) -> Path:
    """A one-hour session as a user would drive it, recorded."""
    sim = Simulation(scenario)
    sim.note_control("play", 60.0)
    sim.advance(900)
    sim.set_params({"autoscaler.MAX_WORKERS": 8})
    sim.advance(1800)
    sim.inject("worker_crash")
    sim.advance(3600)
    return sim.record(folder / f"{scenario}-1h.scalelab")


def timed(fn) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def measure(path: Path, folder: Path, reps: int) -> dict:
    rec = load_recording(path)
    interval = sample_interval(rec)
    rows = {"export": [], "peer": [], "open": [], "replay": []}
    sizes = {}
    for i in range(reps):
        w, c, size = timed(lambda: export_html(rec, folder / "page.html"))
        rows["export"].append((w, c))
        sizes["export"] = size
        w, c, _ = timed(lambda: hv.save(plots.run_layout(rec.tables, interval), folder / "peer.html", resources="inline"))
        rows["peer"].append((w, c))
        sizes["peer"] = (folder / "peer.html").stat().st_size
        rows["open"].append(timed(lambda: load_recording(path))[:2])
        if i < max(2, reps // 2):  # re-simulating is the slow side: fewer repetitions
            rows["replay"].append(timed(lambda: load_recording(path).replay())[:2])
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
    return {
        "file_bytes": path.stat().st_size,
        "rows": {name: len(df) for name, df in rec.tables.items()},
        "export_bytes": sizes["export"],
        "peer_bytes": sizes["peer"],
        "export_s": med["export"][0],
        "export_cpu_s": med["export"][1],
        "peer_s": med["peer"][0],
        "peer_cpu_s": med["peer"][1],
        "open_s": med["open"][0],
        "replay_s": med["replay"][0],
        "open_cpu_over_replay_cpu": med["open"][1] / med["replay"][1],
        "export_over_goal": sizes["export"] / GOAL_BYTES,
        "export_cpu_over_peer_cpu": med["export"][1] / med["peer"][1],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the default scenario only, 2 repetitions")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args(argv)
    scenarios = ["default"] if args.quick else ["default", "edge"]
    reps = args.reps or (2 if args.quick else 5)
    load = os.getloadavg()
    print(f"recordings benchmark: {', '.join(scenarios)}; {reps} repetitions; {os.cpu_count()} CPUs; load average {load[0]:.2f}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for scenario in scenarios:
            r = results[scenario] = measure(one_hour(scenario, folder), folder, reps)
            print(
                f"{scenario:8s} 1 h: file {r['file_bytes'] / 1024:.0f} KiB ({', '.join(f'{k} {v}' for k, v in r['rows'].items())})\n"
                f"  export  {r['export_bytes'] / 1e6:.2f} MB in {r['export_s']:.2f} s (CPU {r['export_cpu_s']:.2f} s); "
                f"goal < 5 MB: {r['export_over_goal']:.2f} of it\n"
                f"  peer    hv.save(run_layout) {r['peer_bytes'] / 1e6:.2f} MB in {r['peer_s']:.2f} s (CPU {r['peer_cpu_s']:.2f} s); "
                f"export/peer CPU {r['export_cpu_over_peer_cpu']:.2f}\n"
                f"  open    load_recording {r['open_s'] * 1000:.0f} ms vs replay() {r['replay_s']:.2f} s; "
                f"CPU ratio {r['open_cpu_over_replay_cpu']:.3f}"
            )
    goals = {f"{s}_export_under_5MB": r["export_bytes"] < GOAL_BYTES for s, r in results.items()}
    for name, met in goals.items():
        if not met:
            print(f"GOAL MISSED: {name}")
    print(
        "RESULT "
        + json.dumps({"load_average": load[0], "reps": reps, "results": results, "goals_met": goals, "all_goals_met": all(goals.values())})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
