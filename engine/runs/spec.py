"""Sweep files: ``data/sweeps/*.yaml``, one sweep each, validated whole before anything runs.

```yaml
version: 1
name: band-and-cap
description: how tight a drain band, how many workers
scenario: default                 # a name in data/scenarios/, a path (relative to this file), or a mapping
until: 1800                       # simulated seconds per run (default: the scenario's run.duration)
design: grid                      # grid | {kind: random, runs: 20, seed: 7} | {kind: lhs, runs: 20, seed: 7}
seeds: [1, 2, 3]                  # or {count: 3, start: 1}: replications of every point
fixed: {workload.rate: 3.5}       # values every run gets (optional)
parameters:
  autoscaler.MAX_WORKERS: [6, 10, 20]                   # a list of values
  autoscaler.MIN_AVG_TIME: {range: [5, 15], step: 5}    # a grid over a range: 5, 10, 15
  autoscaler.MAX_AVG_TIME: {range: [20, 80], num: 3, log: true}   # 20, 40, 80
  workload.service_cv: {range: [0.2, 1.0]}              # random/lhs designs only: any value in the range
kpis: [wait_p95, vm_hours, jobs_completed]              # summary() figures (default: every numeric one)
keep_recordings: false            # keep each run's recording, so the dashboard opens it as recorded
```

Files are read strictly (:func:`engine.core.inputs.load_yaml`: a safe loader, no aliases or duplicate keys); any error is one :class:`SweepError` line naming the file, the field
(or the point) and what is allowed. :meth:`SweepSpec.points` expands the design; :mod:`engine.runs.sweep`
turns points x seeds into runs.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import param

from engine.core.inputs import InputError, load_yaml, read_bytes
from engine.core.params import ParamError, coerce, split_key, tunable_names
from engine.sim.registry import SECTION_CLASSES
from engine.sim.run import RunParams
from engine.sim.scenario import SCENARIO_DIR, Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation

SWEEP_DIR = Path(__file__).resolve().parents[2] / "data" / "sweeps"
SWEEP_FILE_VERSION = 1
DESIGNS = ("grid", "random", "lhs")
_TOP_KEYS = ("version", "name", "description", "scenario", "until", "design", "seeds", "fixed", "parameters", "kpis", "keep_recordings")
#: Keys a sweep cannot vary: the seed is ``seeds``; the world and what is recorded are fixed per sweep.
_NOT_VARIED = ("run.seed", "run.world")
#: summary() keys that describe a run rather than measure it.
_NOT_KPIS = ("scenario", "seed", "simulated_seconds")


class SweepError(ScenarioError):
    """A sweep file (or sweep arguments) that cannot be run; one line naming the origin, the field and what is allowed."""


@dataclass(frozen=True)
class Axis:
    """One swept parameter: either discrete ``values`` or a continuous range ``[low, high]`` (random/lhs designs)."""

    key: str
    values: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    integer: bool = False
    log: bool = False

    @property
    def discrete(self) -> bool:
        return self.values is not None

    def at(self, u: float) -> Any:
        """The value at position ``u`` in [0, 1): a value's index for discrete axes, a point of the range otherwise."""
        if self.values is not None:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        assert self.low is not None and self.high is not None
        if self.integer:  # every integer of [low, high] equally likely
            return min(int(math.floor(self.low + u * (self.high - self.low + 1))), int(self.high))
        if self.log:
            return float(math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low))))
        return float(self.low + u * (self.high - self.low))

    def describe(self) -> dict[str, Any]:
        """Plain data for the dataset's manifest."""
        if self.values is not None:
            return {"values": list(self.values)}
        return {"range": [self.low, self.high], **({"log": True} if self.log else {})}


@dataclass
class SweepSpec:
    """A validated sweep: the scenario, the axes, the design, the seeds, the KPIs and the horizon."""

    name: str
    scenario: Scenario
    axes: list[Axis]
    seeds: list[int]
    kpis: tuple[str, ...]
    until: float | None = None
    design: str = "grid"
    runs: int | None = None
    design_seed: int | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    keep_recordings: bool = False
    description: str = ""
    origin: str = "<sweep>"
    source: Path | None = None

    @property
    def parameters(self) -> list[str]:
        return [a.key for a in self.axes]

    def points(self) -> list[dict[str, Any]]:
        """The design's parameter points, in a fixed order (grid: the last parameter varies fastest)."""
        if self.design == "grid":
            return [dict(zip(self.parameters, combo, strict=True)) for combo in itertools.product(*(a.values or () for a in self.axes))]
        assert self.runs is not None and self.design_seed is not None
        rng = np.random.default_rng(self.design_seed)
        if self.design == "random":
            u = rng.random((self.runs, len(self.axes)))
        else:  # Latin hypercube: each axis cut into `runs` strata, each stratum used exactly once, a random spot inside it
            u = np.empty((self.runs, len(self.axes)))
            for j in range(len(self.axes)):
                u[:, j] = (rng.permutation(self.runs) + rng.random(self.runs)) / self.runs
        return [{a.key: a.at(float(u[i, j])) for j, a in enumerate(self.axes)} for i in range(self.runs)]

    def describe(self) -> dict[str, Any]:
        """The spec as plain data (the dataset's manifest and the dashboard read it)."""
        design: Any = self.design if self.design == "grid" else {"kind": self.design, "runs": self.runs, "seed": self.design_seed}
        return {
            "name": self.name,
            "description": self.description,
            "scenario": self.scenario.name,
            "until": self.until,
            "design": design,
            "seeds": list(self.seeds),
            "fixed": dict(self.fixed),
            "parameters": {a.key: a.describe() for a in self.axes},
            "kpis": list(self.kpis),
            "keep_recordings": self.keep_recordings,
        }


def list_sweeps(directory: Path = SWEEP_DIR) -> dict[str, Path]:
    """Sweep name -> path for every YAML file in ``directory`` (sorted by name)."""
    return {p.stem: p for p in sorted(directory.glob("*.yaml"))}


def sweep_path(path_or_name: str | Path) -> Path | None:
    """The sweep file a command-line argument names (a path, or a name in ``data/sweeps/``), or None if it names none.

    A sweep file is a YAML mapping with a ``scenario`` key (scenario files have none), so the same
    argument position can take a scenario (with ``--grid``) or a sweep file.
    """
    path = Path(path_or_name)
    candidates = [path] if path.suffix else [path, SWEEP_DIR / f"{path_or_name}.yaml"]
    for p in candidates:
        if p.is_file():
            try:
                data = load_yaml(read_bytes(p, "sweep YAML"), str(p))
            except InputError:
                return p if p.parent == SWEEP_DIR else None  # a broken file in data/sweeps/ is a sweep file; say why later
            return p if isinstance(data, dict) and "scenario" in data else None
    return None


def load_sweep(path_or_name: str | Path) -> SweepSpec:
    """Load and validate a sweep file (a path, or a name in ``data/sweeps/``); raise :class:`SweepError`."""
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = SWEEP_DIR / f"{path_or_name}.yaml"
    if not path.is_file():
        raise SweepError(f"{path}: no such sweep file; sweeps in {SWEEP_DIR}: {', '.join(list_sweeps()) or 'none'}")
    try:  # strictly, as scenarios are read: UTF-8, no aliases, no duplicate keys, bounded size and depth
        data = load_yaml(read_bytes(path, "sweep YAML"), str(path))
    except InputError as e:
        raise SweepError(str(e)) from None
    return sweep_from_dict(data, origin=str(path), source=path)


def sweep_from_dict(data: Any, origin: str = "<sweep>", source: Path | None = None) -> SweepSpec:
    """Validate a parsed sweep file whole (every point of the design included); raise :class:`SweepError` naming the field."""
    if not isinstance(data, dict):
        raise SweepError(f"{origin}: the file must hold a mapping; allowed keys: {', '.join(_TOP_KEYS)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise SweepError(f"{origin}: {key}: unknown key; allowed: {', '.join(_TOP_KEYS)}")
    version = data.get("version", SWEEP_FILE_VERSION)
    if version != SWEEP_FILE_VERSION:
        raise SweepError(f"{origin}: version: {version!r} is not supported; allowed: {SWEEP_FILE_VERSION}")
    try:
        scenario = _scenario(data.get("scenario"), source)
        design, runs, design_seed = _design(data.get("design", "grid"))
        spec = SweepSpec(
            name=str(data.get("name") or (source.stem if source else "sweep")),
            description=str(data.get("description", "")),
            scenario=scenario,
            axes=_axes(data.get("parameters", {}), scenario, design),
            seeds=_seeds(data.get("seeds", [1])),
            kpis=check_kpis(data.get("kpis"), scenario),
            until=_until(data.get("until")),
            design=design,
            runs=runs,
            design_seed=design_seed,
            fixed=_fixed(data.get("fixed", {}), scenario, data.get("parameters")),
            keep_recordings=_flag("keep_recordings", data.get("keep_recordings", False)),
            origin=origin,
            source=source,
        )
    except ParamError as e:
        raise SweepError(f"{origin}: {e}") from None
    except SweepError:
        raise
    except ScenarioError as e:  # the scenario file's own one-line error, said to come through this sweep
        raise SweepError(f"{origin}: scenario: {e}") from None
    return spec


def _scenario(value: Any, source: Path | None) -> Scenario:
    if isinstance(value, Mapping):
        return Scenario.from_dict(dict(value), origin="scenario (inline)")
    if not isinstance(value, str) or not value:
        raise ParamError(
            "scenario", f"{value!r} is not allowed; allowed: a scenario name ({', '.join(_scenario_names())}), a path, or a mapping"
        )
    path = Path(value)
    if source is not None and not path.is_absolute() and (source.parent / path).is_file():
        path = source.parent / path  # a scenario next to the sweep file
    return load_scenario(path)


def _scenario_names() -> list[str]:
    return [p.stem for p in sorted(SCENARIO_DIR.glob("*.yaml"))]


def _design(value: Any) -> tuple[str, int | None, int | None]:
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, Mapping) or value.get("kind") not in DESIGNS:
        kind = value.get("kind") if isinstance(value, Mapping) else value
        raise ParamError(
            "design", f"{kind!r} is not allowed; allowed: {', '.join(DESIGNS)} (random/lhs as {{kind: lhs, runs: N, seed: S}})"
        )
    kind = value["kind"]
    extra = set(value) - ({"kind"} if kind == "grid" else {"kind", "runs", "seed"})
    if extra:
        raise ParamError(
            f"design.{sorted(extra)[0]}", f"unknown key for a {kind} design; allowed: {'kind' if kind == 'grid' else 'kind, runs, seed'}"
        )
    if kind == "grid":
        return kind, None, None
    runs, seed = value.get("runs"), value.get("seed")
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 100_000:
        raise ParamError("design.runs", f"{runs!r} is not allowed; allowed: the number of points, an integer in [1, 100000]")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParamError("design.seed", f"{seed!r} is not allowed; allowed: an integer >= 0 (the same seed draws the same points)")
    return kind, runs, seed


def _section_probe(key: str, scenario: Scenario, what: str) -> tuple[Any, str]:
    """The param object ``key`` belongs to (checked to be part of the scenario's world) and the parameter's name."""
    if not isinstance(key, str) or "." not in key:
        raise ParamError(str(key), f"{what} are named section.NAME, e.g. autoscaler.MAX_WORKERS")
    if key in _NOT_VARIED:
        raise ParamError(key, "cannot vary in a sweep; allowed: seeds: [...] for the seed, one world per sweep")
    section, name = split_key(key, SECTION_CLASSES)
    present = scenario.build_sections()
    if section not in present:
        raise ParamError(key, f"section {section!r} is not part of scenario {scenario.name!r}; allowed sections: {', '.join(present)}")
    return present[section], name


def _axes(parameters: Any, scenario: Scenario, design: str) -> list[Axis]:
    if not isinstance(parameters, Mapping):
        raise ParamError("parameters", "must be a mapping of section.NAME to a list of values or {range: [LOW, HIGH], step|num: ...}")
    return [_axis(str(key), spec, scenario, design) for key, spec in parameters.items()]


def _axis(key: str, spec: Any, scenario: Scenario, design: str) -> Axis:
    probe, name = _section_probe(key, scenario, "parameters")
    if isinstance(spec, Mapping) and set(spec) == {"values"}:
        spec = spec["values"]
    if isinstance(spec, list):
        if not spec:
            raise ParamError(key, "[] is not allowed; allowed: a non-empty list of values")
        return Axis(key, values=_distinct(key, [coerce(probe, name, v, field=key) for v in spec]))
    if not isinstance(spec, Mapping) or "range" not in spec:
        raise ParamError(key, f"{spec!r} is not allowed; allowed: a list of values, or {{range: [LOW, HIGH]}} with step or num for a grid")
    extra = set(spec) - {"range", "step", "num", "log"}
    if extra:
        raise ParamError(f"{key}.{sorted(extra)[0]}", "unknown key; allowed: range, step, num, log")
    if name not in tunable_names(probe):
        coerce(probe, name, None, field=key)  # raises the usual "unknown parameter; allowed: ..." line
    p = probe.param[name]
    if not isinstance(p, param.Number):
        raise ParamError(key, "a range needs a numeric parameter; allowed: a list of values")
    rng = spec["range"]
    if not isinstance(rng, list) or len(rng) != 2:
        raise ParamError(f"{key}.range", f"{rng!r} is not allowed; allowed: [LOW, HIGH]")
    low, high = (coerce(probe, name, v, field=f"{key}.range") for v in rng)
    if not low < high:
        raise ParamError(f"{key}.range", f"{rng!r} is not allowed; allowed: [LOW, HIGH] with LOW < HIGH")
    log = _flag(f"{key}.log", spec.get("log", False))
    if log and low <= 0:
        raise ParamError(f"{key}.log", f"a log range needs LOW > 0; allowed: a range above 0, or log: false (LOW is {low!r})")
    integer = isinstance(p, param.Integer)
    step, num = spec.get("step"), spec.get("num")
    if step is not None and num is not None:
        raise ParamError(key, "step and num given; allowed: one of them")
    if step is None and num is None:
        if design == "grid":
            raise ParamError(key, "a range in a grid design needs step or num; allowed: {range: [LOW, HIGH], step: S} or num: N")
        return Axis(key, low=float(low), high=float(high), integer=integer, log=log)
    if step is not None:
        if log:
            raise ParamError(f"{key}.step", "step on a log range is not allowed; allowed: num: N for a log grid")
        if isinstance(step, bool) or not isinstance(step, int | float) or not step > 0:
            raise ParamError(f"{key}.step", f"{step!r} is not allowed; allowed: a number > 0")
        count = int(math.floor((high - low) / step + 1e-9)) + 1
        if count > 100_000:
            raise ParamError(f"{key}.step", f"{step!r} makes {count} values; allowed: at most 100000")
        raw = [low + i * step for i in range(count)]
    else:
        if isinstance(num, bool) or not isinstance(num, int) or not 2 <= num <= 100_000:
            raise ParamError(f"{key}.num", f"{num!r} is not allowed; allowed: an integer in [2, 100000]")
        raw = list(np.geomspace(low, high, num) if log else np.linspace(low, high, num))
    # round away float noise (0.1 + 2 * 0.1); integer parameters take the nearest integer
    values = [int(round(v)) if integer else float(round(float(v), 10)) for v in raw]
    return Axis(key, values=_distinct(key, [coerce(probe, name, v, field=key) for v in values]))


def _distinct(key: str, values: list[Any]) -> tuple[Any, ...]:
    seen = [json.dumps(v, sort_keys=True) for v in values]
    if len(set(seen)) != len(seen):
        raise ParamError(key, f"{values!r} repeats a value; allowed: distinct values")
    return tuple(values)


def _seeds(value: Any) -> list[int]:
    if isinstance(value, Mapping):
        extra = set(value) - {"count", "start"}
        count, start = value.get("count"), value.get("start", 1)
        if extra or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ParamError("seeds", f"{dict(value)!r} is not allowed; allowed: a list of integers, or {{count: N, start: S}} with N >= 1")
        value = list(range(start, start + count)) if isinstance(start, int) and not isinstance(start, bool) else [start]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise ParamError("seeds", f"{value!r} is not allowed; allowed: a non-empty list of integers, or {{count: N, start: S}}")
    probe = RunParams()
    seeds = [coerce(probe, "seed", s, field="seeds") for s in value]
    if len(set(seeds)) != len(seeds):
        raise ParamError("seeds", f"{list(value)!r} repeats a seed; allowed: distinct seeds")
    return seeds


def kpi_names(scenario: Scenario) -> dict[str, type]:
    """The figures a run of ``scenario``'s world reports in ``summary()`` (name -> int, float or str), as its world defines them."""
    out: dict[str, type] = {}
    for key, value in Simulation(scenario).summary().items():
        if key in _NOT_KPIS or isinstance(value, bool):
            continue
        if isinstance(value, int | np.integer):
            out[key] = int
        elif isinstance(value, float | np.floating):
            out[key] = float
        elif isinstance(value, str):
            out[key] = str
    return out


def check_kpis(kpis: Any, scenario: Scenario) -> tuple[str, ...]:
    """The KPIs to collect: named ones checked against the world's summary(), or every numeric figure when None."""
    known = kpi_names(scenario)
    if kpis is None:
        return tuple(k for k, t in known.items() if t is not str)
    if isinstance(kpis, str | bytes) or not isinstance(kpis, Sequence) or not kpis:
        raise ParamError("kpis", f"{kpis!r} is not allowed; allowed: a non-empty list from {', '.join(known)}")
    for k in kpis:
        if k not in known:
            raise ParamError("kpis", f"{k!r} is not a summary figure of this world; allowed: {', '.join(known)}")
    if len(set(kpis)) != len(kpis):
        raise ParamError("kpis", f"{list(kpis)!r} repeats a KPI; allowed: distinct names")
    return tuple(kpis)


def _until(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ParamError("until", f"{value!r} is not allowed; allowed: simulated seconds > 0, or leave it out for run.duration")
    return float(value)


def _fixed(value: Any, scenario: Scenario, parameters: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ParamError("fixed", "must be a mapping of section.NAME to one value")
    out = {}
    for key, v in value.items():
        if isinstance(parameters, Mapping) and key in parameters:
            raise ParamError(f"fixed.{key}", "is also in parameters; allowed: a parameter is either fixed or swept")
        probe, name = _section_probe(str(key), scenario, "fixed values")
        out[str(key)] = coerce(probe, name, v, field=f"fixed.{key}")
    return out


def _flag(field_name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParamError(field_name, f"{value!r} is not allowed; allowed: true or false")
    return value
