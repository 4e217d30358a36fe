"""Command line: ``python -m engine run SCENARIO [--set NAME=VALUE ...] [--seed N] [--out DIR]``.

Also ``python -m engine sweep SCENARIO --grid section.NAME=V1,V2 ... --seeds 1,2,3 [--workers N]
[--scheduler ADDRESS] [--out FILE.parquet]``: a parameter sweep on Dask (see :mod:`engine.sweep`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd
import yaml

from engine.core.params import ParamError
from engine.sim.recording import check_recording
from engine.sim.scenario import Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation


def _parse_set(items: list[str]) -> dict:
    changes = {}
    for item in items:
        if "=" not in item:
            raise ParamError(item, "expected NAME=VALUE (e.g. autoscaler.MAX_WORKERS=5)")
        name, raw = item.split("=", 1)
        changes[name.strip()] = yaml.safe_load(raw)
    return changes


def _tables_written(sim: Simulation) -> list[str]:
    """The tables ``--out`` writes: the VM world's three (and jobs), every recorded table of another world."""
    if sim.sections["run"].world == "vm":
        return ["samples", "events", "decisions", *(["jobs"] if sim.jobs_frame() is not None else [])]
    return sim.tables


def _write_outputs(sim: Simulation, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if sim.sections["run"].world != "vm":
        for name in _tables_written(sim):
            sim.frame(name).to_parquet(out / f"{name}.parquet", index=False)
        (out / "summary.json").write_text(json.dumps(sim.summary(), indent=2, default=float))
        (out / "recording.json").write_text(json.dumps(sim.recording(), indent=1))
        return
    sim.samples().to_parquet(out / "samples.parquet", index=False)
    sim.events().to_parquet(out / "events.parquet", index=False)
    sim.decisions().to_parquet(out / "decisions.parquet", index=False)
    jobs = sim.jobs_frame()
    if jobs is not None:
        jobs.to_parquet(out / "jobs.parquet", index=False)
    (out / "summary.json").write_text(json.dumps(sim.summary(), indent=2, default=float))
    (out / "recording.json").write_text(json.dumps(sim.recording(), indent=1))


def format_summary(summary: dict) -> str:
    """The run's headline figures as printed by ``run`` and ``replay`` (per world)."""
    if summary.get("world") == "pod":
        return format_pod_summary(summary)
    return "\n".join(
        [
            f"scenario {summary['scenario']} (seed {summary['seed']}), {summary['simulated_seconds']:.0f} simulated s",
            f"  jobs completed   {summary['jobs_completed']} of {summary['jobs_arrived']} arrived ({summary['queue_at_end']} queued at the end)",
            f"  wait p50/p95/p99 {summary['wait_p50']:.2f} / {summary['wait_p95']:.2f} / {summary['wait_p99']:.2f} s",
            f"  VM-hours         {summary['vm_hours']:.2f}",
            f"  policy           {summary['policy']}   scale-outs {summary['scale_outs']}   scale-ins {summary['scale_ins']}"
            f"   master recoveries {summary['master_recoveries']}",
            f"  max active workers {summary['max_active_workers']}   time_left outside the band "
            + (
                f"{summary['share_outside_band']:.0%} of samples"
                if summary["share_outside_band"] == summary["share_outside_band"]
                else "n/a (the policy does not measure time_left)"
            ),
        ]
    )


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f} %"


def format_pod_summary(s: dict) -> str:
    """The pod world's summary: the experiment, the policy, what became of the pods, allocation and fragmentation."""
    policy = s["gpu_policy"] if s["gpu_policy"] != "weighted" else "weighted priorities"
    ties = f" (ties: {s['tie_break']}" + (f", score: {s['fgd_score']})" if s["gpu_policy"] == "FGD" else ")")
    lines = [
        f"scenario {s['scenario']} (seed {s['seed']}), {s['simulated_seconds']:.0f} simulated s",
        f"  cluster          {s['nodes']} nodes, {s['gpus']} GPUs   policy {policy}{ties if s['gpu_policy'] != 'weighted' else ''}",
    ]
    if s["experiment"] == "fill":
        end = s["end_pct"]
        lines += [
            f"  experiment       cluster filling: {s['pods_submitted']} of {s['pods_in_workload']} pods submitted, "
            f"{s['arrived_pct']:.2f} % of the GPUs requested, {s['pods_unplaced']} refused",
            f"  GPU allocation   {_pct(s['gpu_alloc_at_100'])} at 100 % arrived GPU demand, {_pct(s['gpu_alloc_at_end'])} at {end} %",
            f"  fragmentation    {_pct(s['frag_amount_at_100'])} of the GPUs at 100 %, {_pct(s['frag_amount_at_end'])} at {end} % "
            f"({_pct(s['frag_ratio_at_end'])} of the free GPUs)",
        ]
    else:
        lines += [
            f"  experiment       lifetime replay: {s['pods_submitted']} of {s['pods_in_workload']} pods arrived, "
            f"{s['pods_scheduled']} scheduled ({s['scheduled_share']:.2%}), {s['pods_unplaced']} left before getting a node, "
            f"{s['pods_waiting']} waiting at the end (at most {s['max_waiting']})",
            f"  waits            {s['waited_share']:.2%} of the scheduled pods waited; mean {s['wait_mean']:.1f} s, p99 {s['wait_p99']:.1f} s",
            f"  allocation       GPU {s['gpu_allocated_mean']:.2%} on average over the samples, {s['gpu_allocated_max']:.2%} at most; "
            f"fragmentation {s['frag_ratio_mean']:.2%} of the free GPUs on average",
        ]
    return "\n".join(lines)


def _parse_grid(items: list[str]) -> dict[str, list]:
    """``["autoscaler.MAX_WORKERS=5,10"]`` -> ``{"autoscaler.MAX_WORKERS": [5, 10]}`` (values read as YAML scalars)."""
    grid: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise ParamError(item, "expected section.NAME=V1,V2,... (e.g. autoscaler.MAX_WORKERS=5,10,20)")
        name, raw = (part.strip() for part in item.split("=", 1))
        if name in grid:
            raise ParamError(name, "given twice; allowed: one --grid per parameter, values separated by commas")
        grid[name] = [yaml.safe_load(v) for v in raw.split(",") if v.strip()]
    return grid


def _parse_seeds(raw: str) -> list:
    return [yaml.safe_load(v) for v in raw.split(",") if v.strip()]


def _sweep(args: argparse.Namespace) -> int:
    """The ``sweep`` subcommand: validate everything, then run on a LocalCluster (or --scheduler)."""
    from engine.runs.sweep import plan_sweep, run_plan, sweep_to_parquet  # dask is imported only for sweeps

    try:
        if args.workers is not None and args.workers < 0:
            raise ParamError("--workers", f"{args.workers} is not allowed; allowed: >= 0 (0 runs in this process)")
        plan = plan_sweep(load_scenario(args.scenario), _parse_grid(args.grid), _parse_seeds(args.seeds), until=args.until)
    except (ScenarioError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"sweep of {plan.scenario_name}: {len(plan.combinations)} settings x {len(plan.seeds)} seeds = {len(plan)} runs", flush=True)
    if args.scheduler is None and args.workers == 0:
        df = run_plan(plan)
    else:
        from distributed import Client, LocalCluster

        if args.scheduler is not None:
            with Client(args.scheduler) as client:
                df = run_plan(plan, client)
        else:
            n = args.workers or min(4, os.cpu_count() or 1)
            with (
                LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
                Client(cluster) as client,
            ):
                df = run_plan(plan, client)
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_rows", 500):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.out is not None:
        sweep_to_parquet(df, args.out)
        print(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine", description="Run scalelab scenarios headless.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a scenario and write its DataFrames as Parquet")
    run.add_argument("scenario", help="a YAML file, or the name of one in data/scenarios/")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter, e.g. autoscaler.MAX_WORKERS=5")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--until", type=float, default=None, help="simulated seconds (default: run.duration)")
    run.add_argument("--out", type=Path, default=None, help="directory for samples/events/decisions Parquet, summary and recording")
    rep = sub.add_parser("replay", help="replay a recording and check it reproduces the recorded samples")
    rep.add_argument("recording", type=Path)
    rep.add_argument("--out", type=Path, default=None)
    swp = sub.add_parser("sweep", help="run a parameter grid x seeds on Dask and print (or write) one row per run")
    swp.add_argument("scenario", help="a YAML file, or the name of one in data/scenarios/")
    swp.add_argument(
        "--grid", action="append", default=[], metavar="NAME=V1,V2", help="values of one parameter, e.g. autoscaler.MAX_WORKERS=5,10,20"
    )
    swp.add_argument("--seeds", default="1", help="comma-separated seeds (default: 1)")
    swp.add_argument("--until", type=float, default=None, help="simulated seconds per run (default: run.duration)")
    swp.add_argument(
        "--workers", type=int, default=None, help="worker processes of the LocalCluster (default: up to 4; 0 runs in this process)"
    )
    swp.add_argument("--scheduler", default=None, metavar="ADDRESS", help="address of a running Dask scheduler (no LocalCluster)")
    swp.add_argument("--out", type=Path, default=None, help="write the table as Parquet")
    args = parser.parse_args(argv)
    if args.cmd == "sweep":
        return _sweep(args)
    try:
        if args.cmd == "run":
            scenario = load_scenario(args.scenario)
            overrides = _parse_set(args.set)
            # overrides are part of the scenario (time 0), not live changes
            for key, value in overrides.items():
                section, _, name = key.partition(".")
                if not name:
                    raise ParamError(key, "use section.NAME, e.g. autoscaler.MAX_WORKERS")
                scenario.values.setdefault(section, {})[name] = value
            scenario = Scenario.from_dict(scenario.to_dict(), origin=f"{args.scenario} with --set", source=scenario.source)
            sim = Simulation(scenario, seed=args.seed)
            sim.advance(args.until if args.until is not None else sim.sections["run"].duration)
        else:
            try:
                data = json.loads(args.recording.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise ScenarioError(f"{args.recording}: not a readable JSON recording ({e})") from None
            sim = Simulation.replay(check_recording(data))
            print(f"replay of {args.recording} reproduces the recorded samples exactly")
    except (ScenarioError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(sim.summary()))
    if args.out is not None:
        _write_outputs(sim, args.out)
        print(f"  wrote {args.out}/{'.parquet, '.join(_tables_written(sim))}.parquet, summary.json, recording.json")
    return 0
