"""Every tunable of the simulation, declared once as a ``param`` parameter.

The engine reads these classes, the dashboard renders them, scenario files and recordings name
their parameters (``section.NAME``), and validation (bounds and cross-field rules) comes from them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import param


class ParamError(ValueError):
    """A parameter value or combination that is not allowed; names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Section(param.Parameterized):
    """A group of tunables with cross-field rules checked by :meth:`check`."""

    def check(self) -> None:
        """Raise :class:`ParamError` when the current combination is not allowed."""

    def values(self) -> dict[str, Any]:
        """The tunables as plain values (lists copied), in declaration order."""
        out = {}
        for name in tunable_names(self):
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, list) else value
        return out


class Mirror:
    """Plain attributes mirroring a section's values, kept current by a param watcher.

    For hot paths: reading a param attribute costs microseconds (descriptor and dynamic-value
    checks), reading a mirror's attribute tens of nanoseconds. Changes still apply at once.
    """

    def __init__(self, section: Section):
        self.__dict__.update(section.values())
        section.param.watch(self._update, tunable_names(section))

    def _update(self, *events: Any) -> None:
        for event in events:
            setattr(self, event.name, event.new)


def tunable_names(obj: param.Parameterized | type[param.Parameterized]) -> list[str]:
    """Names of the user-facing parameters of a section (everything but ``name``)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return [n for n in cls.param if n != "name"]


def allowed(p: param.Parameter) -> str:
    """Human description of what a parameter accepts, for error messages."""
    if isinstance(p, param.Selector):
        return "one of " + ", ".join(repr(o) for o in p.objects)
    if isinstance(p, param.Boolean):
        return "true or false"
    if isinstance(p, param.Number):
        lo, hi = p.bounds or (None, None)
        kind = "an integer" if isinstance(p, param.Integer) else "a number"
        if lo is not None and hi is not None:
            return f"{kind} in [{lo}, {hi}]"
        if lo is not None:
            return f"{kind} >= {lo}"
        if hi is not None:
            return f"{kind} <= {hi}"
        return kind
    if isinstance(p, param.List):
        return "a list" + (f" of {p.item_type.__name__}" if p.item_type else "")
    if isinstance(p, param.String):
        return "a string"
    return type(p).__name__


def coerce(section: Section, name: str, value: Any, field: str | None = None) -> Any:
    """Convert ``value`` to what parameter ``name`` accepts, or raise a :class:`ParamError`."""
    field = field or f"{section_key(section)}.{name}"
    if name not in tunable_names(section):
        raise ParamError(field, f"unknown parameter; allowed: {', '.join(tunable_names(section))}")
    p = section.param[name]
    try:
        if isinstance(p, param.Boolean):
            if not isinstance(value, bool):
                raise TypeError
        elif isinstance(p, param.Integer):
            if isinstance(value, bool):
                raise TypeError
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, int):
                value = int(str(value))
        elif isinstance(p, param.Number):
            if isinstance(value, bool):
                raise TypeError
            value = float(value)
            if not math.isfinite(value):
                raise ValueError
        elif isinstance(p, param.Selector):
            if value not in p.objects:
                raise ValueError
        elif isinstance(p, param.List):
            if not isinstance(value, list | tuple):
                raise TypeError
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        elif isinstance(p, param.String):
            if not isinstance(value, str):
                raise TypeError
    except (TypeError, ValueError):
        raise ParamError(field, f"{value!r} is not allowed; allowed: {allowed(p)}") from None
    if isinstance(p, param.Number):
        lo, hi = p.bounds or (None, None)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamError(field, f"{value!r} is out of range; allowed: {allowed(p)}")
    return value


def section_key(section: Section | type[Section]) -> str:
    cls = section if isinstance(section, type) else type(section)
    return getattr(cls, "_key", cls.__name__)


class AutoscalerParams(Section):
    """The queue-drain VM autoscaler (names as in the original controller)."""

    _key = "autoscaler"

    DECISION_INTERVAL = param.Number(10.0, bounds=(1.0, 600.0), step=1.0, doc="Seconds between two decisions.")
    MIN_MEASURE_LOAD_HB = param.Integer(3, bounds=(1, 100), doc="Heartbeats needed before load is measured.")
    MAX_HB_HISTORY = param.Integer(10, bounds=(1, 1000), doc="Heartbeats kept per VM.")
    MIN_AVG_TIME = param.Number(
        10.0, bounds=(0.0, 3600.0), step=1.0, doc="Lower end of the drain band: below it the queue drains too fast (scale in)."
    )
    MAX_AVG_TIME = param.Number(
        30.0, bounds=(0.0, 3600.0), step=1.0, doc="Upper end of the drain band: above it the queue drains too slowly (scale out)."
    )
    MAX_WORKERS = param.Integer(20, bounds=(1, 1000), doc="Most worker VMs that may exist at once.")
    MAX_STARTUP_TIME = param.Number(300.0, bounds=(1.0, 7200.0), step=10.0, doc="Seconds a VM may take to boot and send its first heartbeat.")
    MAX_TRANSITION_TIME = param.Number(60.0, bounds=(1.0, 3600.0), step=5.0, doc="Seconds an app may take to reach RUNNING after INIT.")
    MAX_SHUTDOWN_TIME = param.Number(300.0, bounds=(1.0, 7200.0), step=10.0, doc="Seconds a worker may take to drain after SHUTDOWN.")
    MAX_AVG_LOAD = param.Number(0.8, bounds=(0.0, 10.0), step=0.05, doc="Memory/disk load above which load is the max of cpu, mem, disk.")

    def check(self) -> None:
        if not self.MIN_AVG_TIME < self.MAX_AVG_TIME:
            raise ParamError(
                "autoscaler.MIN_AVG_TIME",
                f"must be below MAX_AVG_TIME ({self.MIN_AVG_TIME:g} >= {self.MAX_AVG_TIME:g}); allowed: MIN_AVG_TIME < MAX_AVG_TIME",
            )
        if self.MIN_MEASURE_LOAD_HB > self.MAX_HB_HISTORY:
            raise ParamError(
                "autoscaler.MIN_MEASURE_LOAD_HB",
                f"{self.MIN_MEASURE_LOAD_HB} exceeds MAX_HB_HISTORY ({self.MAX_HB_HISTORY}); allowed: <= MAX_HB_HISTORY",
            )


class PlatformParams(Section):
    """The cloud and the application around the autoscaler: delays, threads, heartbeats."""

    _key = "platform"

    boot_time = param.Number(40.0, bounds=(0.0, 3600.0), step=1.0, doc="Mean seconds for a created VM to boot (PENDING to ACTIVE).")
    resume_time = param.Number(8.0, bounds=(0.0, 3600.0), step=1.0, doc="Mean seconds for a suspended VM to come back ACTIVE.")
    suspend_time = param.Number(3.0, bounds=(0.0, 600.0), step=1.0, doc="Mean seconds for a VM to suspend.")
    app_start_time = param.Number(2.0, bounds=(0.0, 600.0), step=0.5, doc="Mean seconds from ACTIVE until the app daemon is READY.")
    app_init_time = param.Number(3.0, bounds=(0.0, 600.0), step=0.5, doc="Mean seconds an app spends in INIT before RUNNING.")
    delay_cv = param.Number(0.2, bounds=(0.0, 2.0), step=0.05, doc="Coefficient of variation of every delay above (gamma distributed; 0 is fixed).")
    boot_failure_prob = param.Number(0.0, bounds=(0.0, 1.0), step=0.01, doc="Probability that a created VM fails to boot (FAILED).")
    worker_threads = param.Integer(4, bounds=(1, 256), doc="Worker threads per worker VM (jobs served at once).")
    heartbeat_interval = param.Number(2.0, bounds=(0.1, 600.0), step=0.5, doc="Seconds between two heartbeats of a running app.")
    heartbeat_loss = param.Number(0.0, bounds=(0.0, 1.0), step=0.01, doc="Probability that a heartbeat or app command datagram is lost.")
    app_command_latency = param.Number(0.05, bounds=(0.0, 60.0), step=0.05, doc="Seconds an app command datagram takes to arrive.")

    def check(self) -> None:
        pass


WORKLOAD_PATTERNS = ["constant", "poisson", "diurnal", "steps", "bursts", "trace"]
TRACE_FORMATS = ["azure2019", "azure2021", "openb"]


class WorkloadParams(Section):
    """Job arrivals at the master's queue and job service times."""

    _key = "workload"

    pattern = param.Selector(default="poisson", objects=WORKLOAD_PATTERNS, doc="Arrival process.")
    rate = param.Number(
        4.0,
        bounds=(0.0, 100000.0),
        step=0.5,
        doc="Mean arrivals per second (the base rate of every pattern); for the trace pattern a multiple of the trace's intensity (1 replays it as recorded).",
    )
    service_time = param.Number(5.0, bounds=(0.001, 86400.0), step=0.5, doc="Mean seconds a job needs on a reference-speed worker thread.")
    service_cv = param.Number(0.5, bounds=(0.0, 5.0), step=0.05, doc="Coefficient of variation of service times (gamma; 0 is fixed, 1 exponential).")
    diurnal_amplitude = param.Number(0.6, bounds=(0.0, 1.0), step=0.05, doc="Diurnal pattern: relative swing of the rate around its mean.")
    diurnal_period = param.Number(3600.0, bounds=(60.0, 604800.0), step=60.0, doc="Diurnal pattern: seconds per cycle.")
    steps = param.List(
        default=[[0.0, 1.0], [600.0, 3.0], [1200.0, 1.0]],
        doc="Steps pattern: [time in s, multiple of rate] pairs; each holds until the next.",
    )
    burst_every = param.Number(600.0, bounds=(1.0, 86400.0), step=10.0, doc="Bursts pattern: seconds between burst starts.")
    burst_duration = param.Number(60.0, bounds=(1.0, 86400.0), step=5.0, doc="Bursts pattern: seconds a burst lasts.")
    burst_factor = param.Number(5.0, bounds=(1.0, 1000.0), step=0.5, doc="Bursts pattern: rate multiple during a burst.")
    trace_file = param.String(
        "",
        doc="Trace pattern: the trace CSV, relative to data/traces or absolute (e.g. azure-functions-2019/invocations.csv).",
    )
    trace_format = param.Selector(
        default="azure2019",
        objects=TRACE_FORMATS,
        doc="Trace pattern: azure2019 (per-minute counts), azure2021 (per invocation: end_timestamp - duration) or openb (pod creation_time).",
    )
    trace_function = param.String(
        "",
        doc="Trace pattern: part of the trace to replay, '' for all; azure2019 a HashFunction prefix or row3 / '#3', azure2021 a func or app prefix, openb a qos class; commas sum several.",
    )
    trace_speedup = param.Number(
        1.0, bounds=(0.001, 1000000.0), step=1.0, doc="Trace pattern: trace seconds replayed per simulated second (12 plays a day in 2 hours)."
    )
    trace_loop = param.Boolean(False, doc="Trace pattern: start the trace over when it ends (otherwise arrivals stop).")
    trace_service = param.Boolean(
        False, doc="Take service times from the trace's durations instead of service_time/service_cv (azure2019 and azure2021 only)."
    )

    def check(self) -> None:
        steps = self.steps
        last = -math.inf
        for i, pair in enumerate(steps):
            if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(v, int | float) for v in pair)):
                raise ParamError(f"workload.steps[{i}]", f"{pair!r} is not allowed; allowed: [time, rate multiple] numbers")
            t, m = pair
            if t < 0 or m < 0 or t <= last:
                raise ParamError(f"workload.steps[{i}]", f"{pair!r} is not allowed; allowed: times >= 0 increasing, multiples >= 0")
            last = t
        if self.burst_duration > self.burst_every:
            raise ParamError(
                "workload.burst_duration",
                f"{self.burst_duration:g} exceeds burst_every ({self.burst_every:g}); allowed: <= burst_every",
            )
        if self.pattern == "trace" or self.trace_service:
            self._check_trace()

    def _check_trace(self) -> None:
        """The trace pattern and trace_service need a readable trace (loaded once, then cached)."""
        from . import traces  # here: traces imports this module

        use = "the trace pattern" if self.pattern == "trace" else "trace_service"
        if not self.trace_file.strip():
            raise ParamError("workload.trace_file", f"{use} needs a trace file; allowed: a CSV path relative to data/traces or absolute")
        path = traces.resolve_trace_path(self.trace_file)
        if not path.is_file():
            raise ParamError("workload.trace_file", f"{path}: no such file; allowed: a CSV path relative to {traces.TRACE_DIR} or absolute")
        if self.pattern == "trace":
            traces.load_trace(self.trace_file, self.trace_format, self.trace_function)
        if self.trace_service:
            traces.load_durations(self.trace_file, self.trace_format, self.trace_function)


class FaultParams(Section):
    """Faults at given simulated times or at seeded random rates."""

    _key = "faults"

    master_crash_at = param.List(default=[], item_type=(int, float), doc="Simulated times (s) at which the master VM crashes.")
    worker_crash_at = param.List(default=[], item_type=(int, float), doc="Simulated times (s) at which a random worker VM crashes.")
    heartbeat_outages = param.List(default=[], doc="[start, duration] pairs (s) during which every heartbeat is lost.")
    master_crash_rate = param.Number(0.0, bounds=(0.0, 100.0), step=0.1, doc="Random master crashes per simulated hour.")
    worker_crash_rate = param.Number(0.0, bounds=(0.0, 100.0), step=0.1, doc="Random crashes per worker VM per simulated hour.")

    def check(self) -> None:
        for i, pair in enumerate(self.heartbeat_outages):
            if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(v, int | float) for v in pair)) or pair[0] < 0 or pair[1] <= 0:
                raise ParamError(f"faults.heartbeat_outages[{i}]", f"{pair!r} is not allowed; allowed: [start >= 0, duration > 0]")
        for name in ("master_crash_at", "worker_crash_at"):
            for i, t in enumerate(getattr(self, name)):
                if t < 0:
                    raise ParamError(f"faults.{name}[{i}]", f"{t!r} is not allowed; allowed: times >= 0")


class RunParams(Section):
    """How a run is driven and recorded."""

    _key = "run"

    seed = param.Integer(1, bounds=(0, 2**63 - 1), doc="Seed of the one random generator every component draws from.")
    duration = param.Number(1800.0, bounds=(1.0, 30 * 86400.0), step=60.0, doc="Simulated seconds a headless run covers.")
    sample_interval = param.Number(5.0, bounds=(0.1, 3600.0), step=0.5, doc="Simulated seconds between two recorder samples.")
    record_jobs = param.Boolean(False, doc="Keep one row per job (memory grows with the number of jobs).")


SECTION_CLASSES: dict[str, type[Section]] = {
    cls._key: cls for cls in (RunParams, AutoscalerParams, PlatformParams, WorkloadParams, FaultParams)
}


def register_section(cls: type[Section]) -> type[Section]:
    """Add a section class (e.g. the scheduler's or the cluster's) to the scenario vocabulary."""
    SECTION_CLASSES[cls._key] = cls
    return cls


def split_key(key: str) -> tuple[str, str]:
    """``"autoscaler.MAX_WORKERS"`` -> ``("autoscaler", "MAX_WORKERS")``; a bare name is looked up."""
    if "." in key:
        section, name = key.split(".", 1)
        if section not in SECTION_CLASSES:
            raise ParamError(key, f"unknown section {section!r}; allowed: {', '.join(SECTION_CLASSES)}")
        return section, name
    owners = [s for s, cls in SECTION_CLASSES.items() if key in tunable_names(cls)]
    if len(owners) != 1:
        raise ParamError(key, "unknown parameter" if not owners else f"ambiguous; use one of {', '.join(f'{o}.{key}' for o in owners)}")
    return owners[0], key


def apply_checked(sections: Mapping[str, Section], changes: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Apply ``{"section.NAME": value}`` to ``sections`` atomically.

    Every value is coerced and range-checked and the cross-field rules of each touched section are
    checked on the combined result; on any error nothing changes and a :class:`ParamError` is raised.
    Returns the coerced changes keyed by full name.
    """
    items = list(changes.items()) if isinstance(changes, Mapping) else list(changes)
    staged: dict[str, dict[str, Any]] = {}
    applied: dict[str, Any] = {}
    for key, value in items:
        sec, name = split_key(key)
        if sec not in sections:
            raise ParamError(key, f"section {sec!r} is not part of this simulation")
        value = coerce(sections[sec], name, value, field=f"{sec}.{name}")
        staged.setdefault(sec, {})[name] = value
        applied[f"{sec}.{name}"] = value
    for sec, vals in staged.items():
        trial = type(sections[sec])(**{**sections[sec].values(), **vals})
        trial.check()
    for sec, vals in staged.items():
        sections[sec].param.update(**vals)
    return applied
