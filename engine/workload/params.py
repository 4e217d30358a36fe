"""The workload section: job arrivals at the master's queue and job service times.

No file is read here: a trace is checked when a scenario is built (:func:`engine.workload.traces.check_trace_file`,
which loads the trace readers only for a section that reads a trace).
"""

from __future__ import annotations

import math

import param

from engine.core.params import ParamError, Section
from engine.core.plugins import extend_selector
from engine.workload.generators import BUILTIN_PATTERNS, REQUEST_GENERATORS

#: Most arrivals per second any pattern may ask for (rate x its peak multiple): beyond it a window's draw cannot be held.
MAX_RATE = 1_000_000.0

WORKLOAD_PATTERNS = list(BUILTIN_PATTERNS)  # request generator plugins join the selector when registered
TRACE_FORMATS = ["azure2019", "azure2021", "openb"]


class WorkloadParams(Section):
    """Job arrivals at the master's queue and job service times."""

    key = "workload"

    pattern = param.Selector(
        default="poisson",
        objects=WORKLOAD_PATTERNS,
        label="Arrival pattern",
        doc="Arrival process (request generator plugins, engine.plugins.register_request_generator, join the built-ins).",
    )
    rate = param.Number(
        4.0,
        bounds=(0.0, 100000.0),
        step=0.5,
        label="Arrival rate (jobs/s)",
        softbounds=(0, 50),
        doc="Mean arrivals per second (the base rate of every pattern); for the trace pattern a multiple of the trace's intensity (1 replays it as recorded).",
    )
    service_time = param.Number(
        5.0,
        bounds=(0.001, 86400.0),
        step=0.5,
        label="Mean service time (s)",
        softbounds=(0.1, 60),
        doc="Mean seconds a job needs on a reference-speed worker thread.",
    )
    service_cv = param.Number(
        0.5,
        bounds=(0.0, 5.0),
        step=0.05,
        label="Service time variability (CV)",
        doc="Coefficient of variation of service times (gamma; 0 is fixed, 1 exponential).",
    )
    diurnal_amplitude = param.Number(
        0.6, bounds=(0.0, 1.0), step=0.05, label="Diurnal swing", doc="Diurnal pattern: relative swing of the rate around its mean."
    )
    diurnal_period = param.Number(
        3600.0,
        bounds=(60.0, 604800.0),
        step=60.0,
        label="Diurnal period (s)",
        softbounds=(60, 86400),
        doc="Diurnal pattern: seconds per cycle.",
    )
    steps = param.List(
        default=[[0.0, 1.0], [600.0, 3.0], [1200.0, 1.0]],
        label="Rate steps [time s, multiple]",
        doc="Steps pattern: [time in s, multiple of rate] pairs; each holds until the next.",
    )
    burst_every = param.Number(
        600.0,
        bounds=(1.0, 86400.0),
        step=10.0,
        label="Time between bursts (s)",
        softbounds=(10, 3600),
        doc="Bursts pattern: seconds between burst starts.",
    )
    burst_duration = param.Number(
        60.0, bounds=(1.0, 86400.0), step=5.0, label="Burst length (s)", softbounds=(1, 600), doc="Bursts pattern: seconds a burst lasts."
    )
    burst_factor = param.Number(
        5.0,
        bounds=(1.0, 1000.0),
        step=0.5,
        label="Burst rate multiple",
        softbounds=(1, 50),
        doc="Bursts pattern: rate multiple during a burst.",
    )
    trace_file = param.String(
        "",
        label="Trace file",
        doc="Trace pattern: the trace CSV, relative to data/traces or absolute (e.g. azure-functions-2019/invocations.csv).",
    )
    trace_format = param.Selector(
        default="azure2019",
        objects=TRACE_FORMATS,
        label="Trace format",
        doc="Trace pattern: azure2019 (per-minute counts), azure2021 (per invocation: end_timestamp - duration) or openb (pod creation_time).",
    )
    trace_function = param.String(
        "",
        label="Trace part",
        doc="Trace pattern: part of the trace to replay, '' for all; azure2019 a HashFunction prefix or row3 / '#3', azure2021 a func or app prefix, openb a qos class; commas sum several.",
    )
    trace_speedup = param.Number(
        1.0,
        bounds=(0.001, 1000000.0),
        step=1.0,
        label="Trace speed-up",
        softbounds=(1, 100),
        doc="Trace pattern: trace seconds replayed per simulated second (12 plays a day in 2 hours).",
    )
    trace_loop = param.Boolean(
        False, label="Loop the trace", doc="Trace pattern: start the trace over when it ends (otherwise arrivals stop)."
    )
    trace_service = param.Boolean(
        False,
        label="Service times from the trace",
        doc="Take service times from the trace's durations instead of service_time/service_cv (azure2019 and azure2021 only).",
    )

    def check(self) -> None:
        steps = self.steps
        last = -math.inf
        for i, pair in enumerate(steps):
            numbers = (
                isinstance(pair, list | tuple)
                and len(pair) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in pair)
            )
            if not numbers or not all(math.isfinite(v) for v in pair):
                raise ParamError(f"workload.steps[{i}]", f"{pair!r} is not allowed; allowed: [time, rate multiple], finite numbers")
            t, m = pair
            if t < 0 or m < 0 or t <= last:
                raise ParamError(f"workload.steps[{i}]", f"{pair!r} is not allowed; allowed: times >= 0 increasing, multiples >= 0")
            if m * self.rate > MAX_RATE:
                raise ParamError(
                    f"workload.steps[{i}]",
                    f"multiple {m:g} x rate {self.rate:g} = {m * self.rate:.3g} arrivals/s; allowed: at most {MAX_RATE:,.0f} arrivals/s",
                )
            last = t
        if self.pattern == "bursts" and self.burst_factor * self.rate > MAX_RATE:
            raise ParamError(
                "workload.burst_factor",
                f"{self.burst_factor:g} x rate {self.rate:g} = {self.burst_factor * self.rate:.3g} arrivals/s; allowed: at most {MAX_RATE:,.0f} arrivals/s",
            )
        if self.burst_duration > self.burst_every:
            raise ParamError(
                "workload.burst_duration",
                f"{self.burst_duration:g} exceeds burst_every ({self.burst_every:g}); allowed: <= burst_every",
            )


def reads_trace(params: WorkloadParams) -> bool:
    """Does the section read a trace file (the trace pattern, or service times from a trace)?"""
    return params.pattern == "trace" or params.trace_service


REQUEST_GENERATORS.on_register(lambda name, plugin: extend_selector(WorkloadParams, "pattern", name))
