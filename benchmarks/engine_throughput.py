"""Engine throughput: jobs simulated per wall second, next to simpy's bare event loop.

A busy scenario (200 jobs/s, 2 s mean service, up to 200 workers of 8 threads) runs headless in
this process; its completed jobs per wall second are compared with simpy's bare event loop
processing the same number of events (two per job: an arrival and a completion), which is what an
event-per-job model would at least cost. Measurements are repeated, ours and bare interleaved, and
medians reported (the machine is shared and noisy).

Memory: the same scenario under ``tracemalloc`` for a short and a 4x longer run with sampling only
(``run.record_jobs`` off): the peak must stay roughly flat. The recorder grows with the number of
samples (one row per ``run.sample_interval``), never with jobs; its share is estimated and shown.
``run.record_jobs`` on is run for contrast: that log grows by one row per job.

Goals (from the issue): >= 100,000 jobs per wall second; >= 0.25x the bare loop's jobs-equivalent
rate; peak memory 4x/1x with sampling only < 1.5. The script reports, it does not assert: it exits 0
and prints ``GOAL MISSED: ...`` lines. The last line is ``RESULT {json}``.

    .venv/bin/python benchmarks/engine_throughput.py            # full: 3 x 1 simulated hour
    .venv/bin/python benchmarks/engine_throughput.py --quick    # under 60 s
    .venv/bin/python benchmarks/engine_throughput.py --quick --smoke   # a few seconds (tests)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simpy  # noqa: E402
from bench_common import time_bare, time_run  # noqa: E402

from engine import Scenario, Simulation  # noqa: E402
from engine.vmworld.jobs import JOBLOOP_ENV, compiled_loop  # noqa: E402

GOAL_JOBS_PER_S = 100_000.0
GOAL_BARE_RATIO = 0.25
GOAL_MEM_RATIO = 1.5
GOAL_CPU_RATIO = 1.0  # issue 24: the VM world at the bare loop's pace, in CPU time
EVENTS_PER_JOB = 2  # an arrival and a completion
MEM_FACTOR = 4  # the long memory run is this many times the short one


@dataclass(frozen=True)
class Plan:
    mode: str
    duration: float  # simulated seconds of a throughput run
    reps: int
    mem_duration: float  # simulated seconds of the short memory run (the long one is MEM_FACTOR x)
    same_samples: bool  # also run the long one with MEM_FACTOR x sample_interval (same sample count)
    record_jobs_long: bool  # record_jobs contrast at both durations (else the short one only)


PLANS = {
    "full": Plan("full", 3600.0, 3, 900.0, True, True),
    "quick": Plan("quick", 900.0, 2, 300.0, False, False),
    "smoke": Plan("smoke", 200.0, 1, 50.0, True, True),  # the first ~150 simulated s scale out from zero
}


def busy_scenario(duration: float, sample_interval: float = 5.0, record_jobs: bool = False, rate: float = 200.0) -> Scenario:
    return Scenario.from_dict(
        {
            "name": "bench-busy",
            "run": {"duration": duration, "seed": 1, "sample_interval": sample_interval, "record_jobs": record_jobs},
            "workload": {"pattern": "poisson", "rate": rate, "service_time": 2.0},
            "autoscaler": {"MAX_WORKERS": 200},
            "platform": {"worker_threads": 8},
        },
        origin="benchmarks/engine_throughput.py",
    )


# -- throughput --------------------------------------------------------------------------
def time_ours(scenario: Scenario) -> tuple[int, float, float]:
    """(jobs completed, wall s, CPU s) of ``Simulation(scenario).run()``, construction included."""
    sim, wall, cpu = time_run(scenario)
    return int(sim.summary()["jobs_completed"]), wall, cpu


# -- memory ------------------------------------------------------------------------------
def _deep_size(obj: Any, seen: set[int]) -> int:
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple):
        size += sum(_deep_size(v, seen) for v in obj)
    return size


def measure_memory(duration: float, sample_interval: float, record_jobs: bool) -> dict[str, Any]:
    """Peak traced bytes of one run, with the recorder's share (samples, decisions, events) at its end."""
    scenario = busy_scenario(duration, sample_interval=sample_interval, record_jobs=record_jobs)
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    sim = Simulation(scenario)
    sim.run()
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rec = sim.recorder
    seen: set[int] = set()
    samples_bytes = _deep_size(rec.raw("samples"), seen)
    recorder_bytes = samples_bytes + sum(_deep_size(rec.raw(t), seen) for t in ("decisions", "events")) + sim.platform.waits.counts.nbytes
    jobs = sim.platform.jobs
    jobs_log_bytes = _deep_size(jobs.rows, seen) if jobs.rows is not None else 0
    out = {
        "duration": duration,
        "sample_interval": sample_interval,
        "record_jobs": record_jobs,
        "jobs": int(sim.summary()["jobs_completed"]),
        "samples": sim.sample_count,
        "decisions": sim.count("decisions"),
        "events": sim.event_count,
        "peak_bytes": int(peak),
        "recorder_bytes": int(recorder_bytes),
        "samples_bytes": int(samples_bytes),
        "bytes_per_sample": samples_bytes / sim.sample_count if sim.sample_count else 0.0,
        "jobs_log_bytes": int(jobs_log_bytes),
        "peak_minus_recorder_bytes": int(peak - recorder_bytes - jobs_log_bytes),
        "wall_seconds": wall,
    }
    del sim
    gc.collect()
    return out


# -- report ------------------------------------------------------------------------------
def _div(a: float, b: float) -> float | None:
    """a / b, or None (JSON null) when b is 0."""
    return a / b if b else None


def _f(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _mb(n: float) -> str:
    return f"{n / 1e6:8.2f} MB"


def _rate(x: float) -> str:
    return f"{x:>12,.0f}"


def _job_loop() -> str:
    """Which job loop the VM world runs: "compiled" (engine/vmworld/_jobloop.pyx, built by make setup) or "python"."""
    return "python" if os.environ.get(JOBLOOP_ENV, "auto") == "python" or compiled_loop() is None else "compiled"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer repetitions: under 60 s")
    ap.add_argument("--smoke", action="store_true", help="tiny runs (a few seconds): checks the script works, figures mean little")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of each throughput measurement (default: 3 full, 2 quick)")
    ap.add_argument("--duration", type=float, default=None, help="simulated seconds of a throughput run (default: 3600 full, 900 quick)")
    ap.add_argument("--bare-procs", type=int, default=1, help="simpy processes sharing the bare loop's events (default 1: the cheapest)")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    args = ap.parse_args(argv)

    plan = PLANS["smoke" if args.smoke else "quick" if args.quick else "full"]
    duration = args.duration if args.duration is not None else plan.duration
    reps = max(1, args.reps if args.reps is not None else plan.reps)
    started = time.perf_counter()
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None

    print(
        f"engine throughput ({plan.mode}): python {platform.python_version()}, simpy {simpy.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPU(s), load average {' '.join(f'{x:.2f}' for x in load) if load else 'n/a'}"
    )
    print(f"scenario: poisson 200 jobs/s, service 2 s, MAX_WORKERS 200 x 8 threads, {duration:g} simulated s, {reps} rep(s)")
    job_loop = _job_loop()
    print(f"job loop: {job_loop} ({JOBLOOP_ENV}={os.environ.get(JOBLOOP_ENV, 'auto')})")
    print()

    # interleave ours and bare so that both see the same machine load
    ours_rates: list[float] = []
    bare_rates: list[float] = []
    cpu_ratios: list[float] = []
    runs: list[dict[str, Any]] = []
    print(
        f"{'rep':>3}  {'jobs':>9}  {'ours s':>7}  {'ours jobs/s':>12}  {'bare s':>7}  {'bare jobs-eq/s':>14}  {'ratio':>6}  {'CPU ratio':>9}"
    )
    for rep in range(reps):
        jobs, wall, cpu = time_ours(busy_scenario(duration))
        events = EVENTS_PER_JOB * jobs
        bare_wall, bare_cpu = time_bare(events, args.bare_procs)
        ours = jobs / wall
        bare = events / EVENTS_PER_JOB / bare_wall if bare_wall > 0 else float("inf")
        ours_rates.append(ours)
        bare_rates.append(bare)
        cpu_ratio = (bare_cpu / cpu) if cpu > 0 else 0.0  # same events per job on both sides
        cpu_ratios.append(cpu_ratio)
        runs.append(
            {
                "jobs": jobs,
                "ours_seconds": wall,
                "ours_cpu_seconds": cpu,
                "ours_jobs_per_s": ours,
                "bare_events": events,
                "bare_seconds": bare_wall,
                "bare_cpu_seconds": bare_cpu,
                "bare_jobs_eq_per_s": bare,
                "cpu_ratio": cpu_ratio,
            }
        )
        print(
            f"{rep + 1:>3}  {jobs:>9,}  {wall:>7.2f}  {_rate(ours)}  {bare_wall:>7.2f}  {_rate(bare):>14}  {ours / bare if bare else 0.0:>6.3f}  "
            f"{cpu_ratio:>9.3f}"
        )
    ours_med = statistics.median(ours_rates)
    bare_med = statistics.median(bare_rates)
    ratio = ours_med / bare_med if bare_med else 0.0
    cpu_ratio_med = statistics.median(cpu_ratios)
    print(f"med  {'':>9}  {'':>7}  {_rate(ours_med)}  {'':>7}  {_rate(bare_med):>14}  {ratio:>6.3f}  {cpu_ratio_med:>9.3f}")
    print("(ratio = median ours / median bare, wall clock; CPU ratio = bare CPU s / ours CPU s, less sensitive to other load)")
    print(
        f"bare loop: {bare_med * EVENTS_PER_JOB:,.0f} events/s ({EVENTS_PER_JOB} events per job-equivalent, {args.bare_procs} process(es))"
    )
    print()

    memory: dict[str, Any] = {}
    if not args.no_memory:
        short, long = plan.mem_duration, plan.mem_duration * MEM_FACTOR
        rows = {
            "sampling_1x": measure_memory(short, 5.0, False),
            "sampling_4x": measure_memory(long, 5.0, False),
        }
        if plan.same_samples:
            rows["sampling_4x_same_samples"] = measure_memory(long, 5.0 * MEM_FACTOR, False)
        rows["record_jobs_1x"] = measure_memory(short, 5.0, True)
        if plan.record_jobs_long:
            rows["record_jobs_4x"] = measure_memory(long, 5.0, True)
        print("memory (tracemalloc peak; recorder = samples + decisions + events + wait histogram, deep size at the end)")
        print(
            f"{'run':<26}  {'sim s':>6}  {'jobs':>9}  {'samples':>7}  {'peak':>11}  {'recorder':>11}  {'B/sample':>8}  {'peak-rec-log':>12}  {'wall s':>6}"
        )
        for name, m in rows.items():
            print(
                f"{name:<26}  {m['duration']:>6g}  {m['jobs']:>9,}  {m['samples']:>7}  {_mb(m['peak_bytes'])}  {_mb(m['recorder_bytes'])}  "
                f"{m['bytes_per_sample']:>8.0f}  {_mb(m['peak_minus_recorder_bytes']):>12}  {m['wall_seconds']:>6.1f}"
            )
        a, b = rows["sampling_1x"], rows["sampling_4x"]
        memory = {
            "runs": rows,
            "jobs_ratio": _div(b["jobs"], a["jobs"]),
            "peak_ratio": b["peak_bytes"] / a["peak_bytes"],
            "peak_minus_recorder_ratio": _div(b["peak_minus_recorder_bytes"], a["peak_minus_recorder_bytes"]),
            "bytes_per_sample": b["bytes_per_sample"],
        }
        if "sampling_4x_same_samples" in rows:
            memory["peak_ratio_same_samples"] = rows["sampling_4x_same_samples"]["peak_bytes"] / a["peak_bytes"]
        rj = rows["record_jobs_1x"]
        memory["record_jobs_bytes_per_job"] = _div(rj["peak_bytes"] - a["peak_bytes"], rj["jobs"])
        if "record_jobs_4x" in rows:
            memory["record_jobs_peak_ratio"] = rows["record_jobs_4x"]["peak_bytes"] / rj["peak_bytes"]
        print(
            f"sampling only, {MEM_FACTOR}x the simulated time ({_f(memory['jobs_ratio'], '.2f')}x the jobs): peak x{memory['peak_ratio']:.2f}, "
            f"without the recorder x{_f(memory['peak_minus_recorder_ratio'], '.2f')}"
            + (f", same sample count x{memory['peak_ratio_same_samples']:.2f}" if "peak_ratio_same_samples" in memory else "")
        )
        print(
            f"record_jobs on: +{_f(memory['record_jobs_bytes_per_job'], '.0f')} B per job"
            + (f", peak x{memory['record_jobs_peak_ratio']:.2f} for {MEM_FACTOR}x the jobs" if "record_jobs_peak_ratio" in memory else "")
        )
        print()

    goals: dict[str, bool] = {
        "jobs_per_s": ours_med >= GOAL_JOBS_PER_S,
        "bare_ratio": ratio >= GOAL_BARE_RATIO,
        "cpu_ratio": cpu_ratio_med >= GOAL_CPU_RATIO,
    }
    if memory:
        goals["memory_flat"] = memory["peak_ratio"] < GOAL_MEM_RATIO
    print("checks against the goals")
    print(f"  jobs per wall second   {ours_med:>12,.0f}  goal >= {GOAL_JOBS_PER_S:,.0f}   {'ok' if goals['jobs_per_s'] else 'MISSED'}")
    print(f"  ours / bare loop       {ratio:>12.3f}  goal >= {GOAL_BARE_RATIO}       {'ok' if goals['bare_ratio'] else 'MISSED'}")
    print(f"  CPU ratio (bare/ours)  {cpu_ratio_med:>12.3f}  goal >= {GOAL_CPU_RATIO}        {'ok' if goals['cpu_ratio'] else 'MISSED'}")
    if memory:
        print(
            f"  peak memory 4x / 1x    {memory['peak_ratio']:>12.2f}  goal < {GOAL_MEM_RATIO}         {'ok' if goals['memory_flat'] else 'MISSED'}"
        )
    if plan.mode == "smoke":
        print("  (smoke mode: runs too short for the figures to mean anything)")
    if not goals["jobs_per_s"]:
        print(f"GOAL MISSED: {ours_med:,.0f} jobs per wall second < {GOAL_JOBS_PER_S:,.0f}")
    if not goals["cpu_ratio"]:
        print(f"GOAL MISSED: CPU ratio bare / ours = {cpu_ratio_med:.3f} < {GOAL_CPU_RATIO}")
    if not goals["bare_ratio"]:
        print(f"GOAL MISSED: ours / bare simpy loop = {ratio:.3f} < {GOAL_BARE_RATIO}")
    if memory and not goals["memory_flat"]:
        print(f"GOAL MISSED: peak memory grows x{memory['peak_ratio']:.2f} for {MEM_FACTOR}x the jobs (>= {GOAL_MEM_RATIO})")

    result = {
        "mode": plan.mode,
        "plan": asdict(plan),
        "python": platform.python_version(),
        "simpy": simpy.__version__,
        "duration": duration,
        "reps": reps,
        "bare_procs": args.bare_procs,
        "job_loop": job_loop,
        "jobs": runs[-1]["jobs"],
        "runs": runs,
        "ours_jobs_per_s": ours_med,
        "bare_jobs_eq_per_s": bare_med,
        "bare_events_per_s": bare_med * EVENTS_PER_JOB,
        "ratio": ratio,
        "cpu_ratio": cpu_ratio_med,
        "loadavg_at_start": load,
        "memory": memory,
        "goals": {
            "jobs_per_s": GOAL_JOBS_PER_S,
            "bare_ratio": GOAL_BARE_RATIO,
            "cpu_ratio": GOAL_CPU_RATIO,
            "memory_ratio": GOAL_MEM_RATIO,
        },
        "goals_met": goals,
        "all_goals_met": all(goals.values()),
        "wall_seconds": time.perf_counter() - started,
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
