"""Function platform vs SimFaaS (PyPI ``simfaas``): CPU time per run at 0.05, 0.9 and 10 requests/s, scale per request.

SimFaaS's ``ServerlessSimulator`` and our function platform are configured alike and run side by side in this
process, interleaved per repetition (the machine is shared), medians of ``--reps``:

* Poisson arrivals at the rate; one request per instance at a time (SimFaaS's model; ours: ``scaler: per_request``,
  ``concurrency: 1``); a new instance per request that finds none idle (a cold start); an instance idle for the
  expiration threshold (600 s, SimFaaS's default; ours: ``idle_timeout``) is removed; no instance limit in practice
  (1,000 both).
* Service times exponential: warm mean 2.016 s, cold mean 2.163 s (SimFaaS's documented example). Ours draws the
  execution exponential with the warm mean on every request and, for a cold start, the instance's start-up
  exponential with the difference of the means (0.147 s) before it: the same mean cold service time (the cold time's
  shape is a sum of two exponentials, not one; with a 600 s threshold this does not move the measures below). Ours
  also adds the scheduler's simulated cost (milliseconds) and the first image pull on a node.
* The same horizon (0.05 rps: 200,000 simulated s, SimFaaS's example scale; 0.9 rps: 20,000 s; 10 rps: 2,000 s).

Measured: CPU seconds (``time.process_time``) of a whole run, construction and the result figures included
(SimFaaS: ``generate_trace`` + ``get_result_dict``; ours: ``Simulation(scenario).run()`` + ``summary()``), and wall
seconds, after one untimed short warm-up run of each (first-use loading is not what is compared). Compared: the cold-start probability and the time-average instance count, which must agree within noise
(each side's own spread over the repetitions, which use different seeds, plus a binomial term; printed). Our
recording stays on (samples every ``run.sample_interval`` = 5 s, per-request rows); only the utilisation rows
(per replica and node) are off, SimFaaS having no such thing.

The CPU ratio is the median of the repetitions' own ratios (SimFaaS's run over ours, timed one after the other): this
shared machine's speed drifts, both sides' CPU seconds moving together by up to ~1.7x within seconds even at load 1
(2026-12-04: ours 33-36 ms and SimFaaS 229-230 ms for two reps, then 22-25 and 123-150 ms), so a ratio of the two
sides' separate medians mixes fast and slow stretches; it is printed too (``cpu_ratio_of_medians``).

Goal (issue 24): ours >= 5x SimFaaS in CPU time at every rate. The script reports, it does not assert: it exits 0
and prints ``GOAL MISSED: ...`` lines; the last line is ``RESULT {json}``.

    .venv/bin/python benchmarks/faas_vs_simfaas.py            # full: 5 reps at the horizons above
    .venv/bin/python benchmarks/faas_vs_simfaas.py --quick    # 3 reps at a fifth of the horizons
    .venv/bin/python benchmarks/faas_vs_simfaas.py --smoke    # 1 rep of a few hundred requests (tests)
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_common import loadavg, machine_line  # noqa: E402

from engine import Scenario, Simulation  # noqa: E402
from engine.faas.dispatch import one_slot_loop  # noqa: E402
from engine.faas.params import register_simulator  # noqa: E402
from engine.faas.simulators import SIMULATORS, FunctionSimulator  # noqa: E402

WARM_MEAN = 2.016
COLD_MEAN = 2.163
EXPIRATION = 600.0
MAX_INSTANCES = 1000
GOAL = 5.0
HORIZONS = {0.05: 200_000.0, 0.9: 20_000.0, 10.0: 2_000.0}
PLANS = {"full": (1.0, 5), "quick": (0.2, 3), "smoke": (0.02, 1)}


class ExponentialSimulator(FunctionSimulator):
    """Execution exponential with mean ``execution_seconds``, start-up exponential with mean ``startup_seconds``."""

    doc = "exponential execution (mean execution_seconds) and start-up (mean startup_seconds), anywhere"

    def execution(self, device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.exponential(float(self.fn.execution_seconds), n)

    def startup(self, device: str, image: str, present: bool, image_bytes: int, rng: np.random.Generator) -> float:
        return float(rng.exponential(float(self.fn.startup_seconds))) if self.fn.startup_seconds > 0 else 0.0


if "exponential" not in SIMULATORS:
    register_simulator("exponential", ExponentialSimulator)


def scenario(rate: float, horizon: float, seed: int) -> Scenario:
    return Scenario.from_dict(
        {
            "name": f"bench-simfaas-{rate:g}",
            "run": {"world": "functions", "seed": seed, "duration": horizon, "sample_interval": 5.0},
            "cluster": {"topology": "faas_edge", "cells": 1, "devices_per_cell": 2, "cloudlets": 1, "cloud_nodes": 4},
            "faas": {"record_utilization": False},
            "fn1": {
                "function": "fn",
                "images": ["faas-workloads/python-pi"],
                "simulator": "exponential",
                "execution_seconds": WARM_MEAN,
                "startup_seconds": COLD_MEAN - WARM_MEAN,
                "concurrency": 1,
                "cpu_millis": 1,
                "memory_mib": 1,
                "scaler": "per_request",
                "min_replicas": 0,
                "max_replicas": MAX_INSTANCES,
                "idle_timeout": EXPIRATION,
                "rate": rate,
                "arrival": "poisson",
            },
        },
        origin="benchmarks/faas_vs_simfaas.py",
    )


def run_ours(rate: float, horizon: float, seed: int) -> dict[str, float]:
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    sim = Simulation(scenario(rate, horizon, seed))
    sim.run()
    s = sim.summary()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    requests = s["requests_generated"]
    return {
        "cpu": cpu,
        "wall": wall,
        "requests": requests,
        "p_cold": s["cold_starts"] / requests if requests else math.nan,
        "servers": s["replica_hours"] * 3600.0 / horizon,
        "rejected": s["requests_rejected"],
    }


def run_simfaas(rate: float, horizon: float, seed: int) -> dict[str, float]:
    from simfaas.ServerlessSimulator import ServerlessSimulator

    np.random.seed(seed)  # SimFaaS draws from numpy's global generator
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    sim = ServerlessSimulator(
        arrival_rate=rate,
        warm_service_rate=1.0 / WARM_MEAN,
        cold_service_rate=1.0 / COLD_MEAN,
        expiration_threshold=EXPIRATION,
        max_time=horizon,
        maximum_concurrency=MAX_INSTANCES,
    )
    sim.generate_trace()
    r = sim.get_result_dict()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {
        "cpu": cpu,
        "wall": wall,
        "requests": r["reqs_total"],
        "p_cold": r["prob_cold"],
        "servers": r["inst_count_avg"],
        "rejected": r["reqs_reject"],
    }


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def agree(ours: list[dict], peer: list[dict], key: str, requests: float) -> dict[str, Any]:
    """Do the means agree within noise? 3 standard errors of the difference (the runs' spread, plus binomial for p_cold)."""
    (mo, so), (mp, sp) = _mean_sd([r[key] for r in ours]), _mean_sd([r[key] for r in peer])
    var = so**2 / len(ours) + sp**2 / len(peer)
    if key == "p_cold":
        p = max((mo + mp) / 2, 1e-9)
        var += 2 * p * (1 - p) / max(requests, 1.0) / len(ours)
    tol = 3.0 * math.sqrt(var)
    tol = max(tol, 0.02 * abs(mp))  # a floor: 2 % relative (few reps, one seed each)
    return {"ours": mo, "simfaas": mp, "diff": mo - mp, "tolerance": tol, "agree": abs(mo - mp) <= tol}


def measure(rate: float, horizon: float, reps: int) -> dict[str, Any]:
    print(f"{rate:g} requests/s over {horizon:,.0f} simulated s, {reps} rep(s)")
    run_ours(rate, min(horizon, 200.0 / rate), 0)  # warm-up, not timed: first-use loading (measurements, the cluster)
    run_simfaas(rate, min(horizon, 200.0 / rate), 0)
    print(f"{'rep':>3}  {'requests':>8}  {'ours CPU s':>10}  {'SimFaaS CPU s':>13}  {'CPU ratio':>9}  {'wall ratio':>10}")
    ours, peer = [], []
    for rep in range(reps):
        seed = rep + 1
        o = run_ours(rate, horizon, seed)
        p = run_simfaas(rate, horizon, seed)
        ours.append(o)
        peer.append(p)
        print(
            f"{rep + 1:>3}  {o['requests']:>8,}  {o['cpu']:>10.3f}  {p['cpu']:>13.3f}  {p['cpu'] / max(o['cpu'], 1e-9):>9.2f}"
            f"  {p['wall'] / max(o['wall'], 1e-9):>10.2f}"
        )
    ours_cpu = statistics.median(r["cpu"] for r in ours)
    peer_cpu = statistics.median(r["cpu"] for r in peer)
    ours_wall = statistics.median(r["wall"] for r in ours)
    peer_wall = statistics.median(r["wall"] for r in peer)
    requests = statistics.fmean(r["requests"] for r in ours)
    paired = [p["cpu"] / max(o["cpu"], 1e-9) for o, p in zip(ours, peer, strict=True)]
    out = {
        "rate": rate,
        "horizon": horizon,
        "requests": requests,
        "ours_cpu_seconds": ours_cpu,
        "simfaas_cpu_seconds": peer_cpu,
        "ours_wall_seconds": ours_wall,
        "simfaas_wall_seconds": peer_wall,
        "cpu_ratio": statistics.median(paired),  # the goal's figure: each repetition's own ratio (see the docstring)
        "cpu_ratio_of_medians": peer_cpu / max(ours_cpu, 1e-9),
        "cpu_ratios_paired": paired,
        "wall_ratio": peer_wall / max(ours_wall, 1e-9),
        "ours_us_per_request": 1e6 * ours_cpu / max(requests, 1.0),
        "simfaas_us_per_request": 1e6 * peer_cpu / max(statistics.fmean(r["requests"] for r in peer), 1.0),
        "p_cold": agree(ours, peer, "p_cold", requests),
        "servers": agree(ours, peer, "servers", requests),
        "rejected": [r["rejected"] for r in ours + peer],
    }
    print(
        f"med  {'':>8}  {ours_cpu:>10.3f}  {peer_cpu:>13.3f}  {out['cpu_ratio']:>9.2f}  {out['wall_ratio']:>10.2f}"
        f"   ({out['ours_us_per_request']:.1f} vs {out['simfaas_us_per_request']:.1f} CPU us per request)"
    )
    print(f"     CPU ratio: median of the repetitions' own {out['cpu_ratio']:.2f}x; of the medians {out['cpu_ratio_of_medians']:.2f}x")
    for key, label in (("p_cold", "cold-start probability"), ("servers", "average instance count")):
        a = out[key]
        print(
            f"     {label:<24} ours {a['ours']:.4f}  SimFaaS {a['simfaas']:.4f}  diff {a['diff']:+.4f}"
            f"  (noise +-{a['tolerance']:.4f})  {'agree' if a['agree'] else 'DIFFER'}"
        )
    print()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a fifth of the horizons")
    ap.add_argument("--smoke", action="store_true", help="tiny runs: checks the script works, figures mean little")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--rates", type=float, nargs="*", default=list(HORIZONS), help="of 0.05 0.9 10")
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    scale, reps = PLANS[mode]
    reps = max(1, args.reps or reps)
    import simfaas

    started = time.perf_counter()
    load = loadavg()
    print(machine_line(f"function platform vs SimFaaS {simfaas.__version__} ({mode})", load))
    loop = "compiled" if one_slot_loop()[1] else "python"  # SCALELAB_FAAS_LOOP chooses; compiled when built
    print(
        f"scale per request, expiration {EXPIRATION:g} s, warm {WARM_MEAN} s / cold {COLD_MEAN} s exponential; CPU ratio = SimFaaS / ours"
    )
    print(f"our one-slot request loop: {loop} (SCALELAB_FAAS_LOOP=python|compiled|auto)")
    print()
    runs = {f"{rate:g}": measure(rate, HORIZONS.get(rate, 20_000.0) * scale, reps) for rate in args.rates}
    load_end = loadavg()
    goals = {f"cpu_ratio_{k}": v["cpu_ratio"] >= GOAL for k, v in runs.items()}
    agreement = {f"{m}_{k}": v[m]["agree"] for k, v in runs.items() for m in ("p_cold", "servers")}
    print(f"checks (goal: ours >= {GOAL:g}x SimFaaS in CPU time, same cold-start probability and instance count within noise)")
    for k, v in runs.items():
        print(f"  {k:>5} rps  CPU ratio {v['cpu_ratio']:>7.2f}  {'ok' if goals[f'cpu_ratio_{k}'] else 'MISSED'}")
    if mode == "smoke":
        print("  (smoke mode: runs too short for the figures to mean anything)")
    for key, met in goals.items():
        if not met:
            print(f"GOAL MISSED: {key}")
    for key, ok in agreement.items():
        if not ok:
            print(f"DISAGREE: {key}")
    result = {
        "mode": mode,
        "python": platform.python_version(),
        "simfaas": simfaas.__version__,
        "faas_loop": loop,
        "reps": reps,
        "runs": runs,
        "loadavg_at_start": load,
        "loadavg_at_end": load_end,
        "goal_cpu_ratio": GOAL,
        "goals_met": goals,
        "agreement": agreement,
        "all_goals_met": all(goals.values()),
        "wall_seconds": time.perf_counter() - started,
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
