"""Replaying Azure Functions 2019 applications under a keep-alive policy, at the application level and minute resolution.

As the simulator of "Serverless in the Wild" does: the functions of an application share its instance, so the
per-minute counts of its functions are summed; a minute with invocations is busy, the whole minutes between two
busy minutes are an idle time. After each busy minute the application's :class:`~engine.autoscaling.keepalive`
policy answers its windows (learning the idle time that then ends): the next busy minute is warm when the idle time
falls inside them, else its first invocation is a cold start. Wasted memory time is the application's memory held
over the idle minutes it stays loaded, the trailing window cut at the end of the trace. One instance per
application: concurrency, execution times inside a minute and the cold start's own length are not modelled.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.autoscaling.keepalive import KEEPALIVE_RULES, FixedKeepAlive, KeepAlivePolicy, make_keepalive
from engine.core.csvfile import numeric_column, read_csv, require_columns, text_column
from engine.core.params import Section
from engine.workload.traces.azure2019 import read_azure2019_invocations
from engine.workload.traces.common import TraceError, resolve_trace_path

#: The per-application table's columns.
APP_COLUMNS = (
    "app",
    "functions",
    "invocations",
    "busy_minutes",
    "cold_starts",
    "cold_start_pct",
    "memory_mb",
    "wasted_mb_minutes",
    "avg_execution_s",
    *(f"rule_{r}" for r in KEEPALIVE_RULES),
)


@dataclass(frozen=True)
class AppTrace:
    """One application of the trace: its busy minutes (sorted), invocations, memory (MB) and mean execution time (s)."""

    app: str
    functions: int
    busy: np.ndarray
    invocations: int
    memory_mb: float
    avg_execution_s: float
    horizon: int


@dataclass(frozen=True)
class Sample:
    """The applications of a sample, and what could not be replayed (apps without a memory row, functions without durations)."""

    apps: list[AppTrace]
    no_memory: tuple[str, ...]
    no_durations: int


def _first_values(path: Path, key: str, column: str, what: str, field: str) -> dict[str, float]:
    """``column`` by ``key`` (lower case, the first row of each key), every cell checked; raises TraceError in one line."""
    df = read_csv(path, field, (key,), TraceError, base="data/traces", noun="trace")
    require_columns(df, path, [key, column], f"azure2019 {field}", field, TraceError)
    values = numeric_column(df, column, path, what, field, error=TraceError)
    keys = text_column(df, key)
    return {str(k).lower(): float(v) for k, v in reversed(list(zip(keys, values, strict=True)))}


def read_applications(invocations: str | Path, durations: str | Path, memory: str | Path) -> Sample:
    """The applications of an Azure Functions 2019 sample (three files, columns by header); raises TraceError in one line.

    As the trace's own release, the files need not cover each other: an application without a memory row is left out
    (named in ``no_memory``), a function without a durations row has no execution time (NaN).
    """
    counts = read_azure2019_invocations(invocations)
    if not counts.apps:
        raise TraceError(resolve_trace_path(invocations), "column 'HashApp'", "missing; allowed: an invocations file with HashApp")
    per_function = np.asarray(counts.per_function)
    totals = per_function.sum(axis=1).astype(float)
    median = _first_values(resolve_trace_path(durations), "HashFunction", "percentile_Average_50", "a duration in ms", "durations")
    median_s = np.array([median.get(f.lower(), np.nan) / 1000.0 for f in counts.functions])
    mem = _first_values(resolve_trace_path(memory), "HashApp", "AverageAllocatedMb", "memory in MB", "memory")
    app_of = np.array(counts.apps)
    out, no_memory = [], []
    for app in sorted(set(counts.apps)):
        if app not in mem:
            no_memory.append(app)
            continue
        rows = np.flatnonzero(app_of == app)
        minutes = per_function[rows].sum(axis=0)
        known = rows[np.isfinite(median_s[rows])]
        weights = totals[known]
        execution = (
            float(np.average(median_s[known], weights=weights))
            if weights.sum() > 0
            else float(np.mean(median_s[known]))
            if len(known)
            else np.nan
        )
        out.append(AppTrace(app, len(rows), np.flatnonzero(minutes > 0), int(minutes.sum()), mem[app], execution, per_function.shape[1]))
    return Sample(out, tuple(no_memory), int((~np.isfinite(median_s)).sum()))


@dataclass
class AppResult:
    """What one application saw under one policy."""

    cold_starts: int
    wasted_minutes: float
    rules: Counter


def replay_application(trace: AppTrace, policy: KeepAlivePolicy) -> AppResult:
    """Walk the application's busy minutes under ``policy`` (a fresh one per application)."""
    rules: Counter = Counter()
    if len(trace.busy) == 0:
        return AppResult(0, 0.0, rules)
    idles = np.diff(trace.busy) - 1
    tail = float(trace.horizon - 1 - trace.busy[-1])  # idle minutes after the last busy one, to the trace's end
    if isinstance(policy, FixedKeepAlive):  # windows that never change: the whole walk at once
        w = policy.windows()
        warm = (idles >= w.prewarm) & (idles < w.prewarm + w.keep_alive)
        wasted = np.clip(idles - w.prewarm, 0.0, w.keep_alive).sum() + w.wasted(tail)
        rules[w.rule] = len(idles) + 1
        return AppResult(1 + int((~warm).sum()), float(wasted), rules)
    cold = 1  # the first invocation finds nothing loaded
    wasted = 0.0
    for idle in idles.tolist():
        w = policy.windows()
        rules[w.rule] += 1
        if not w.warm(idle):
            cold += 1
        wasted += w.wasted(idle)
        policy.observe(float(idle))
    w = policy.windows()
    rules[w.rule] += 1
    wasted += w.wasted(tail)  # the trailing window, cut at the trace's end
    return AppResult(cold, wasted, rules)


def replay(apps: Sequence[AppTrace], kind: str, section: Section | None = None) -> pd.DataFrame:
    """One row per application (:data:`APP_COLUMNS`) under a fresh ``kind`` policy each, reading ``section``."""
    rows = []
    for trace in apps:
        r = replay_application(trace, make_keepalive(kind, section))
        pct = 100.0 * r.cold_starts / trace.invocations if trace.invocations else 0.0
        rows.append(
            (
                trace.app,
                trace.functions,
                trace.invocations,
                len(trace.busy),
                r.cold_starts,
                pct,
                trace.memory_mb,
                r.wasted_minutes * trace.memory_mb,
                trace.avg_execution_s,
                *(r.rules.get(rule, 0) for rule in KEEPALIVE_RULES),
            )
        )
    return pd.DataFrame(rows, columns=list(APP_COLUMNS))


def tradeoff(per_policy: dict[str, pd.DataFrame], baseline: str, quantile: float = 0.75) -> pd.DataFrame:
    """Per policy: the ``quantile`` of the per-app cold-start % and the total wasted memory time over ``baseline``'s."""
    base = float(per_policy[baseline]["wasted_mb_minutes"].sum())
    rows = []
    for name, df in per_policy.items():
        wasted = float(df["wasted_mb_minutes"].sum())
        rows.append(
            {
                "policy": name,
                "p75_cold_start_pct": float(df["cold_start_pct"].quantile(quantile)),
                "wasted_memory_norm": wasted / base if base > 0 else float("nan"),
                "cold_starts": int(df["cold_starts"].sum()),
                "wasted_mb_minutes": wasted,
            }
        )
    return pd.DataFrame(rows)
