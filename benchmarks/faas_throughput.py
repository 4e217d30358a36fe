"""Function platform throughput: simulated requests per wall second, next to simpy's bare event loop, and bytes per request.

Two workloads, each run headless in this process (construction included):

* **(a) faas-basic** (``data/scenarios/faas-basic.yaml``): faas-sim's basic shape, 2 functions x 100 requests/s
  Poisson, 1 s per request, one replica each, 46 nodes.
* **(b) edge-1000**, built here: the ``faas_edge`` layout with ~1,000 nodes (40 cells of 22 devices, 20 cloudlets,
  20 cloud VMs) and five functions on measured execution and start-up times, ~150 requests/s in all, every one
  autoscaled (HPA, KPA, KEDA, faas-sim's average scaler, scale per request), bursts on two of them.

Each is compared with simpy's bare event loop processing the same number of events, three per request (an arrival,
a start, an end): what a model with one simpy event per request step at least costs (faas-sim has a process per
request). Ours and bare are interleaved per repetition and medians reported (the machine is shared); the CPU ratio
(bare CPU s / ours CPU s) is less sensitive to other load. Bytes per logged request: the request rows at rest
(numpy columns plus the sparse gateway waits and cold-start flags) / requests, at the end of run (a).

Goals (from the issue): (a) >= 250,000 requests per wall second, (b) >= 20,000, <= 100 bytes per logged request.
Measured for faas-sim on this machine class: 21-52 k/s on (a), about 2 k/s on (b), about 1 KB per request. The
script reports, it does not assert: it exits 0 and prints ``GOAL MISSED: ...`` lines. The last line is
``RESULT {json}``.

    .venv/bin/python benchmarks/faas_throughput.py            # full: 3 reps, (a) 600 s, (b) 1800 s simulated
    .venv/bin/python benchmarks/faas_throughput.py --quick    # under 60 s
    .venv/bin/python benchmarks/faas_throughput.py --quick --smoke   # a few seconds (tests)
    .venv/bin/python benchmarks/faas_throughput.py --faas-sim ~/faas-sim   # and faas-sim beside (b), CPU ratio

``--faas-sim PATH`` (optional; faas-sim is not installed by ``make``): a checkout of github.com/edgerun/faas-sim with
its dependencies in its own venv (``PATH/.venv/bin/python``, or ``--faas-sim-python``). ``faas_sim_peer.py`` runs in
that interpreter, a process of its own kept for the whole benchmark, and runs faas-sim's raith21 edge setting at
~1,000 devices and ~151 requests/s for ``--faas-sim-seconds`` simulated seconds, in turn with our edge-1000 over the
same seconds (one of each per repetition); printed: completed requests per CPU second of each and their ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simpy  # noqa: E402
from bench_common import loadavg, machine_line, time_bare, time_run  # noqa: E402

from engine import Scenario, Simulation, load_scenario  # noqa: E402

GOAL_BASIC = 250_000.0
GOAL_EDGE = 20_000.0
GOAL_BYTES = 100.0
EVENTS_PER_REQUEST = 3  # arrival, start, end
PLANS = {"full": (600.0, 1800.0, 3), "quick": (300.0, 300.0, 2), "smoke": (30.0, 30.0, 1)}


def basic_scenario(duration: float) -> Scenario:
    s = load_scenario("faas-basic")
    s.values["run"]["duration"] = duration
    return s


def _fn(name: str, images: list[str], scaler: str, rate: float, **extra: Any) -> dict[str, Any]:
    return {"function": name, "images": images, "scaler": scaler, "rate": rate, "concurrency": 4, "max_replicas": 40, **extra}


def edge_scenario(duration: float) -> Scenario:
    """~1,000 measured edge and cloud nodes, five autoscaled functions, ~150 requests/s."""
    return Scenario.from_dict(
        {
            "name": "bench-edge-1000",
            "run": {"world": "functions", "seed": 1, "duration": duration, "sample_interval": 5.0, "breakdown_history": 0},
            "cluster": {"topology": "faas_edge", "cells": 40, "devices_per_cell": 22, "cloudlets": 20, "cloud_nodes": 20},
            "scheduler": {"percentage_of_nodes_to_score": 0},
            "faas": {"startup_model": "pull_then_warm"},
            "fn1": _fn(
                "resnet", ["faas-workloads/resnet-inference-gpu", "faas-workloads/resnet-inference-cpu"], "hpa", 40.0, min_replicas=2
            ),
            "fn2": _fn(
                "mobilenet",
                ["faas-workloads/mobilenet-inference-tpu", "faas-workloads/mobilenet-inference-tflite"],
                "kpa",
                40.0,
                burst_factor=3.0,
                burst_every=300.0,
                burst_duration=60.0,
            ),  # fmt: skip
            "fn3": _fn(
                "speech",
                ["faas-workloads/speech-inference-gpu", "faas-workloads/speech-inference-tflite"],
                "keda",
                10.0,
                target_keda_queue=4.0,
            ),
            "fn4": _fn(
                "pi", ["faas-workloads/python-pi"], "average_rps", 30.0, target_average_rps=2.0, faas_sim_exact=False, scale_interval=20.0
            ),
            "fn5": _fn(
                "fio",
                ["faas-workloads/fio"],
                "per_request",
                30.0,
                concurrency=1,
                min_replicas=0,
                idle_timeout=120.0,
                burst_factor=2.0,
                burst_every=600.0,
                burst_duration=120.0,
            ),  # fmt: skip
        },
        origin="benchmarks/faas_throughput.py",
    )


def time_ours(scenario: Scenario) -> tuple[int, float, float, Simulation]:
    """(requests generated, wall s, CPU s, the simulation) of ``Simulation(scenario).run()``, construction included."""
    sim, wall, cpu = time_run(scenario)
    return int(sim.summary()["requests_generated"]), wall, cpu, sim


def measure(name: str, make: Any, duration: float, reps: int) -> dict[str, Any]:
    ours_rates, bare_rates, cpu_ratios, runs = [], [], [], []
    sim = None
    print(f"{name}: {duration:g} simulated s, {reps} rep(s)")
    print(
        f"{'rep':>3}  {'requests':>9}  {'ours s':>7}  {'ours req/s':>12}  {'bare s':>7}  {'bare req-eq/s':>13}  {'ratio':>6}  {'CPU ratio':>9}"
    )
    for rep in range(reps):
        requests, wall, cpu, sim = time_ours(make(duration))
        bare_wall, bare_cpu = time_bare(EVENTS_PER_REQUEST * requests)
        ours, bare = requests / wall, requests / bare_wall if bare_wall > 0 else float("inf")
        ours_rates.append(ours)
        bare_rates.append(bare)
        cpu_ratios.append(bare_cpu / cpu if cpu > 0 else 0.0)
        runs.append(
            {"requests": requests, "ours_seconds": wall, "ours_cpu_seconds": cpu, "bare_seconds": bare_wall, "bare_cpu_seconds": bare_cpu}
        )
        print(
            f"{rep + 1:>3}  {requests:>9,}  {wall:>7.2f}  {ours:>12,.0f}  {bare_wall:>7.2f}  {bare:>13,.0f}  {ours / bare:>6.3f}  {cpu_ratios[-1]:>9.3f}"
        )
    ours_med, bare_med = statistics.median(ours_rates), statistics.median(bare_rates)
    out = {
        "requests": runs[-1]["requests"],
        "runs": runs,
        "ours_requests_per_s": ours_med,
        "bare_requests_eq_per_s": bare_med,
        "bare_events_per_s": bare_med * EVENTS_PER_REQUEST,
        "ratio": ours_med / bare_med if bare_med else 0.0,
        "cpu_ratio": statistics.median(cpu_ratios),
    }
    stored, rows = sim.platform.request_bytes()
    out["bytes_per_request"] = stored / rows if rows else 0.0
    summary = sim.summary()
    out["replicas_created"] = sum(f["replicas_created"] for f in summary["functions"].values())
    out["cold_starts"] = summary["cold_starts"]
    print(
        f"med  {'':>9}  {'':>7}  {ours_med:>12,.0f}  {'':>7}  {bare_med:>13,.0f}  {out['ratio']:>6.3f}  {out['cpu_ratio']:>9.3f}"
        f"   ({out['bytes_per_request']:.1f} B per logged request, {out['replicas_created']} replicas created, {out['cold_starts']} cold starts)"
    )
    print()
    del sim
    gc.collect()
    return out


class FaasSimPeer:
    """faas-sim in its own interpreter (``faas_sim_peer.py``), asked for one run at a time."""

    def __init__(self, root: Path, python: Path, devices: int = 1001):
        script = Path(__file__).resolve().parent / "faas_sim_peer.py"
        self.proc = subprocess.Popen(
            [str(python), str(script), str(root), str(devices)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(root)
        )

    def run(self, seconds: float) -> dict[str, Any]:
        """One faas-sim run of ``seconds`` simulated seconds: its CPU and wall seconds and completed invocations."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{seconds}\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT ") :])
        raise RuntimeError(f"faas-sim stopped (exit {self.proc.wait()}); run faas_sim_peer.py by hand to see why")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def against_faas_sim(root: Path, python: Path, seconds: float, reps: int) -> dict[str, Any]:
    """Our edge-1000 and faas-sim's raith21 setting (~1,000 devices, ~151 requests/s), ``seconds`` each, in turn."""
    peer = FaasSimPeer(root, python)
    print(f"(c) edge-1000 beside faas-sim ({root}): {seconds:g} simulated s each, {reps} rep(s), after one untimed short run of each")
    peer.run(min(seconds, 30.0))
    time_ours(edge_scenario(min(seconds, 30.0)))
    print(
        f"{'rep':>3}  {'ours CPU s':>10}  {'completed':>9}  {'per CPU s':>10}  {'faas-sim CPU s':>14}  {'completed':>9}  {'per CPU s':>10}  {'ratio':>6}  load"
    )
    rows = []
    for rep in range(reps):
        first, second = ("ours", "peer") if rep % 2 == 0 else ("peer", "ours")
        got: dict[str, Any] = {}
        for side in (first, second):
            if side == "ours":
                _, _, cpu, sim = time_ours(edge_scenario(seconds))
                got["ours"] = {"cpu": cpu, "completed": int(sim.summary()["requests_completed"])}
                del sim
                gc.collect()
            else:
                got["peer"] = peer.run(seconds)
        ours = got["ours"]["completed"] / got["ours"]["cpu"]
        theirs = got["peer"]["completed"] / got["peer"]["cpu"]
        load = loadavg()
        rows.append({"ours": got["ours"], "faas_sim": got["peer"], "ratio": ours / theirs, "load": load})
        print(
            f"{rep + 1:>3}  {got['ours']['cpu']:>10.2f}  {got['ours']['completed']:>9,}  {ours:>10,.0f}  {got['peer']['cpu']:>14.2f}"
            f"  {got['peer']['completed']:>9,}  {theirs:>10,.0f}  {ours / theirs:>5.1f}x  {load[0] if load else float('nan'):.1f}"
        )
    peer.close()
    ratio = statistics.median(r["ratio"] for r in rows)
    print(f"med  completed requests per CPU s, ours / faas-sim: {ratio:.1f}x (goal >= 50x)")
    print()
    return {"seconds": seconds, "runs": rows, "ratio": ratio}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer repetitions: under 60 s")
    ap.add_argument("--smoke", action="store_true", help="tiny runs: checks the script works, figures mean little")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--faas-sim", type=Path, default=None, metavar="PATH", help="a faas-sim checkout: also run it beside (b)")
    ap.add_argument("--faas-sim-python", type=Path, default=None, help="faas-sim's interpreter (default PATH/.venv/bin/python)")
    ap.add_argument("--faas-sim-seconds", type=float, default=300.0, help="simulated seconds of each side's run (default 300)")
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    basic_s, edge_s, reps = PLANS[mode]
    reps = max(1, args.reps or reps)
    started = time.perf_counter()
    load = loadavg()
    print(machine_line(f"faas throughput ({mode})", load, f"simpy {simpy.__version__}"))
    print(f"bare loop: {EVENTS_PER_REQUEST} events per request-equivalent (arrival, start, end)")
    print()
    basic = measure("(a) faas-basic", basic_scenario, basic_s, reps)
    edge = measure("(b) edge-1000: ~1,000 nodes, 5 autoscaled functions, ~150 req/s", edge_scenario, edge_s, reps)
    peer = None
    if args.faas_sim is not None:
        python = args.faas_sim_python or args.faas_sim / ".venv" / "bin" / "python"
        peer = against_faas_sim(args.faas_sim.resolve(), python, args.faas_sim_seconds, reps)
    load_end = loadavg()

    goals = {
        "basic_requests_per_s": basic["ours_requests_per_s"] >= GOAL_BASIC,
        "edge_requests_per_s": edge["ours_requests_per_s"] >= GOAL_EDGE,
        "bytes_per_request": basic["bytes_per_request"] <= GOAL_BYTES,
    }
    print("checks against the goals")
    print(
        f"  (a) requests per wall second {basic['ours_requests_per_s']:>12,.0f}  goal >= {GOAL_BASIC:,.0f}  {'ok' if goals['basic_requests_per_s'] else 'MISSED'}"
    )
    print(
        f"  (b) requests per wall second {edge['ours_requests_per_s']:>12,.0f}  goal >= {GOAL_EDGE:,.0f}   {'ok' if goals['edge_requests_per_s'] else 'MISSED'}"
    )
    print(
        f"  bytes per logged request     {basic['bytes_per_request']:>12.1f}  goal <= {GOAL_BYTES:.0f}       {'ok' if goals['bytes_per_request'] else 'MISSED'}"
    )
    print("  (faas-sim on this machine class: 21-52 k/s on (a), ~2 k/s on (b), ~1 KB per request)")
    if mode == "smoke":
        print("  (smoke mode: runs too short for the figures to mean anything)")
    for key, met in goals.items():
        if not met:
            print(f"GOAL MISSED: {key}")
    result = {
        "mode": mode,
        "python": platform.python_version(),
        "simpy": simpy.__version__,
        "reps": reps,
        "basic": basic,
        "edge": edge,
        "faas_sim": peer,
        "bytes_per_request": basic["bytes_per_request"],
        "loadavg_at_start": load,
        "loadavg_at_end": load_end,
        "goals": {"basic_requests_per_s": GOAL_BASIC, "edge_requests_per_s": GOAL_EDGE, "bytes_per_request": GOAL_BYTES},
        "goals_met": goals,
        "all_goals_met": all(goals.values()),
        "wall_seconds": time.perf_counter() - started,
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
