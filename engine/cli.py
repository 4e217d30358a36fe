"""Command line: ``python -m engine run SCENARIO [--set NAME=VALUE ...] [--seed N] [--out DIR]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from .params import ParamError
from .scenario import ScenarioError, load_scenario
from .simulation import Simulation, check_recording


def _parse_set(items: list[str]) -> dict:
    changes = {}
    for item in items:
        if "=" not in item:
            raise ParamError(item, "expected NAME=VALUE (e.g. autoscaler.MAX_WORKERS=5)")
        name, raw = item.split("=", 1)
        changes[name.strip()] = yaml.safe_load(raw)
    return changes


def _write_outputs(sim: Simulation, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    sim.samples().to_parquet(out / "samples.parquet", index=False)
    sim.events().to_parquet(out / "events.parquet", index=False)
    sim.decisions().to_parquet(out / "decisions.parquet", index=False)
    jobs = sim.jobs_frame()
    if jobs is not None:
        jobs.to_parquet(out / "jobs.parquet", index=False)
    (out / "summary.json").write_text(json.dumps(sim.summary(), indent=2, default=float))
    (out / "recording.json").write_text(json.dumps(sim.recording(), indent=1))


def format_summary(summary: dict) -> str:
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
    args = parser.parse_args(argv)
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
            from .scenario import Scenario

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
        print(f"  wrote {args.out}/samples.parquet, events.parquet, decisions.parquet, summary.json, recording.json")
    return 0
