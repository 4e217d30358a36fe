"""Parameter sweeps: one headless run per (design point x seed), in-process or on any Dask cluster, resumable.

```python
from engine import load_sweep, run_sweep, read_sweep
spec = load_sweep("band-and-cap")                      # data/sweeps/band-and-cap.yaml, validated whole
df = run_sweep(spec, out="out/sweeps/band-and-cap")    # in-process; client=distributed.Client(...) for a cluster
df = read_sweep("out/sweeps/band-and-cap")             # the dataset, later or from another process
df = sweep("default", {"autoscaler.MAX_WORKERS": [5, 10]}, seeds=[1, 2])   # a quick grid, in memory
```

Everything is validated before anything runs: the sweep file (:mod:`engine.runs.spec`) and then every point
of its design as a scenario, so a combination the sections refuse (MIN_AVG_TIME above MAX_AVG_TIME) is named
with its point. Workers receive plain data (the point's scenario as a dict, the seed, the horizon) and build
their own :class:`~engine.sim.simulation.Simulation`, so a run's row depends only on the run, never on the
worker count or the order of completion (planning: :mod:`engine.runs.planning`; reading the frames:
:mod:`engine.runs.analysis`). With ``out``, each finished run is kept in a
:class:`~engine.runs.dataset.SweepDataset` as it completes, keyed by a hash of its scenario, seed, horizon,
the software version and the provenance of the plugins it uses; a rerun skips the runs already kept.
"""

from __future__ import annotations

import json
import math
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.runs.analysis import comparable, kpi_columns, parameter_columns, pareto_front, setting_means
from engine.runs.dataset import SweepDataset, rows_table
from engine.runs.planning import (
    BOOK_COLUMNS,
    SOFTWARE_VERSION,
    TIMING_COLUMNS,
    SweepPlan,
    SweepTask,
    arrow_cell,
    plan_sweep,
    run_key,
    scenario_plugins,
)
from engine.runs.spec import SweepError, SweepSpec, load_sweep, sweep_from_dict
from engine.sim.provenance import adopt_plugins
from engine.sim.scenario import Scenario, load_scenario
from engine.sim.simulation import Simulation

if TYPE_CHECKING:
    from distributed import Client

#: The sweep API in one place: planning (:mod:`engine.runs.planning`) and reading frames (:mod:`engine.runs.analysis`) too.
__all__ = [
    "BOOK_COLUMNS",
    "SOFTWARE_VERSION",
    "TIMING_COLUMNS",
    "ProgressCallback",
    "SweepPlan",
    "SweepProgress",
    "SweepRun",
    "SweepTask",
    "comparable",
    "grid_spec",
    "kpi_columns",
    "parameter_columns",
    "pareto_front",
    "plan_sweep",
    "read_sweep",
    "run_key",
    "run_sweep",
    "run_task",
    "scenario_plugins",
    "setting_means",
    "sweep",
]


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one sweep task (on a Dask worker or in-process): its KPIs, wall and CPU seconds, and its recording if kept."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    adopt_plugins(task.plugins)
    sim = Simulation(Scenario.from_dict(task.scenario, origin="sweep task"), seed=task.seed)
    sim.advance(task.until)
    summary = sim.summary()
    out: dict[str, Any] = {k: summary[k] for k in task.kpis}
    out["wall_seconds"] = time.perf_counter() - wall0
    out["cpu_seconds"] = time.process_time() - cpu0
    out["recording"] = json.dumps(sim.recording()) if task.keep_recording else None
    return out


def _row(task: SweepTask, result: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"run_key": task.key, "point": task.point}
    row.update({k: arrow_cell(v) for k, v in task.values.items()})
    row["seed"] = task.seed
    for k in task.kpis:
        v = result[k]
        row[k] = v.item() if isinstance(v, np.generic) else v
    row.update({k: result[k] for k in TIMING_COLUMNS})
    row.update(version=SOFTWARE_VERSION, scenario_json=json.dumps(task.scenario, sort_keys=True), recording=result.get("recording"))
    return row


@dataclass
class SweepProgress:
    """Where a sweep stands: runs skipped (kept from before), done, failed and running, and an estimate of what is left."""

    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    started: float = field(default_factory=time.monotonic)
    finished: bool = False
    interrupted: bool = False

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - self.failed

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def eta_seconds(self) -> float:
        """Seconds left at the pace so far (NaN before the first run of this session ends)."""
        finished = self.done + self.failed
        return self.elapsed / finished * self.remaining if finished else math.nan

    def line(self) -> str:
        eta = "" if math.isnan(self.eta_seconds) or self.finished else f", ETA {self.eta_seconds:.0f} s"
        kept = f" ({self.skipped} kept from before)" if self.skipped else ""
        return f"{self.skipped + self.done} of {self.total} done{kept}, {self.failed} failed, {self.running} running{eta}"


ProgressCallback = Callable[[SweepProgress, dict[str, Any] | None], None]


class SweepRun:
    """One execution of a plan: in-process or on a ``distributed.Client``, appending to a dataset, stoppable from another thread."""

    def __init__(
        self, plan: SweepPlan, out: str | Path | None = None, client: Client | None = None, on_progress: ProgressCallback | None = None
    ):
        self.plan = plan
        self.dataset = SweepDataset(out) if out is not None else None
        self.client = client
        self.on_progress = on_progress
        self.rows: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.progress = SweepProgress(total=len(plan))
        self._stop = threading.Event()
        if self.dataset is not None:  # refuse a directory of another sweep now, before anything runs
            self.dataset.check_compatible(plan.manifest())

    def stop(self) -> None:
        """Ask the run to stop: within a twentieth of a second what is queued is cancelled; finished runs stay kept.

        Only sets a flag, so it is safe from another thread and from a signal handler (the CLI's Ctrl-C)."""
        self._stop.set()

    def _report(self, row: dict[str, Any] | None = None) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress, row)

    def _finished(self, task: SweepTask, result: dict[str, Any]) -> None:
        row = _row(task, result)
        if self.dataset is not None:
            self.dataset.append(task.key, rows_table([row], self.plan.schema))
        self.rows[task.key] = row
        self.progress.done += 1

    def _failed(self, task: SweepTask, error: str) -> None:
        self.errors[task.key] = error
        if self.dataset is not None:
            self.dataset.record_failure(
                task.key, {"run_key": task.key, "point": task.point, "values": task.values, "seed": task.seed, "error": error}
            )
        self.progress.failed += 1

    def to_run(self) -> list[SweepTask]:
        """The runs not kept in the dataset yet, once each (a point a random design repeats is one run)."""
        done = self.dataset.done_keys() if self.dataset is not None else set()
        return list({t.key: t for t in self.plan.tasks if t.key not in done}.values())

    def run(self) -> pd.DataFrame:
        """Run what is not kept yet and return every run of the plan that has a row, in plan order."""
        plan, ds = self.plan, self.dataset
        try:
            if ds is not None:
                ds.open_for_writing(plan.manifest())
            todo = self.to_run()
            runs = {t.key for t in plan.tasks}  # progress counts distinct runs (a repeated point runs once)
            self.progress.total = len(runs)
            self.progress.skipped = len(runs - {t.key for t in todo})
            self._report()
            try:
                if self.client is None:
                    self._run_here(todo)
                else:
                    self._run_on(self.client, todo)
            except KeyboardInterrupt:
                self.progress.interrupted = True
                self.stop()
                raise
            self.progress.finished = not self._stop.is_set()
            self.progress.interrupted = self._stop.is_set()
            self.progress.running = 0
            self._report()
            if ds is not None and self.progress.finished and not self.errors:
                ds.compact()
            return self.frame()
        finally:
            if ds is not None:
                ds.close()

    def _run_here(self, todo: list[SweepTask]) -> None:
        for task in todo:
            if self._stop.is_set():
                return
            self.progress.running = 1
            self._report()
            try:
                result = run_task(task)
            except Exception:  # noqa: BLE001 - a run that raises is noted and the sweep goes on
                self._failed(task, traceback.format_exc(limit=-3))
            else:
                self._finished(task, result)
            self.progress.running = 0
            self._report(self.rows.get(task.key))

    def _run_on(self, client: Client, todo: list[SweepTask]) -> None:
        from distributed import as_completed

        # deterministic keys: the scheduler sees the same run under the same name, whoever submits it
        futures = {client.submit(run_task, t, key=f"scalelab-run-{t.key}", pure=False): t for t in todo}
        outstanding = len(futures)
        threads = max(1, sum(client.nthreads().values()))
        self.progress.running = min(outstanding, threads)
        self._report()
        ready = as_completed(futures)
        try:
            # poll rather than block in Dask, so a stop (Ctrl-C included) is seen at once, not after the next run ends
            while not ready.is_empty() and not self._stop.is_set():
                batch = ready.next_batch(block=False)
                if not batch:
                    self._stop.wait(0.05)
                    continue
                for future in batch:
                    task = futures[future]
                    if future.status == "finished":
                        self._finished(task, future.result())
                    elif future.status == "error":
                        exc = future.exception()
                        self._failed(task, f"{type(exc).__name__}: {exc}")
                    elif future.status == "cancelled":
                        continue
                    else:  # finished, then lost with its worker before it was read: Dask computes it again elsewhere
                        ready.add(future)
                        continue
                    future.release()
                    outstanding -= 1
                    threads = max(1, sum(client.nthreads().values()))  # workers come and go; more queued runs than threads wait
                    self.progress.running = min(outstanding, threads)
                    self._report(self.rows.get(task.key))
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)

    def frame(self) -> pd.DataFrame:
        """The plan's runs that have a row (new, or kept from before), in plan order; ``point`` is this plan's index."""
        kept: dict[str, dict[str, Any]] = {}
        if self.dataset is not None and (self.dataset.root / "runs").is_dir():
            table = self.dataset.read_table()
            if table.num_rows:
                kept = {r["run_key"]: r for r in table.to_pylist()}
        rows = []
        for task in self.plan.tasks:
            row = self.rows.get(task.key) or kept.get(task.key)
            if row is not None:
                rows.append({**row, "point": task.point})
        df = pa.Table.from_pylist(rows, schema=self.plan.schema).to_pandas()
        df.attrs.update({k: v for k, v in self.plan.manifest().items()})
        return df


def run_sweep(
    spec: SweepSpec | str | Path,
    out: str | Path | None = None,
    client: Client | None = None,
    on_progress: ProgressCallback | None = None,
) -> pd.DataFrame:
    """Run a sweep (a spec, or a sweep file's path or name) and return one row per run in design order.

    With ``out`` every finished run is kept in that directory as it completes, and runs kept there before
    are not run again. The rows are the same on any cluster, with any number of workers, or in-process.
    """
    if not isinstance(spec, SweepSpec):
        spec = load_sweep(spec)
    return SweepRun(plan_sweep(spec), out, client, on_progress).run()


def grid_spec(
    scenario: Scenario | str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    until: float | None = None,
    kpis: Sequence[str] | None = None,
) -> SweepSpec:
    """A full-grid sweep from arguments rather than a file (the CLI's ``--grid`` form, notebooks)."""
    if not isinstance(grid, Mapping):
        raise SweepError("grid: must be a mapping of section.NAME to a list of values")
    if isinstance(scenario, Scenario):
        scenario_data: Any = scenario.to_dict()
    elif isinstance(scenario, Mapping):
        scenario_data = dict(scenario)
    else:
        loaded = load_scenario(scenario)
        scenario_data = loaded.to_dict()
    data = {
        "name": f"{scenario_data.get('name', 'sweep')}-grid",
        "scenario": scenario_data,
        "parameters": {k: list(v) if isinstance(v, list | tuple) else v for k, v in grid.items()},
        "seeds": list(seeds) if isinstance(seeds, list | tuple) else seeds,
        "until": until,
        "kpis": list(kpis) if kpis is not None else None,
    }
    return sweep_from_dict(data, origin="sweep")


def sweep(
    scenario: Scenario | str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    until: float | None = None,
    client: Client | None = None,
    kpis: Sequence[str] | None = None,
    out: str | Path | None = None,
) -> pd.DataFrame:
    """One row per (grid combination x seed): ``point``, the parameter values, ``seed``, the KPIs, and how the run went.

    The grid values are scenario values (in force from t=0); ``until`` defaults to ``run.duration``; the
    KPIs default to every numeric figure of the world's ``summary()``.
    """
    return run_sweep(grid_spec(scenario, grid, seeds, until=until, kpis=kpis), out=out, client=client)


def read_sweep(path: str | Path) -> pd.DataFrame:
    """Read a sweep's dataset directory (raises :class:`SweepError` on anything else)."""
    return SweepDataset(path).read()
