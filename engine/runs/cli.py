"""Command line: ``python -m engine run SCENARIO [--set NAME=VALUE ...] [--seed N] [--out DIR]``.

Also ``python -m engine sweep SWEEP_FILE [--out DIR] [--workers N | --scheduler ADDRESS]`` (a sweep file of
``data/sweeps/``, see :mod:`engine.runs.spec`) or ``python -m engine sweep SCENARIO --grid section.NAME=V1,V2 ...
--seeds 1,2,3``: a resumable parameter sweep on Dask (see :mod:`engine.runs.sweep`). And ``python -m engine whatif
METRICS.csv --policy hpa`` (:mod:`engine.runs.whatif`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine.core import budget
from engine.core.clock import check_horizon
from engine.core.inputs import InputError, load_yaml, size_cap
from engine.core.params import ParamError
from engine.runs import whatif
from engine.runs.outputs import check_out, check_out_file, write_out
from engine.sim.scenario import Scenario, load_scenario
from engine.sim.sessions import RecordingMismatch, load_recording
from engine.sim.simulation import Simulation

if TYPE_CHECKING:
    import pandas as pd

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
        raise InputError(
            f"{what}: this run would take {estimate.describe()}, beyond the caps ({budget.REFUSE_SECONDS / 60:g} min of wall time, "
            f"{size_cap(budget.REFUSE_BYTES)} of memory); allowed: a shorter run, or --allow-long"
        )
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
        from importlib import metadata

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


def _fmt(value: float, spec: str = ".3f") -> str:
    return "-" if value != value else format(value, spec)


def format_function_summary(summary: dict) -> str:
    """The functions world's summary: totals, then one line per function (response percentiles, cold starts, replicas, statuses)."""
    lines = [
        f"scenario {summary['scenario']} (seed {summary['seed']}), {summary['simulated_seconds']:.0f} simulated s, world functions",
        f"  requests {summary['requests_generated']} generated: {summary['requests_completed']} completed, "
        f"{summary['requests_in_flight']} in flight, {summary['requests_queued']} queued, {summary['requests_rejected']} rejected"
        f"   cold starts {summary['cold_starts']}   replica-hours {summary['replica_hours']:.2f}",
        f"  {'function':<22} {'scaler':<18} {'p50 s':>8} {'p95 s':>8} {'p99 s':>8} {'cold':>6} {'replicas now/max/created':>24}"
        f" {'completed':>10} {'in flight':>9} {'queued':>7} {'rejected':>8}",
    ]
    for name, f in summary["functions"].items():
        replicas = f"{f['replicas_now']}/{f['replicas_max']}/{f['replicas_created']}"
        lines.append(
            f"  {name[:22]:<22} {f['scaler']:<18} {_fmt(f['response_p50']):>8} {_fmt(f['response_p95']):>8} {_fmt(f['response_p99']):>8}"
            f" {f['cold_starts']:>6} {replicas:>24} {f['completed']:>10} {f['in_flight']:>9} {f['queued']:>7} {f['rejected']:>8}"
        )
    return "\n".join(lines)


def format_summary(summary: dict) -> str:
    """The run's headline figures as printed by ``run`` and ``replay`` (per world, then the node autoscaler's if any)."""
    text = _format_world_summary(summary)
    if "node_groups" not in summary:
        return text
    from engine.nodescaling.controller import format_node_summary  # the node autoscaler loads with its worlds

    return f"{text}\n{format_node_summary(summary)}"


def _format_world_summary(summary: dict) -> str:
    if summary.get("world") == "functions":
        return format_function_summary(summary)
    if summary.get("world") == "pod":
        return format_pod_summary(summary)
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
            f"  VM-hours         {summary['vm_hours']:.2f} from the cloud's VM states ({summary['vm_hours_logged']:.2f} as the original controller logs them)",
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
        grid[name] = [_value(v, f"--grid {name}") for v in raw.split(",") if v.strip()]
    return grid


def _parse_list(raw: str, origin: str) -> list:
    return [_value(v, origin) for v in raw.split(",") if v.strip()]


def _sweep_spec(args: argparse.Namespace):
    """The sweep a command line names: a sweep file, or a scenario with ``--grid``/``--seeds``/``--until``/``--kpis``."""
    from engine.runs.spec import SweepError, load_sweep, sweep_path
    from engine.runs.sweep import grid_spec

    path = None if args.grid else sweep_path(args.sweep)
    if path is not None:
        for flag, value in (("--seeds", args.seeds), ("--until", args.until), ("--kpis", args.kpis)):
            if value is not None:
                raise SweepError(f"{flag}: only with a scenario and --grid; a sweep file ({path}) names its own")
        return load_sweep(path)
    kpis = _parse_list(args.kpis, "--kpis") if args.kpis is not None else None
    return grid_spec(
        load_scenario(args.sweep), _parse_grid(args.grid), _parse_list(args.seeds or "1", "--seeds"), until=args.until, kpis=kpis
    )


class _Bar:
    """The CLI's progress: a tqdm bar on stderr with runs done, failed, running and tqdm's ETA."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.shown = 0

    def __call__(self, progress, row) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(
                total=progress.total, initial=progress.skipped, unit="run", file=sys.stderr, dynamic_ncols=True, mininterval=0.2
            )
            self.shown = progress.skipped
        now = progress.skipped + progress.done + progress.failed
        self.bar.set_postfix_str(f"{progress.done} done, {progress.failed} failed, {progress.running} running", refresh=False)
        self.bar.update(now - self.shown)
        self.shown = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _means_table(df: pd.DataFrame) -> str:
    from engine.runs.analysis import kpi_columns, parameter_columns, setting_means

    means = setting_means(df)
    shown = [*parameter_columns(df), "runs", *[c for c in kpi_columns(df) if c in means.columns]]
    limit = 60
    text = means[shown].head(limit).to_string(index=False, float_format=lambda x: f"{x:.2f}")
    return text + (f"\n... {len(means) - limit} more points in the dataset" if len(means) > limit else "")


def _say_interrupted(runner, sweep_plan, out: Path | None) -> None:
    p = runner.progress
    if runner.dataset is not None:  # count what is on disk: a run may have been written just as the signal came
        kept = len(runner.dataset.done_keys() & {t.key for t in sweep_plan.tasks})
        print(f"interrupted: {kept} of {p.total} runs are kept in {out}; run the same command again to finish the rest", file=sys.stderr)
    else:
        print(f"interrupted: {p.done} of {p.total} runs were done and not kept (no --out)", file=sys.stderr)


def _sweep(args: argparse.Namespace) -> int:
    """The ``sweep`` subcommand: validate everything (file, every point, the output directory), then run and keep each run."""
    import logging

    import pandas as pd

    from engine.runs.planning import plan_sweep
    from engine.runs.sweep import SweepRun  # dask is imported only for sweeps

    try:
        if args.workers is not None and args.workers < 0:
            raise ParamError("--workers", f"{args.workers} is not allowed; allowed: >= 0 (0 runs in this process)")
        if args.workers is not None and args.scheduler is not None:
            raise ParamError("--workers", "is for the LocalCluster; allowed: --workers or --scheduler, not both")
        spec = _sweep_spec(args)
        sweep_plan = plan_sweep(spec)
        out = args.out
        if out is None and not args.grid and args.sweep is not None and spec.source is not None:
            out = Path("out") / "sweeps" / spec.name
        bar = _Bar(enabled=not args.no_progress)
        runner = SweepRun(sweep_plan, out, on_progress=bar)
        to_run = runner.to_run()
    except (InputError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n_points = len(sweep_plan.points)
    print(
        f"sweep {spec.name} of {spec.scenario.name}: {spec.design} design, {n_points} points x {len(spec.seeds)} seeds = "
        f"{len(sweep_plan)} runs" + (f"; {len(sweep_plan) - len(to_run)} kept in {out}, {len(to_run)} to run" if out is not None else ""),
        flush=True,
    )
    logging.getLogger("distributed").setLevel(logging.ERROR)  # a worker lost mid-sweep is retried; say so once at the end

    def stop_on_ctrl_c(signum: int, frame: object) -> None:
        # the first Ctrl-C stops the sweep cleanly (queued runs cancelled, finished ones kept); a second one quits at once
        runner.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, stop_on_ctrl_c)
    try:
        try:
            if not to_run or (args.scheduler is None and args.workers == 0):  # nothing to submit: no cluster
                df = runner.run()
            else:
                from distributed import Client, LocalCluster

                if args.scheduler is not None:
                    try:
                        client = Client(args.scheduler, timeout="10s")
                    except (OSError, TimeoutError) as e:
                        print(
                            f"error: --scheduler {args.scheduler}: cannot connect ({e}); allowed: the address `dask scheduler` prints",
                            file=sys.stderr,
                        )
                        return 2
                    with client:
                        runner.client = client
                        df = runner.run()
                else:
                    n = args.workers or min(4, os.cpu_count() or 1)
                    with (
                        LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
                        Client(cluster) as client,
                    ):
                        runner.client = client
                        df = runner.run()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except KeyboardInterrupt:  # a second Ctrl-C, or one while the cluster starts
        bar.close()
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        _say_interrupted(runner, sweep_plan, out)
        return 130
    bar.close()
    p = runner.progress
    if p.interrupted:
        _say_interrupted(runner, sweep_plan, out)
        return 130
    print(f"{p.done} runs done, {p.skipped} kept from before, {p.failed} failed, in {p.elapsed:.1f} s")
    if len(df):
        with pd.option_context("display.width", 200, "display.max_columns", None):
            print(_means_table(df))
    if out is not None:
        print(f"dataset: {out} ({len(df)} runs of this sweep)")
    if runner.errors:
        first = next(iter(runner.errors.values())).strip().splitlines()[-1]
        print(f"error: {len(runner.errors)} runs failed (rerun to retry them); the first: {first}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m engine`` (the docs' reference is generated from it)."""
    parser = argparse.ArgumentParser(prog="python -m engine", description="Run scalelab scenarios headless.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a scenario and write its tables as Parquet")
    run.add_argument("scenario", help="a YAML file, or the name of one in data/scenarios/")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter, e.g. autoscaler.MAX_WORKERS=5")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--until", type=float, default=None, help="simulated seconds (default: run.duration)")
    run.add_argument("--out", type=Path, default=None, help="directory for the tables as Parquet, summary.json and session.scalelab")
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
    swp = sub.add_parser(
        "sweep",
        help="run a sweep file (data/sweeps/) or a scenario's --grid on Dask, keeping each run as it completes",
        description="A sweep file (a path, or a name in data/sweeps/) or a scenario with --grid. Runs kept in the output "
        "directory are not run again: rerun the same command after an interruption.",
    )
    swp.add_argument("sweep", help="a sweep file or its name in data/sweeps/; or a scenario (file or name) with --grid")
    swp.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="with a scenario: values of one parameter, e.g. autoscaler.MAX_WORKERS=5,10,20",
    )
    swp.add_argument("--seeds", default=None, help="with a scenario: comma-separated seeds (default: 1)")
    swp.add_argument("--until", type=float, default=None, help="with a scenario: simulated seconds per run (default: run.duration)")
    swp.add_argument("--kpis", default=None, help="with a scenario: comma-separated summary figures (default: every numeric one)")
    swp.add_argument(
        "--workers", type=int, default=None, help="worker processes of the LocalCluster (default: up to 4; 0 runs in this process)"
    )
    swp.add_argument(
        "--scheduler", default=None, metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://HOST:8786 (no LocalCluster)"
    )
    swp.add_argument("--out", type=Path, default=None, help="the dataset directory (default for a sweep file: out/sweeps/NAME)")
    swp.add_argument("--no-progress", action="store_true", help="no progress bar")
    whatif.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "whatif":
        return whatif.run(args)
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
            origin = f"{args.scenario} with --set" if overrides else args.scenario
            scenario = Scenario.from_dict(scenario.to_dict(), origin=origin, source=scenario.source)
            sim = Simulation(scenario, seed=args.seed)
            until = check_horizon(args.until if args.until is not None else sim.sections["run"].duration, "--until")
            if until <= 0:
                raise ParamError("--until", f"{args.until!r} is not allowed; allowed: simulated seconds > 0")
            what = f"--until {args.until:g}" if args.until is not None else f"{args.scenario}: run.duration {until:g}"
            _budget(sim, until, args.allow_long, what)
            for note in scenario.notes:  # defaults the file leaves implicit, named once the run is sure to start
                print(f"note: {note}", file=sys.stderr)
            sim.advance(until)
        else:
            sim, status = _replay(args)
    except (InputError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(sim.summary()))
    if args.out is not None:
        try:
            written = _write_outputs(sim, args.out)
        except OSError as e:  # checked up front; the disk can still fill or change meanwhile: nothing is left half-written
            print(
                f"error: --out {args.out}: could not be written ({e.strerror or e}); allowed: a directory you can write to", file=sys.stderr
            )
            return 2
        print(f"  wrote {args.out}/: {', '.join(written)}")
    return status
