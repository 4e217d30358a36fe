"""The keep-alive trade-off of "Serverless in the Wild" (Shahrad et al., USENIX ATC 2020) on Azure Functions 2019 apps.

Replays every application of an Azure Functions 2019 sample (the three files, columns read by header in any order)
at the application level, minute by minute (``engine.faas.keepalive_replay``), under fixed keep-alive windows of
10, 20, 30, 60, 90 and 120 minutes and the hybrid histogram policy with 1, 2, 3 and 4 hour ranges
(``engine.autoscaling.keepalive``). Per policy it prints the 75th percentile of the per-application cold-start
percentage and the wasted memory time (memory held by idle loaded applications) normalised to fixed-10, writes
the trade-off plot, and ends with ``RESULT {json}``.

    .venv/bin/python benchmarks/keepalive_azure.py                         # the shipped sample (data/traces/azure-functions-2019)
    .venv/bin/python benchmarks/keepalive_azure.py --invocations I.csv --durations D.csv --memory M.csv --plot out/ka.html

A bad file is one line naming it (and the line and column) on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.autoscaling.keepalive import FixedKeepAliveParams, HybridHistogramParams  # noqa: E402
from engine.core.params import ParamError  # noqa: E402
from engine.faas.keepalive_replay import read_applications, replay, tradeoff  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "traces" / "azure-functions-2019"
FIXED_MINUTES = (10, 20, 30, 60, 90, 120)
HYBRID_HOURS = (1, 2, 3, 4)
BASELINE = "fixed-10"


def policies() -> dict[str, tuple[str, object]]:
    """The compared policies, by name: (keep-alive kind, its param section)."""
    out: dict[str, tuple[str, object]] = {f"fixed-{m}": ("fixed", FixedKeepAliveParams(keep_alive_minutes=m)) for m in FIXED_MINUTES}
    out.update({f"hybrid-{h}h": ("hybrid", HybridHistogramParams(range_minutes=60 * h)) for h in HYBRID_HOURS})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--invocations", help="invocations CSV (HashOwner, HashApp, HashFunction, Trigger, minutes 1..N)")
    ap.add_argument("--durations", help="durations CSV (HashFunction, percentile_Average_*)")
    ap.add_argument("--memory", help="memory CSV (HashApp, AverageAllocatedMb)")
    ap.add_argument("--plot", default="out/keepalive_azure.html", help="the trade-off plot (.html; default %(default)s)")
    args = ap.parse_args(argv)
    given = [args.invocations, args.durations, args.memory]
    if any(given) and not all(given):
        print("error: --invocations, --durations, --memory: give all three files or none (none: the shipped sample)", file=sys.stderr)
        return 2
    files = given if all(given) else [str(SAMPLE / f) for f in ("invocations.csv", "durations.csv", "memory.csv")]
    files = [str(Path(f).resolve()) for f in files]
    if not args.plot.endswith(".html"):
        print(f"error: --plot {args.plot}: allowed: a path ending in .html", file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        sample = read_applications(*files)
    except ParamError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    cpu_read = time.process_time() - cpu0
    apps = sample.apps
    if not apps:
        print(f"error: {files[2]}: no application of {files[0]} has a memory row; allowed: a memory file for the sample", file=sys.stderr)
        return 2
    per_policy = {name: replay(apps, kind, section) for name, (kind, section) in policies().items()}  # type: ignore[arg-type]
    table = tradeoff(per_policy, BASELINE)
    cpu = time.process_time() - cpu0
    invocations = sum(a.invocations for a in apps)
    print(f"keep-alive trade-off: {len(apps)} applications, {invocations:,} invocations, {apps[0].horizon} minutes")
    print(f"  files: {files[0]}, {Path(files[1]).name}, {Path(files[2]).name}")
    if sample.no_memory or sample.no_durations:
        print(
            f"  left out: {len(sample.no_memory)} applications without a memory row; {sample.no_durations} functions have no durations row"
        )
    print(f"  load average {load:.2f}; CPU {cpu:.2f} s ({cpu_read:.2f} s reading), wall {time.perf_counter() - wall0:.2f} s")
    print(f"  {'policy':<11} {'p75 cold %':>11} {'wasted/fixed-10':>16} {'cold starts':>12} {'wasted MB-min':>14}")
    for row in table.itertuples():
        print(
            f"  {row.policy:<11} {row.p75_cold_start_pct:>11.4f} {row.wasted_memory_norm:>16.3f} {row.cold_starts:>12d}"
            f" {row.wasted_mb_minutes:>14,.0f}"
        )
    import holoviews as hv

    from dashboard.keepalive_plots import tradeoff_plot  # the plot only: HoloViews is imported when it is drawn

    out = Path(args.plot)
    out.parent.mkdir(parents=True, exist_ok=True)
    hv.save(tradeoff_plot(table), out, backend="bokeh", resources="inline")
    print(f"  wrote {out}")
    result = {
        "policies": {
            r.policy: {"p75_cold_start_pct": r.p75_cold_start_pct, "wasted_memory_norm": r.wasted_memory_norm, "cold_starts": r.cold_starts}
            for r in table.itertuples()
        },
        "applications": len(apps),
        "applications_without_memory": len(sample.no_memory),
        "invocations": invocations,
        "cpu_seconds": round(cpu, 3),
        "load_average": round(load, 2),
        "plot": str(out),
    }
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
