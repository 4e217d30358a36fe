"""Parameter sweeps: one headless run per (grid combination x seed), in-process or on Dask.

```python
from engine.sweep import sweep
df = sweep("default", {"autoscaler.MAX_WORKERS": [5, 10, 20], "workload.rate": [2, 4]}, seeds=[1, 2, 3])
df = sweep("default", grid, seeds, client=distributed.Client(...))   # the same DataFrame, on a cluster
```

The whole grid is validated before anything runs: every key names a ``section.NAME`` of the scenario,
every value is coerced and range-checked by :mod:`engine.params`, and every combination passes the
sections' cross-field rules (MIN_AVG_TIME < MAX_AVG_TIME ...). Workers receive plain data (the
scenario as a dict, the seed, the horizon) and build their own :class:`~engine.simulation.Simulation`,
so a run on a cluster gives exactly the rows of a serial run, in grid order.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.core.params import ParamError, coerce, split_key
from engine.sim.registry import SECTION_CLASSES
from engine.sim.run import RunParams
from engine.sim.scenario import Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation

if TYPE_CHECKING:
    from distributed import Client

SWEEP_FORMAT = "scalelab-sweep"
SWEEP_VERSION = 1
_PARQUET_KEY = b"scalelab"

#: summary() figures a sweep reports by default (numbers only; ``summary()`` has a few more).
DEFAULT_METRICS: tuple[str, ...] = (
    "jobs_arrived",
    "jobs_completed",
    "queue_at_end",
    "wait_p50",
    "wait_p95",
    "wait_p99",
    "vm_hours",
    "scale_outs",
    "scale_ins",
    "master_recoveries",
    "share_outside_band",
    "max_active_workers",
)
#: The default figures of a sweep over a functions-world scenario.
FUNCTION_METRICS: tuple[str, ...] = (
    "requests_generated",
    "requests_completed",
    "requests_in_flight",
    "requests_queued",
    "requests_rejected",
    "cold_starts",
    "replica_hours",
)
#: Grid keys a sweep cannot vary: the seed is the ``seeds`` argument.
_NOT_IN_GRID = ("run.seed",)


@dataclass(frozen=True)
class SweepTask:
    """One run, as plain data a Dask worker can rebuild it from."""

    index: int
    scenario: dict[str, Any]
    seed: int
    until: float | None
    metrics: tuple[str, ...]


@dataclass
class SweepPlan:
    """A validated sweep: the combinations in grid order, times the seeds, ready to run anywhere."""

    scenario_name: str
    grid: dict[str, list[Any]]
    seeds: list[int]
    until: float | None
    metrics: tuple[str, ...]
    combinations: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[SweepTask] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tasks)


def _as_scenario(scenario: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return Scenario.from_dict(dict(scenario), origin="sweep scenario")
    return load_scenario(scenario)


def _check_values(key: str, values: Any) -> list[Any]:
    """Coerce and range-check the values of one grid key; raise :class:`ParamError` naming it."""
    if "." not in key:
        raise ParamError(key, "grid keys are section.NAME, e.g. autoscaler.MAX_WORKERS")
    if key in _NOT_IN_GRID:
        raise ParamError(key, "is not a grid parameter; allowed: pass seeds=[...] to sweep over seeds")
    section, name = split_key(key, SECTION_CLASSES)
    if isinstance(values, str | bytes) or not isinstance(values, Sequence) or len(values) == 0:
        raise ParamError(key, f"{values!r} is not allowed; allowed: a non-empty list of values")
    probe = SECTION_CLASSES[section]()
    coerced = [coerce(probe, name, v, field=key) for v in values]
    seen = [json.dumps(v, sort_keys=True) for v in coerced]
    if len(set(seen)) != len(seen):
        raise ParamError(key, f"{list(values)!r} repeats a value; allowed: distinct values")
    return coerced


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ParamError("seeds", f"{seeds!r} is not allowed; allowed: a non-empty list of integers")
    probe = RunParams()
    out = [coerce(probe, "seed", s, field="seeds") for s in seeds]
    if len(set(out)) != len(out):
        raise ParamError("seeds", f"{list(seeds)!r} repeats a seed; allowed: distinct seeds")
    return out


def _check_metrics(metrics: Sequence[str], scenario: Scenario) -> tuple[str, ...]:
    known = [k for k, v in Simulation(scenario).summary().items() if isinstance(v, int | float | str) and not isinstance(v, bool)]
    if isinstance(metrics, str) or not metrics:
        raise ParamError("metrics", f"{metrics!r} is not allowed; allowed: a non-empty list from {', '.join(known)}")
    for m in metrics:
        if m not in known or m in ("seed", "scenario"):
            raise ParamError(
                "metrics", f"{m!r} is not a summary figure; allowed: {', '.join(k for k in known if k not in ('seed', 'scenario'))}"
            )
    return tuple(metrics)


def plan_sweep(
    scenario: Scenario | str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    until: float | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> SweepPlan:
    """Validate a sweep and expand it into tasks; raise :class:`ParamError` / :class:`ScenarioError` first.

    Combinations follow the grid's key order (the last key varies fastest) and each is run once per seed.
    """
    base = _as_scenario(scenario)
    if not isinstance(grid, Mapping):
        raise ParamError("grid", "must be a mapping of section.NAME to a list of values")
    present = base.build_sections()
    checked: dict[str, list[Any]] = {}
    for key, values in grid.items():
        values = _check_values(str(key), values)
        section = split_key(key, SECTION_CLASSES)[0]
        if section not in present:
            raise ParamError(key, f"section {section!r} is not part of scenario {base.name!r}; allowed sections: {', '.join(present)}")
        checked[str(key)] = values
    seed_list = _check_seeds(seeds)
    if until is not None:
        if isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until) or until <= 0:
            raise ParamError("until", f"{until!r} is not allowed; allowed: a number of simulated seconds > 0, or None for run.duration")
        until = float(until)
    if metrics is DEFAULT_METRICS and base.world == "functions":
        metrics = FUNCTION_METRICS
    plan = SweepPlan(base.name, checked, seed_list, until, _check_metrics(metrics, base))
    for combo in itertools.product(*checked.values()):
        values = dict(zip(checked, combo, strict=True))
        data = base.to_dict()
        for key, value in values.items():
            section, name = split_key(key, SECTION_CLASSES)
            data.setdefault(section, {})[name] = value
        label = ", ".join(f"{k}={v!r}" for k, v in values.items()) or "no grid"
        # the cross-field rules of every section, on this combination (raises ScenarioError)
        scenario_data = Scenario.from_dict(data, origin=f"sweep combination ({label})").to_dict()
        plan.combinations.append(values)
        for seed in seed_list:
            plan.tasks.append(SweepTask(len(plan.tasks), scenario_data, seed, until, plan.metrics))
    return plan


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one sweep task (on a Dask worker or in-process) and return its summary figures."""
    sim = Simulation(Scenario.from_dict(task.scenario, origin="sweep task"), seed=task.seed)
    sim.advance(task.until if task.until is not None else sim.sections["run"].duration)
    summary = sim.summary()
    return {m: summary[m] for m in task.metrics}


def _column(values: list[Any]) -> list[Any]:
    # list-valued parameters (steps, crash times) are shown as JSON text: a Parquet-friendly scalar
    return [json.dumps(v) if isinstance(v, list) else v for v in values]


def run_plan(plan: SweepPlan, client: Client | None = None) -> pd.DataFrame:
    """Run a validated plan on ``client`` (a ``distributed.Client``) or, without one, in-process."""
    if client is None:
        results = [run_task(t) for t in plan.tasks]
    else:
        futures = client.map(run_task, plan.tasks, pure=False)
        results = client.gather(futures)
    n_seeds = len(plan.seeds)
    columns: dict[str, list[Any]] = {}
    for key in plan.grid:
        columns[key] = _column([plan.combinations[t.index // n_seeds][key] for t in plan.tasks])
    columns["seed"] = [t.seed for t in plan.tasks]
    for m in plan.metrics:
        columns[m] = [r[m] for r in results]
    df = pd.DataFrame(columns)
    df.attrs.update(
        {
            "format": SWEEP_FORMAT,
            "version": SWEEP_VERSION,
            "scenario": plan.scenario_name,
            "grid": {k: _column(v) for k, v in plan.grid.items()},
            "seeds": list(plan.seeds),
            "until": plan.until,
        }
    )
    return df


def sweep(
    scenario: Scenario | str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    until: float | None = None,
    client: Client | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> pd.DataFrame:
    """One row per (grid combination x seed): the parameter values, ``seed``, and the run's summary figures.

    The grid values are scenario values (in force from t=0); ``until`` defaults to each run's
    ``run.duration``. The result is the same DataFrame, in grid order, with or without a ``client``.
    """
    return run_plan(plan_sweep(scenario, grid, seeds, until=until, metrics=metrics), client)


def sweep_to_parquet(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a sweep result as Parquet, its description (format, version, grid, seeds) in the file's metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = {"format": SWEEP_FORMAT, "version": SWEEP_VERSION, **{k: v for k, v in df.attrs.items() if k not in ("format", "version")}}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _PARQUET_KEY: json.dumps(meta).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def read_sweep(path: str | Path) -> pd.DataFrame:
    """Read a sweep written by :func:`sweep_to_parquet`; raise :class:`ScenarioError` on another file."""
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as e:
        raise ScenarioError(f"{path}: not a readable Parquet file ({e})") from None
    raw = (table.schema.metadata or {}).get(_PARQUET_KEY)
    meta = json.loads(raw) if raw else {}
    if meta.get("format") != SWEEP_FORMAT:
        raise ScenarioError(f"{path}: format: {meta.get('format')!r} is not allowed; allowed: {SWEEP_FORMAT!r}")
    if meta.get("version") != SWEEP_VERSION:
        raise ScenarioError(f"{path}: version: {meta.get('version')!r} is not supported; allowed: {SWEEP_VERSION}")
    df = table.to_pandas()
    df.attrs.clear()
    df.attrs.update(meta)
    return df


def setting_means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean of every figure over the seeds, one row per grid combination (grid order kept)."""
    keys = [c for c in df.attrs.get("grid", {}) if c in df.columns]
    figures = [c for c in df.columns if c not in keys and c != "seed" and pd.api.types.is_numeric_dtype(df[c])]
    if not keys:
        return df[figures].mean().to_frame().T
    return df.groupby(keys, sort=False, dropna=False)[figures].mean().reset_index()
