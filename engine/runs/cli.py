"""Command line: ``python -m engine run SCENARIO [--set NAME=VALUE ...] [--seed N] [--out DIR]``.

Also ``python -m engine sweep SCENARIO --grid section.NAME=V1,V2 ... --seeds 1,2,3 [--workers N]
[--scheduler ADDRESS] [--out FILE.parquet]``: a parameter sweep on Dask (see :mod:`engine.sweep`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata
from pathlib import Path

import pandas as pd

from engine.core.clock import check_horizon
from engine.core.inputs import InputError, load_yaml
from engine.core.params import ParamError
from engine.runs.outputs import check_out, check_out_file, write_out
from engine.sim.scenario import Scenario, load_scenario
from engine.sim.sessions import RecordingMismatch, load_recording
from engine.sim.simulation import Simulation

#: The files ``run --out`` writes (``jobs.parquet`` too with run.record_jobs; the run's other tables as Parquet).
OUTPUT_FILES = ("samples.parquet", "events.parquet", "decisions.parquet", "summary.json", "session.scalelab")


def _value(raw: str, origin: str):
    """A --set/--grid value: YAML, strictly (``[5`` is one clear line, not a traceback)."""
    return load_yaml(raw.encode(), origin)


def _parse_set(items: list[str]) -> dict:
    changes = {}
    for item in items:
        if "=" not in item:
            raise ParamError(f"--set {item}", "expected NAME=VALUE (e.g. autoscaler.MAX_WORKERS=5)")
        name, raw = item.split("=", 1)
        changes[name.strip()] = _value(raw, f"--set {name.strip()}")
    return changes


def _table_writer(sim: Simulation, table: str):
    frame = sim.frame(table)
    return lambda path: frame.to_parquet(path, index=False)


def _write_outputs(sim: Simulation, out: Path) -> list[str]:
    """Every recorded table as Parquet, the summary and the recording, swapped into ``out`` as one folder."""
    writers = {f"{table}.parquet": _table_writer(sim, table) for table in sim.tables}
    summary = json.dumps(sim.summary(), indent=2, default=float)
    writers["summary.json"] = lambda path: path.write_text(summary)
    writers["session.scalelab"] = sim.record
    return write_out(out, writers)


def _budget(sim: Simulation, until: float, allow_long: bool, what: str) -> None:
    """Refuse (or, with --allow-long, announce) a run whose estimated cost is beyond the limits; warn when it is long.

    ``what`` names where the horizon came from (``--until 86400``, or the scenario's run.duration)."""
    estimate = sim.estimate(until)
    if estimate.too_long and not allow_long:
        raise InputError(f"{what}: this run would take {estimate.describe()}; allowed: a shorter run, or --allow-long")
    if estimate.long or estimate.too_long:
        print(f"warning: this run will take {estimate.describe()}", file=sys.stderr, flush=True)


def _replay(args: argparse.Namespace) -> tuple[Simulation, int]:
    """``replay REC``: re-simulate a session file (or a version-1 JSON recording) and check every stored table."""
    rec = load_recording(args.recording)
    probe = Simulation(rec.scenario, seed=rec.seed)
    _budget(probe, rec.until, args.allow_long, f"{args.recording}: until {rec.until:g}")
    try:
        sim = rec.replay(verify=not args.no_verify)
    except RecordingMismatch as e:
        print(f"differs: {e}", file=sys.stderr)
        return e.simulation, 1
    what = f"the recorded tables ({', '.join(rec.tables)})" if rec.tables else "the recorded samples"
    print(f"replay of {args.recording} reproduces {what} exactly" if not args.no_verify else f"replayed {args.recording} (not verified)")
    return sim, 0


def _export(args: argparse.Namespace) -> int:
    """``export REC --html OUT``: a self-contained page, made by the exporter the installed dashboard provides.

    The engine imports no UI: exporters are found through the ``scalelab.exporters`` entry points (pyproject.toml)."""
    try:
        rec = load_recording(args.recording)
        found = [e for e in metadata.entry_points(group="scalelab.exporters") if e.name == "html"]
        if not found:
            raise InputError(
                "export: no HTML exporter is installed (entry point scalelab.exporters:html); allowed: install scalelab with its dashboard"
            )
        check_out_file(args.html, "--html")
        size = found[0].load()(rec, args.html)
    except (InputError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.html} ({size / 2**20:.2f} MiB, self-contained: opens offline)")
    return 0


def format_summary(summary: dict) -> str:
    return "\n".join(
        [
            f"scenario {summary['scenario']} (seed {summary['seed']}), {summary['simulated_seconds']:.0f} simulated s",
            f"  jobs completed   {summary['jobs_completed']} of {summary['jobs_arrived']} arrived"
            f" ({summary['jobs_in_service']} in service, {summary['queue_at_end']} queued at the end)",
            *(
                [f"  placement        {summary['unplaceable']}: {summary['pods_pending']} worker pod(s) pending"]
                if summary.get("unplaceable")
                else []
            ),
            f"  wait p50/p95/p99 {summary['wait_p50']:.2f} / {summary['wait_p95']:.2f} / {summary['wait_p99']:.2f} s",
            f"  VM-hours         {summary['vm_hours']:.2f} as the controller accounts them, {summary['vm_hours_cloud']:.2f} as the cloud bills them",
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


def _parse_grid(items: list[str]) -> dict[str, list]:
    """``["autoscaler.MAX_WORKERS=5,10"]`` -> ``{"autoscaler.MAX_WORKERS": [5, 10]}`` (values read as YAML scalars)."""
    grid: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise ParamError(item, "expected section.NAME=V1,V2,... (e.g. autoscaler.MAX_WORKERS=5,10,20)")
        name, raw = (part.strip() for part in item.split("=", 1))
        if name in grid:
            raise ParamError(name, "given twice; allowed: one --grid per parameter, values separated by commas")
        grid[name] = [_value(v, f"--grid {name}") for v in raw.split(",") if v.strip()]
    return grid


def _parse_seeds(raw: str) -> list:
    return [_value(v, "--seeds") for v in raw.split(",") if v.strip()]


def _sweep(args: argparse.Namespace) -> int:
    """The ``sweep`` subcommand: validate everything, then run on a LocalCluster (or --scheduler)."""
    from engine.runs.sweep import plan_sweep, run_plan, sweep_to_parquet  # dask is imported only for sweeps

    try:
        if args.workers is not None and args.workers < 0:
            raise ParamError("--workers", f"{args.workers} is not allowed; allowed: >= 0 (0 runs in this process)")
        plan = plan_sweep(load_scenario(args.scenario), _parse_grid(args.grid), _parse_seeds(args.seeds), until=args.until)
    except (InputError, ParamError) as e:
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
    run = sub.add_parser("run", help="run a scenario and write its tables as Parquet")
    run.add_argument("scenario", help="a YAML file, or the name of one in data/scenarios/")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter, e.g. autoscaler.MAX_WORKERS=5")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--until", type=float, default=None, help="simulated seconds (default: run.duration)")
    run.add_argument("--out", type=Path, default=None, help="directory for the tables as Parquet, summary.json and recording.json")
    run.add_argument("--allow-long", action="store_true", help="run even when the estimated cost is beyond the limits")
    rep = sub.add_parser("replay", help="replay a session file (or a JSON recording) and check it reproduces every recorded table")
    rep.add_argument("recording", type=Path)
    rep.add_argument("--verify", action="store_true", help="check every stored table (the default); exit 1 naming the first difference")
    rep.add_argument("--no-verify", action="store_true", help="replay without checking")
    rep.add_argument("--out", type=Path, default=None)
    rep.add_argument("--allow-long", action="store_true", help="replay even when the estimated cost is beyond the limits")
    exp = sub.add_parser("export", help="export a session file as one self-contained HTML page (plots, timeline, KPIs, events)")
    exp.add_argument("recording", type=Path)
    exp.add_argument("--html", type=Path, required=True, metavar="OUT.html")
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
    if args.cmd == "export":
        return _export(args)
    status = 0
    try:
        if args.out is not None:
            check_out(args.out, OUTPUT_FILES)  # before the run, not after it
        if args.cmd == "run":
            scenario = load_scenario(args.scenario)
            overrides = _parse_set(args.set)
            # overrides are part of the scenario (time 0), not live changes
            for key, value in overrides.items():
                section, _, name = key.partition(".")
                if not name:
                    raise ParamError(f"--set {key}", "use section.NAME, e.g. autoscaler.MAX_WORKERS")
                scenario.values.setdefault(section, {})[name] = value
            scenario = Scenario.from_dict(scenario.to_dict(), origin=f"{args.scenario} with --set", source=scenario.source)
            sim = Simulation(scenario, seed=args.seed)
            until = check_horizon(args.until if args.until is not None else sim.sections["run"].duration, "--until")
            if until <= 0:
                raise ParamError("--until", f"{args.until!r} is not allowed; allowed: simulated seconds > 0")
            what = f"--until {args.until:g}" if args.until is not None else f"{args.scenario}: run.duration {until:g}"
            _budget(sim, until, args.allow_long, what)
            sim.advance(until)
        else:
            sim, status = _replay(args)
    except (InputError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(sim.summary()))
    if args.out is not None:
        written = _write_outputs(sim, args.out)
        print(f"  wrote {args.out}/: {', '.join(written)}")
    return status
