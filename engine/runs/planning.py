"""Planning a sweep: a validated spec expanded into runs, each as plain data a worker rebuilds it from.

:func:`plan_sweep` checks every point of the design as a scenario (a combination the sections refuse is named
with its point) and makes one :class:`SweepTask` per (point x seed), keyed by :func:`run_key`: a hash of the
point's scenario, the seed, the horizon, the software version and the provenance of the plugins the run uses.
The :class:`SweepPlan` also carries the Arrow schema of the sweep's rows (:data:`BOOK_COLUMNS` after the
KPIs). Running a plan is :mod:`engine.runs.sweep`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pyarrow as pa

from engine.core.params import split_key
from engine.runs.spec import SweepError, SweepSpec, kpi_names
from engine.sim.provenance import carried_plugins, plugins_used
from engine.sim.registry import SECTION_CLASSES
from engine.sim.scenario import Scenario, ScenarioError


def _software_version() -> str:
    try:
        return metadata.version("scalelab")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: Part of every run's key: a new release reruns everything rather than mix results of two engines.
SOFTWARE_VERSION = _software_version()
#: Columns that describe how a run went rather than what it gave (they differ between two runs of the same point).
TIMING_COLUMNS = ("wall_seconds", "cpu_seconds")
#: Columns after the KPIs, in this order.
BOOK_COLUMNS = ("run_key", *TIMING_COLUMNS, "version", "scenario_json", "recording")


@dataclass(frozen=True)
class SweepTask:
    """One run, as plain data a Dask worker can rebuild it from."""

    key: str
    point: int
    values: dict[str, Any]
    scenario: dict[str, Any]
    seed: int
    until: float
    kpis: tuple[str, ...]
    keep_recording: bool = False
    plugins: tuple = ()  # (point, class, provenance) of each plugin registered in the planning process (a notebook's)


@dataclass
class SweepPlan:
    """A validated sweep expanded into runs: the design's points in order, each once per seed."""

    spec: SweepSpec
    points: list[dict[str, Any]]
    tasks: list[SweepTask]
    schema: pa.Schema

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def name(self) -> str:
        return self.spec.name

    def manifest(self) -> dict[str, Any]:
        """What a dataset of this sweep records about it (reruns into the same directory must match its columns)."""
        return {
            "name": self.spec.name,
            "scenario": self.spec.scenario.name,
            "parameters": self.spec.parameters,
            "kpis": list(self.spec.kpis),
            "seeds": list(self.spec.seeds),
            "until": self.spec.until,
            "spec": self.spec.describe(),
            "software_version": SOFTWARE_VERSION,
        }


def run_key(
    scenario: Mapping[str, Any], seed: int, until: float, version: str = SOFTWARE_VERSION, plugins: Sequence[Mapping[str, str]] = ()
) -> str:
    """The identity of a run: a hash of its scenario's values (not its name), seed, horizon, the software version and
    the plugins it uses (:func:`~engine.sim.provenance.plugins_used`: point, name, module, version, source hash), so a
    plugin whose source changed is run again rather than served from the result of its old code."""
    values = {k: v for k, v in scenario.items() if k not in ("name", "description")}
    ident: dict[str, Any] = {"scenario": values, "seed": seed, "until": until, "version": version}
    if plugins:  # absent without plugins: the keys of datasets written before plugins existed stay valid
        ident["plugins"] = [dict(p) for p in plugins]
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def scenario_plugins(scenario: Mapping[str, Any]) -> list[dict[str, str]]:
    """The plugins a scenario's run uses, with their provenance (what :func:`run_key` hashes)."""
    checked = Scenario.from_dict(dict(scenario), origin="")
    return plugins_used(checked.build_sections(), checked.to_dict(), ())


def _arrow_type(values: Sequence[Any]) -> pa.DataType:
    sample = values[0] if values else None
    if isinstance(sample, bool):
        return pa.bool_()
    if isinstance(sample, int):
        return pa.int64()
    if isinstance(sample, float):
        return pa.float64()
    return pa.string()


def arrow_cell(value: Any) -> Any:
    """A parameter value as a sweep row holds it: list-valued ones (steps, crash times) become JSON text, a Parquet-friendly scalar."""
    return json.dumps(value) if isinstance(value, list | dict) else value


def plan_sweep(spec: SweepSpec) -> SweepPlan:
    """Expand a spec into runs, checking every point as a scenario; raise :class:`SweepError` naming the point."""
    base = spec.scenario.to_dict()
    horizon = spec.until if spec.until is not None else float(spec.scenario.build_sections()["run"].duration)
    points = spec.points()
    tasks: list[SweepTask] = []
    checked: dict[str, dict[str, Any]] = {}  # a point repeated by a random design is checked once
    uses: dict[str, list[dict[str, str]]] = {}  # and its plugins looked up once
    carried = carried_plugins()
    for i, values in enumerate(points):
        ident = json.dumps(values, sort_keys=True, default=str)
        if ident not in checked:
            data = json.loads(json.dumps(base))
            for key, value in {**spec.fixed, **values}.items():
                section, name = split_key(key, SECTION_CLASSES)
                data.setdefault(section, {})[name] = value
            label = ", ".join(f"{k}={v!r}" for k, v in values.items()) or "no parameters"
            try:
                checked[ident] = Scenario.from_dict(data, origin="").to_dict()
            except ScenarioError as e:  # the sections' cross-field rules, on this combination
                raise SweepError(f"{spec.origin}: point {i} ({label}): {str(e).removeprefix(': ')}") from None
            uses[ident] = scenario_plugins(checked[ident])
        for seed in spec.seeds:
            scenario = checked[ident]
            key = run_key(scenario, seed, horizon, plugins=uses[ident])
            tasks.append(SweepTask(key, i, values, scenario, seed, horizon, spec.kpis, spec.keep_recordings, carried))
    kpi_types = kpi_names(spec.scenario)
    fields = [pa.field("point", pa.int64())]
    for axis in spec.axes:
        if axis.discrete:
            kind = _arrow_type([arrow_cell(v) for v in axis.values or ()])
        else:  # a continuous range: integers for an Integer parameter, floats otherwise
            kind = pa.int64() if axis.integer else pa.float64()
        fields.append(pa.field(axis.key, kind))
    fields.append(pa.field("seed", pa.int64()))
    kpi_arrow = {int: pa.int64(), float: pa.float64(), str: pa.string()}
    fields += [pa.field(k, kpi_arrow[kpi_types[k]]) for k in spec.kpis]
    fields += [pa.field("run_key", pa.string()), *(pa.field(c, pa.float64()) for c in TIMING_COLUMNS)]
    fields += [pa.field("version", pa.string()), pa.field("scenario_json", pa.string()), pa.field("recording", pa.string())]
    return SweepPlan(spec, points, tasks, pa.schema(fields))
