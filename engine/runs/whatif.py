"""``python -m engine whatif METRICS.csv --policy hpa|kpa|keda|queue_drain``: what the autoscaler would have done.

A recorded history (one row per observation: ``time`` in s, ``replicas``, and the metric the policy reads, columns
by header in any order) is fed row by row to the project's policy object (``engine.autoscaling``: the same
``decide`` the simulation calls). Open loop: each row's observation is the recorded state, so the recommendation
is what the policy would have asked for at that moment; its own memory (stabilisation windows, panic mode,
cooldowns) runs over its recommendations as if they had been applied, but the recorded load is not re-shaped by
them. See ``docs/how-to/whatif.md`` for the columns each policy reads.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import param

from engine.autoscaling.base import ScalingObservation, ScalingPolicy
from engine.autoscaling.hpa import HPAParams
from engine.autoscaling.keda import KEDAParams
from engine.autoscaling.kpa import KPAParams
from engine.autoscaling.registry import POLICIES
from engine.autoscaling.seed_conf import AutoscalerParams
from engine.core.csvfile import FileError, numeric_column, read_csv
from engine.core.inputs import InputError, load_yaml
from engine.core.params import ParamError, Section, apply_checked
from engine.runs.outputs import check_out_file

FIELD = "whatif"
#: The output table's columns.
COLUMNS = ("time", "replicas", "metric", "recommended", "action", "change", "rule")


class WhatIfParams(Section):
    """What a history may not say: threads per replica, and the request target of an HPA on request rate."""

    key = "whatif"

    threads_per_replica = param.Integer(
        1,
        bounds=(1, 4096),
        doc="Threads (request concurrency) of one replica, where the file has no threads column: queue_drain's drain "
        "time, and KPA's target when kpa.container_concurrency is 0.",
    )
    target_requests_per_replica = param.Number(
        10.0, bounds=(0.001, 1e6), step=1.0, doc="hpa on a request_rate column: requests per second per replica (AverageValue)."
    )


@dataclass(frozen=True)
class WhatIfEntry:
    """One row of the table of what each policy reads: one of ``metrics`` (first found wins) and the ``also`` columns."""

    metrics: tuple[str, ...]
    also: tuple[str, ...]
    doc: str


WHATIF_POLICIES: dict[str, WhatIfEntry] = {
    "hpa": WhatIfEntry(
        ("cpu_utilisation", "request_rate"), (), "cpu_utilisation (% of the request, mean of the ready replicas) or request_rate (req/s)"
    ),
    "kpa": WhatIfEntry(("concurrency",), (), "concurrency (requests in service plus waiting, all replicas)"),
    "keda": WhatIfEntry(("queue_length",), (), "queue_length (waiting requests or jobs)"),
    "queue_drain": WhatIfEntry(("queue_length",), ("avg_time",), "queue_length and avg_time (s per job); threads optional"),
}
#: Columns read when present: replicas not yet ready (counted in replicas), and the serving threads in total.
OPTIONAL = ("pending", "threads")


def _sections() -> dict[str, Section]:
    return {s.key: s() for s in (HPAParams, KPAParams, KEDAParams, AutoscalerParams, WhatIfParams)}


def _error(path: Path, where: str, message: str) -> FileError:
    return FileError(path, where, message, FIELD)


def read_history(path: Path, policy: str) -> tuple[pd.DataFrame, str]:
    """The history's columns the policy reads, checked (one-line :class:`FileError`), and the name of its metric column."""
    entry = WHATIF_POLICIES[policy]
    df = read_csv(path, FIELD, error=FileError, noun="history")
    metric = next((m for m in entry.metrics if m in df.columns), None)
    for column in ("time", "replicas", *entry.also):
        if column not in df.columns:
            raise _error(path, f"column {column!r}", f"missing; {policy} reads time, replicas and {entry.doc}")
    if metric is None:
        raise _error(path, f"column {entry.metrics[0]!r}", f"missing; {policy} reads time, replicas and {entry.doc}")
    out = pd.DataFrame(
        {
            "time": numeric_column(df, "time", path, "a time in s", FIELD, minimum=None, error=FileError),
            "replicas": numeric_column(df, "replicas", path, "a replica count", FIELD, integer=True, error=FileError),
            "metric": numeric_column(df, metric, path, "a measurement", FIELD, empty_ok=True, error=FileError),
        }
    )
    for column in (*entry.also, *OPTIONAL):
        if column in df.columns:
            integer = column in OPTIONAL
            out[column] = numeric_column(df, column, path, "a number", FIELD, integer=integer, empty_ok=not integer, error=FileError)
    steps = np.diff(out["time"].to_numpy())
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0)) + 1
        raise _error(
            path,
            f"line {i + 2}, column 'time'",
            f"{out['time'].iloc[i]:g} does not follow {out['time'].iloc[i - 1]:g}; allowed: increasing times",
        )
    if "pending" in out and (out["pending"] > out["replicas"]).any():
        i = int(np.argmax(out["pending"] > out["replicas"]))
        raise _error(
            path,
            f"line {i + 2}, column 'pending'",
            f"{out['pending'].iloc[i]} exceeds replicas ({out['replicas'].iloc[i]}); allowed: 0..replicas",
        )
    return out, metric


def _observation(policy: str, metric: str, row: dict, queue: tuple[int, ...], sections: dict[str, Section]) -> ScalingObservation:
    """The policy's observation of one recorded row (see :data:`WHATIF_POLICIES` for the columns)."""
    auto, what = sections["autoscaler"], sections["whatif"]
    pending = int(row.get("pending", 0))
    ready = int(row["replicas"]) - pending
    value = row["metric"]
    avg = float(row.get("avg_time", np.nan))
    measured = value == value and (policy != "queue_drain" or avg == avg)  # NaN: no measurement in this row
    per = row.get("_threads_per_replica", what.threads_per_replica)
    threads = int(row["threads"]) if "threads" in row else int(round(ready * per))
    if policy == "hpa":  # a row without a measurement: every replica counted, none reporting (the HPA does not act)
        load = value / 100.0 if metric == "cpu_utilisation" else value / max(ready, 1) / what.target_requests_per_replica
        active = tuple(range(ready)) if measured else ()
        cpu = (load,) * len(active)
        pending = pending if measured else int(row["replicas"])
    else:
        active = tuple(range(ready))
        cpu = (0.0,) * ready
    return ScalingObservation(
        now=float(row["time"]),
        active=active,
        threads=threads if active else 0,
        cpu=cpu,
        busy=(0.0,) * len(active),
        avg_time=avg if avg == avg else None,
        queue=queue if measured else (),
        pending=pending,
        starting=pending,
        worker_count=int(row["replicas"]),
        max_workers=auto.MAX_WORKERS,
        band_low=auto.MIN_AVG_TIME,
        band_high=auto.MAX_AVG_TIME,
        min_heartbeats=auto.MIN_MEASURE_LOAD_HB,
    )


def build_policy(policy: str, metric: str, sections: dict[str, Section]) -> ScalingPolicy:
    """The project's policy object, from the policy table, over the (changed) sections."""
    live = dict(sections)
    if policy == "hpa" and metric == "request_rate":  # requests per replica over their target, against a 100 % target
        live["hpa"] = HPAParams(**{**sections["hpa"].values(), "target_utilization": 100})
    return POLICIES[policy].build(live)


MODES = ("follow", "open")


def _following(row: dict, current: int, metric: str, sections: dict[str, Section]) -> dict:
    """The row as the policy would have seen it with ``current`` replicas, all ready: the recorded total load kept."""
    ready = int(row["replicas"]) - int(row.get("pending", 0))
    out = dict(row, replicas=current, pending=0)
    if metric == "cpu_utilisation" and row["metric"] == row["metric"]:
        out["metric"] = row["metric"] * ready / current if ready and current else np.nan
    if "threads" in row:
        per = row["threads"] / ready if ready else row["_threads_per_replica"]
        out["threads"] = int(round(per * current))
    return out


def _threads_per_replica(history: pd.DataFrame, sections: dict[str, Section]) -> float:
    """Threads of one replica: the median over rows with ready replicas of a threads column, else whatif.threads_per_replica."""
    if "threads" in history:
        ready = history["replicas"] - history.get("pending", 0)
        ratio = (history["threads"] / ready)[ready > 0]
        if len(ratio):
            return float(ratio.median())
    return float(sections["whatif"].threads_per_replica)


def whatif(
    history: pd.DataFrame, policy: str, metric: str, sections: dict[str, Section] | None = None, mode: str = "follow"
) -> pd.DataFrame:
    """The recommended replicas beside the recorded ones, row by row, with the policy's rule (:data:`COLUMNS`).

    ``follow``: the policy's replica count follows its own recommendations from the first row with a replica (all
    ready at once; before it, rows are taken as recorded); the recorded total load is kept, so cpu utilisation is rescaled to its replicas, while
    concurrency, queue length and request rate are totals taken as recorded. ``open``: every row is the recorded
    state (its replicas and pending ones), the recommendation what the policy would have asked for then.
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}; allowed: {', '.join(MODES)}")
    sections = sections if sections is not None else _sections()
    decider = build_policy(policy, metric, sections)
    keep = sections["autoscaler"].MIN_MEASURE_LOAD_HB if policy == "queue_drain" else 1
    history = history.assign(_threads_per_replica=_threads_per_replica(history, sections))
    rows, queue, previous, following = [], [], None, False
    for row in history.to_dict("records"):
        if row["metric"] == row["metric"]:
            queue = [*queue, int(round(row["metric"]))][-max(keep, 1) :]
        following = following or (mode == "follow" and previous is not None and rows[-1][1] > 0)
        seen = _following(row, previous, metric, sections) if following else row
        verdict = decider.decide(_observation(policy, metric, seen, tuple(queue), sections))
        recommended = int(seen["replicas"]) if verdict.desired is None else int(verdict.desired)
        rule = verdict.reason or verdict.action
        cap = sections["autoscaler"].MAX_WORKERS
        if recommended > cap:  # the controller's cap, as in a run
            recommended, rule = cap, f"{rule} (capped at MAX_WORKERS {cap})"
        changed = previous is not None and recommended != previous
        rows.append((row["time"], int(row["replicas"]), verdict.metric, recommended, verdict.action, changed, rule))
        previous = recommended
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out["metric"] = out["metric"].astype("float64")
    return out


def _summary(path: Path, policy: str, metric: str, mode: str, table: pd.DataFrame, limit: int = 40) -> list[str]:
    times = table["time"].to_numpy()
    dt = np.diff(times, append=times[-1])
    actual_rs, recommended_rs = float((table["replicas"] * dt).sum()), float((table["recommended"] * dt).sum())
    differ = int((table["recommended"] != table["replicas"]).sum())
    lines = [
        f"whatif {path}: policy {policy} reading {metric} ({mode}), {len(table)} rows, t = {times[0]:g} .. {times[-1]:g} s",
        f"  recommended differs from actual in {differ} of {len(table)} rows; replica-seconds actual {actual_rs:,.0f}, "
        f"recommended {recommended_rs:,.0f}",
        f"  {'time s':>10} {'actual':>7} {'recommended':>11}  rule",
    ]
    changes = table[table["change"] | (table.index == 0)]
    for r in changes.head(limit).itertuples():
        lines.append(f"  {r.time:>10g} {r.replicas:>7d} {r.recommended:>11d}  {r.rule}")
    if len(changes) > limit:
        lines.append(f"  ... {len(changes) - limit} more changes (the whole table with --out)")
    return lines


def read_whatif_table(path: str | Path) -> pd.DataFrame:
    """A table ``whatif --out`` wrote (CSV or Parquet), checked: its columns and numbers; raises a one-line FileError."""
    path = Path(path)
    if path.suffix == ".parquet":
        if not path.is_file():
            raise _error(path, "", "no such file; allowed: a table written by whatif --out")
        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as e:
            raise _error(path, "", f"not a readable Parquet file ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    else:
        df = read_csv(path, FIELD, ("action", "rule"), FileError, noun="whatif table")
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise _error(path, f"column {missing[0]!r}", f"missing; a whatif table has columns {', '.join(COLUMNS)}")
    out = df[list(COLUMNS)].copy()
    out["time"] = numeric_column(df, "time", path, "a time in s", FIELD, minimum=None, error=FileError)
    for column in ("replicas", "recommended"):
        out[column] = numeric_column(df, column, path, "a replica count", FIELD, integer=True, error=FileError)
    out["metric"] = numeric_column(df, "metric", path, "a number", FIELD, minimum=None, empty_ok=True, error=FileError)
    change = df["change"].astype(str).str.strip().str.lower()
    if not change.isin(["true", "false"]).all():
        i = int(np.argmax(~change.isin(["true", "false"]).to_numpy()))
        raise _error(path, f"line {i + 2}, column 'change'", f"{df['change'].iloc[i]!r} is not allowed; allowed: True or False")
    out["change"] = change == "true"
    out["rule"] = out["rule"].fillna("").astype(str)
    return out


def _write(table: pd.DataFrame, out: Path) -> None:
    """CSV (or Parquet by extension), written beside and renamed: nothing half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        if out.suffix == ".parquet":
            table.to_parquet(staging, index=False)
        else:
            table.to_csv(staging, index=False)
        os.replace(staging, out)
    finally:
        staging.unlink(missing_ok=True)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``whatif`` subcommand's arguments."""
    wi = sub.add_parser("whatif", help="what the autoscaler would have done over a recorded history (CSV: time, replicas, metric)")
    wi.add_argument("metrics", type=Path, metavar="METRICS.csv")
    wi.add_argument("--policy", required=True, help=f"one of {', '.join(WHATIF_POLICIES)}")
    wi.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a policy parameter, e.g. hpa.target_utilization=60")
    wi.add_argument("--out", type=Path, default=None, help="write the table (.csv, or .parquet)")
    wi.add_argument(
        "--mode",
        default="follow",
        help="follow (default): the policy's replicas follow its recommendations, the recorded load kept; open: each row as recorded",
    )


def run(args: argparse.Namespace) -> int:
    """``whatif``: print the changes of recommendation and, with --out, write the whole table; exit 2 on bad input."""
    try:
        if args.policy not in WHATIF_POLICIES:
            raise InputError(f"--policy {args.policy}: not a policy; allowed: {', '.join(WHATIF_POLICIES)}")
        if args.mode not in MODES:
            raise InputError(f"--mode {args.mode}: not a mode; allowed: {', '.join(MODES)}")
        sections = _sections()
        changes = {}
        for item in args.set:
            name, sep, raw = item.partition("=")
            if not sep or "." not in name:
                raise ParamError(f"--set {item}", "expected section.NAME=VALUE (e.g. hpa.target_utilization=60)")
            changes[name.strip()] = load_yaml(raw.encode(), f"--set {name.strip()}")
        apply_checked(sections, changes)
        if args.out is not None:
            check_out_file(args.out, "--out")
        history, metric = read_history(args.metrics, args.policy)
        table = whatif(history, args.policy, metric, sections, args.mode)
        if args.out is not None:
            _write(table, args.out)
    except (InputError, ParamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(_summary(args.metrics, args.policy, metric, args.mode, table)))
    if args.out is not None:
        print(f"  wrote {args.out} ({len(table)} rows)")
    return 0
