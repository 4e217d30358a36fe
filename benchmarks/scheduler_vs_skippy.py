"""Our scheduler (skippy mode) against edgerun-skippy-core 0.1.1, in one process on identical clusters.

Skippy's scalability experiment shape: 10 cloud regions of N/10 nodes (plus a storage node each), N = 100,
1,000, 5,000, 15,000, 200 pods of a mixed workload, default priorities, 100% of nodes scored. For each N it
prints the median and p95 per-pod CPU time of both (the process's CPU clock around each call: other processes on
a shared machine do not inflate it), the ratio of the medians in CPU and in wall time, our p95 over our median,
and whether the placements are identical pod for pod. Set-up is timed too (the same CPU clock: skippy-core's
ClusterContext built from our cluster and its Scheduler; our Scheduler, which makes the columns a first use would
otherwise make inside a pod's decision) and printed on its own line per size, with the total ratio: set-up plus
every per-pod time, over the pods both scheduled. ``--quick`` (under 60 s) lets skippy-core schedule fewer pods
at the large sizes and compares placements on those. The load average is printed; the last line is ``RESULT {json}``.

Goals (issue 24, CPU time): >= 200x at 1,000 nodes and >= 1,000x at 15,000; our p95 within 3x our median, judged on
the one pass. Beside it (``--passes K``, default 3) our p95/median over each pod's minimum of K passes, each on a fresh
identical cluster and scheduler (first uses recur in every pass): what the code costs a pod, without the interruptions
of a shared machine, which a 20-40 us pod feels as much as its own work.

    .venv/bin/python benchmarks/scheduler_vs_skippy.py [--quick | --smoke] [--passes K] [--order sequential|interleaved] [--pretouch C]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine.scheduling.pretouch as pretouch  # noqa: E402
from engine.cluster.pods import mixed_pods  # noqa: E402
from engine.cluster.synth import cloud_regions  # noqa: E402
from engine.core.compiled import chosen_module  # noqa: E402
from engine.scheduling import Scheduler, SchedulerParams  # noqa: E402
from engine.scheduling.skippy_compat import silence_skippy_logging, skippy_context, skippy_pod, skippy_scheduler  # noqa: E402
from engine.scheduling.skippy_step import STEP_ENV, STEP_MODULE  # noqa: E402

GOALS = {1000: 200.0, 15000: 1000.0}  # required CPU speed-up of the median at these sizes (issue 24)
GOAL_P95_OVER_MEDIAN = 3.0
FULL = {100: 200, 1000: 200, 5000: 200, 15000: 200}  # N -> pods skippy-core schedules
QUICK = {100: 200, 1000: 100, 5000: 40, 15000: 12}
SMOKE = {100: 20, 5000: 5}  # the script end to end in seconds (tests): one size below SMALL, one above


def build(n: int, seed: int):
    rng = np.random.default_rng(seed)
    cluster = cloud_regions(n, 10, rng, storage=True)
    for row, s in enumerate(cluster.storage_nodes):
        cluster.storage.make_bucket(f"data-{row}", int(s))
        cluster.storage.put(f"data-{row}", "item", int(rng.integers(1, 1000)) * 2**20)
    return cluster, mixed_pods(cluster, 200, rng)


def repeated_passes(n: int, passes: int, seed: int = 42) -> np.ndarray:
    """Our per-pod CPU ms over ``passes`` more passes, each on a fresh identical cluster and scheduler (pod i meets the
    same state in every pass, first uses included): a pods x passes array."""
    times = []
    for _ in range(passes):
        cluster, pods = build(n, seed)
        ours = Scheduler(cluster, SchedulerParams())
        row = []
        for pod in pods:
            cpu = time.process_time()
            ours.schedule(pod)
            row.append((time.process_time() - cpu) * 1e3)
        times.append(row)
    return np.array(times).T


def measure(n: int, skippy_pods: int, seed: int = 42, passes: int = 0, order: str = "sequential") -> dict:
    """Per-pod latencies of both schedulers on the same cluster and pods, and placement agreement. ``sequential``:
    skippy-core's pods, then ours (each with its caches warm from its previous pod). ``interleaved``: pod i by
    skippy-core, then by ours, then pod i + 1: both meet the machine as it is at that moment, but each of our pods
    starts with caches skippy-core's ~10-200 ms of Python have emptied (at 1,000 nodes our median ~2.5x)."""
    cluster, pods = build(n, seed)
    params = SchedulerParams()
    cpu = time.process_time()
    theirs = skippy_scheduler(skippy_context(cluster), params)  # snapshot before ours changes the cluster
    skippy_setup_ms = (time.process_time() - cpu) * 1e3
    cpu = time.process_time()
    ours = Scheduler(cluster, params)
    ours_setup_ms = (time.process_time() - cpu) * 1e3
    skippy_ms, skippy_wall, skippy_nodes = [], [], []
    ours_ms, ours_wall, our_nodes = [], [], []

    def skippy_one(pod) -> None:
        sp = skippy_pod(pod)
        start, cpu = time.perf_counter(), time.process_time()
        result = theirs.schedule(sp)
        skippy_ms.append((time.process_time() - cpu) * 1e3)
        skippy_wall.append((time.perf_counter() - start) * 1e3)
        skippy_nodes.append(result.suggested_host.name if result.suggested_host else None)

    def ours_one(pod) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        decision = ours.schedule(pod)
        ours_ms.append((time.process_time() - cpu) * 1e3)
        ours_wall.append((time.perf_counter() - start) * 1e3)
        our_nodes.append(decision.node_name)

    if order == "interleaved":
        for i, pod in enumerate(pods):
            if i < skippy_pods:
                skippy_one(pod)
            ours_one(pod)
    else:
        for pod in pods[:skippy_pods]:
            skippy_one(pod)
        for pod in pods:
            ours_one(pod)
    row = {
        "n": n,
        "nodes_total": cluster.n,
        "pods": len(pods),
        "skippy_pods": skippy_pods,
        "skippy_median_ms": float(np.median(skippy_ms)),
        "skippy_p95_ms": float(np.percentile(skippy_ms, 95)),
        "ours_median_ms": float(np.median(ours_ms)),
        "ours_p95_ms": float(np.percentile(ours_ms, 95)),
        "skippy_median_wall_ms": float(np.median(skippy_wall)),
        "ours_median_wall_ms": float(np.median(ours_wall)),
        "identical": our_nodes[:skippy_pods] == skippy_nodes,
        "order": order,
        "skippy_setup_ms": skippy_setup_ms,
        "ours_setup_ms": ours_setup_ms,
        "skippy_total_ms": skippy_setup_ms + sum(skippy_ms),
        "ours_total_ms": ours_setup_ms + sum(ours_ms[:skippy_pods]),  # the pods skippy-core scheduled too
    }
    row["ratio"] = row["skippy_median_ms"] / row["ours_median_ms"]  # CPU time
    row["total_ratio"] = row["skippy_total_ms"] / row["ours_total_ms"]  # set-up included
    row["wall_ratio"] = row["skippy_median_wall_ms"] / row["ours_median_wall_ms"]
    row["ours_p95_over_median"] = row["ours_p95_ms"] / row["ours_median_ms"]
    row["p95_goal_met"] = row["ours_p95_over_median"] <= GOAL_P95_OVER_MEDIAN
    if passes:  # each pod's minimum over this pass and ``passes`` more: the machine's interruptions filtered out
        least = np.minimum(np.array(ours_ms), repeated_passes(n, passes, seed).min(axis=1))
        row["passes"] = passes + 1
        row["ours_min_median_ms"] = float(np.median(least))
        row["ours_min_p95_over_median"] = float(np.percentile(least, 95) / np.median(least))
    if n in GOALS:
        row["goal_ratio"] = GOALS[n]
        row["goal_met"] = row["ratio"] >= GOALS[n]
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer skippy-core pods at large sizes (under 60 s)")
    parser.add_argument("--smoke", action="store_true", help="100 and 5,000 nodes, a few skippy-core pods (tests)")
    parser.add_argument(
        "--passes", type=int, default=3, help="our pods' p95/median also over each pod's minimum of this many passes (1: not)"
    )
    parser.add_argument(
        "--order",
        choices=("interleaved", "sequential"),
        default="sequential",
        help="sequential: all of skippy-core's pods, then ours; interleaved: each pod by skippy-core, then by ours (cold caches)",
    )
    parser.add_argument(
        "--pretouch",
        type=int,
        default=pretouch.COLUMNS,
        help="heap columns our scheduler touches at set-up (0: none; engine.scheduling.pretouch)",
    )
    args = parser.parse_args(argv)
    pretouch.COLUMNS = args.pretouch
    silence_skippy_logging()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    plan = {"smoke": SMOKE, "quick": QUICK, "full": FULL}[mode]
    rows = []
    step = "compiled" if chosen_module(STEP_MODULE, STEP_ENV) is not None else "python"
    load = list(os.getloadavg())
    print(
        f"scheduler vs edgerun-skippy-core ({mode}): python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; per-pod CPU time (wall ratio beside)"
    )
    print(
        f"skippy step: {step} ({STEP_ENV}=python|compiled chooses; the compiled one is built by make setup); pretouch {args.pretouch} columns; order {args.order}"
    )
    print(
        f"{'N':>6} {'skippy med':>11} {'p95':>9} {'ours med':>9} {'p95':>8} {'p95/med':>7} {'CPU ratio':>9} {'wall':>7} {'goal':>6} identical (pods)"
    )
    warm, _ = build(20, 0)  # imports and module loads (both sides) before any set-up is timed
    skippy_scheduler(skippy_context(warm), SchedulerParams()), Scheduler(warm, SchedulerParams())
    for n, skippy_pods in plan.items():
        r = measure(n, skippy_pods, passes=max(0, args.passes - 1), order=args.order)
        rows.append(r)
        goal = f"{r['goal_ratio']:.0f}x" if "goal_ratio" in r else "-"
        print(
            f"{n:>6} {r['skippy_median_ms']:>9.2f}ms {r['skippy_p95_ms']:>7.2f}ms {r['ours_median_ms']:>7.3f}ms "
            f"{r['ours_p95_ms']:>6.3f}ms {r['ours_p95_over_median']:>7.2f} {r['ratio']:>8.0f}x {r['wall_ratio']:>6.0f}x {goal:>6} "
            f"{r['identical']} ({r['skippy_pods']})",
        )
        print(
            f"{'':>6} set-up: skippy {r['skippy_setup_ms']:.1f} ms, ours {r['ours_setup_ms']:.2f} ms; set-up + {r['skippy_pods']} pods: "
            f"skippy {r['skippy_total_ms']:.0f} ms, ours {r['ours_total_ms']:.2f} ms, total CPU ratio {r['total_ratio']:.0f}x",
            flush=True,
        )
        if "passes" in r:
            print(
                f"{'':>6} ours, each pod's minimum over {r['passes']} passes: median {r['ours_min_median_ms']:.3f} ms, "
                f"p95/median {r['ours_min_p95_over_median']:.2f}",
                flush=True,
            )
    result = {
        "benchmark": "scheduler_vs_skippy",
        "mode": mode,
        "sizes": rows,
        "identical": all(r["identical"] for r in rows),
        "skippy_step": step,
        "pretouch_columns": args.pretouch,
        "order": args.order,
        "goals_met": all(r.get("goal_met", True) and r["p95_goal_met"] for r in rows),
        "loadavg_at_start": load,
        "loadavg_at_end": list(os.getloadavg()),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    for r in rows:
        if not r.get("goal_met", True):
            print(f"GOAL MISSED: {r['n']} nodes, CPU ratio {r['ratio']:.0f}x < {r['goal_ratio']:.0f}x")
        if not r["p95_goal_met"]:
            print(f"GOAL MISSED: {r['n']} nodes, our p95 is {r['ours_p95_over_median']:.2f}x our median (> {GOAL_P95_OVER_MEDIAN:g}x)")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
