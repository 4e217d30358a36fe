"""The function world's sections: the platform (``faas``), one section per function slot (``fn1`` .. ``fn6``) and
its faults (``function_faults``).

A scenario names the slots it uses; a slot is a function deployment: its images (the deployment ranking: the
first that can be placed is used, as faas-sim's ``DeploymentRanking``), requests and concurrency, how its
requests are balanced, how long they take (the simulator), how it scales, and its request generator. Checks that
read files (images, traces) are in :func:`check_function_files`, run when a scenario is built.
"""

from __future__ import annotations

import math

import param

from engine.autoscaling.keepalive import KEEPALIVE_POLICIES
from engine.autoscaling.registry import FUNCTION_SCALERS
from engine.core.params import ParamError, Section
from engine.core.plugins import extend_selector
from engine.faas.measured import STARTUP_PROFILES, load_measurements
from engine.faas.simulators import SIMULATORS, FunctionSimulator
from engine.faas.slots import MAX_FUNCTIONS, SLOT_KEYS  # noqa: F401 (MAX_FUNCTIONS: re-exported, its home was here)
from engine.faas.traces import load_function_trace
from engine.workload.generators import REQUEST_GENERATORS
from engine.workload.requests import ARRIVALS

#: Scalers that need at least one replica to measure (they never scale a function up from zero).
NEEDS_ONE = ("rps_threshold", "average_rps", "queue_per_replica", "hpa", "queue_drain")


class FaasParams(Section):
    """The function platform: gateway, concurrency model, start-up model, metrics."""

    key = "faas"

    gateway_queue_limit = param.Integer(
        1000,
        bounds=(0, 10_000_000),
        doc="Requests the gateway holds per function while no replica is ready (0: unbounded); beyond it a request is rejected (reason queue_full).",
    )
    concurrency_model = param.Selector(
        default="faas_sim",
        objects=["faas_sim", "linear"],
        doc="How concurrent requests on one replica slow each other: faas_sim (factor max(1, busy/threads), which is 1 whenever a "
        "thread is free, so never; faas-sim's as shipped) or linear (1 + concurrency_slowdown x the other requests in service at its start).",
    )
    concurrency_slowdown = param.Number(
        0.5, bounds=(0.0, 10.0), step=0.05, doc="linear model: added execution time per other request in service, as a share."
    )
    startup_model = param.Selector(
        default="faas_sim",
        objects=["faas_sim", "pull_then_warm"],
        doc="Replica start-up after the image pull: faas_sim (HackedFittedStartupTimeOracle: an image-absent draw minus the image's "
        "transfer at 100 Mbit/s, at least 0) or pull_then_warm (the image-present draw: the pull is already simulated).",
    )
    metrics_window = param.Number(
        30.0, bounds=(1.0, 3600.0), step=5.0, doc="Seconds over which a replica's cpu use is averaged for the HPA (metrics-server)."
    )
    record_utilization = param.Boolean(True, doc="Sample cpu, memory and gpu per node and per replica every run.sample_interval.")


class FunctionParams(Section):
    """One function deployment (a slot): images, requests, concurrency, balancing, simulator, scaler, requests."""

    key = "fn"

    function = param.String("", doc="The function's name (empty: the slot's key).")
    images = param.List(
        default=["faas-workloads/python-pi"],
        item_type=str,
        doc="The deployment ranking: images of data/faas-sim/images.csv, tried in order (an -gpu image requests GPUs, a -tpu image a coral TPU).",
    )
    cpu_millis = param.Integer(1000, bounds=(1, 256000), doc="cpu request of a replica, millicores.")
    memory_mib = param.Integer(256, bounds=(1, 1048576), doc="memory request of a replica, MiB (a trace's memory file overrides it).")
    gpus = param.Number(1.0, bounds=(0.0, 8.0), step=0.5, doc="GPU request of a replica of a -gpu image.")
    concurrency = param.Integer(
        4, bounds=(0, 4096), doc="Worker threads of a replica's watchdog (requests served at once); 0: unbounded forking."
    )
    load_balancer = param.Selector(
        default="round_robin", objects=["round_robin", "least_outstanding"], doc="How the gateway spreads requests over ready replicas."
    )
    simulator = param.Selector(
        default="measured",
        objects=list(SIMULATORS.builtins),
        doc="Function simulator: " + "; ".join(f"{k}: {c.doc}" for k, c in SIMULATORS.builtin_entries().items()) + "; and any plugin.",
    )
    execution_seconds = param.Number(1.0, bounds=(0.0, 86400.0), step=0.1, doc="fixed simulator: seconds per request.")
    startup_seconds = param.Number(
        0.0, bounds=(0.0, 3600.0), step=0.5, doc="fixed simulator: seconds a replica takes to start after its pull."
    )
    startup_profile = param.Selector(
        default=STARTUP_PROFILES[0], objects=STARTUP_PROFILES, doc="Measured start-up the replicas follow (data/faas-sim/startup.csv)."
    )
    data_in_mib = param.Number(0.0, bounds=(0.0, 100000.0), step=1.0, doc="MiB each request reads from storage (data-locality label).")
    data_out_mib = param.Number(0.0, bounds=(0.0, 100000.0), step=1.0, doc="MiB each request writes to storage.")
    # -- scaling
    scaler = param.Selector(
        default="none",
        objects=list(FUNCTION_SCALERS.builtins),
        doc="; ".join(f"{k}: {e.doc}" for k, e in FUNCTION_SCALERS.builtin_entries().items()) + "; and any plugin registered.",
    )
    min_replicas = param.Integer(1, bounds=(0, 1000), doc="Fewest replicas (0 lets kpa, keda, scale_to_zero and per_request reach zero).")
    max_replicas = param.Integer(20, bounds=(1, 1000), doc="Most replicas (per_request: the concurrency limit on instances).")
    scale_interval = param.Number(
        0.0, bounds=(0.0, 3600.0), step=1.0, doc="Seconds between two scaler rounds (0: the scaler's own default)."
    )
    target_rps = param.Number(20.0, bounds=(0.001, 1e6), step=1.0, doc="rps_threshold: requests per second at which it scales up.")
    scale_factor = param.Integer(
        1, bounds=(0, 100), doc="rps_threshold: step in % of max_replicas (faas-sim's scale_factor; int(1% x 20) = 0)."
    )
    target_average_rps = param.Number(
        200.0, bounds=(0.001, 1e6), step=1.0, doc="average_rps: invocations per replica (per window in faas-sim)."
    )
    target_queue = param.Number(75.0, bounds=(0.001, 1e6), step=1.0, doc="queue_per_replica: median requests waiting per replica.")
    tolerance = param.Number(0.1, bounds=(0.0, 1.0), step=0.01, doc="average_rps / queue_per_replica: no scaling within this ratio of 1.")
    target_utilization = param.Integer(50, bounds=(1, 100), doc="hpa: target cpu use in % of the cpu request.")
    hpa_metric = param.Selector(
        default="cpu",
        objects=["cpu", "requests"],
        doc="hpa: cpu (use of the request, from the resource model) or requests per second per replica.",
    )
    target_requests_per_replica = param.Number(
        10.0, bounds=(0.001, 1e6), step=1.0, doc="hpa with hpa_metric requests: requests per second per replica (AverageValue)."
    )
    target_concurrency = param.Integer(
        0, bounds=(0, 4096), doc="kpa: containerConcurrency (0: the replica's worker threads); target = this x kpa.target_percentage."
    )
    target_keda_queue = param.Number(20.0, bounds=(0.001, 1e6), step=1.0, doc="keda: waiting requests per replica (AverageValue).")
    drain_band_low = param.Number(10.0, bounds=(0.0, 3600.0), step=1.0, doc="queue_drain: lower end of the drain-time band (s).")
    drain_band_high = param.Number(30.0, bounds=(0.0, 3600.0), step=1.0, doc="queue_drain: upper end of the drain-time band (s).")
    idle_timeout = param.Number(
        300.0, bounds=(0.0, 86400.0), step=10.0, doc="scale_to_zero: idle seconds before zero; per_request: before an instance expires."
    )
    keep_alive = param.Selector(
        default="fixed",
        objects=list(KEEPALIVE_POLICIES.builtins),
        doc="scale_to_zero: fixed (zero after idle_timeout) or hybrid (Shahrad et al. 2020: pre-warm and keep-alive windows "
        "from a histogram of this function's idle times).",
    )
    keep_alive_range = param.Integer(
        240, bounds=(1, 20160), softbounds=(10, 480), doc="scale_to_zero with keep_alive hybrid: the idle-time histogram's range (minutes)."
    )
    faas_sim_exact = param.Boolean(
        True, doc="Reproduce faas-sim's scaler arithmetic (step 0 by default, per-window averages, pending ignored)."
    )
    # -- requests
    rate = param.Number(
        10.0, bounds=(0.0, 1e6), step=1.0, doc="Requests per second (the base of every shape; for a trace a multiple of its intensity)."
    )
    arrival = param.Selector(
        default="poisson",
        objects=list(ARRIVALS),
        doc="Arrival process: poisson, constant (evenly spaced), trace replay, or a request generator plugin.",
    )
    diurnal_amplitude = param.Number(0.0, bounds=(0.0, 1.0), step=0.05, doc="Diurnal sine: relative swing of the rate (0: off).")
    diurnal_period = param.Number(3600.0, bounds=(60.0, 604800.0), step=60.0, doc="Diurnal sine: seconds per cycle.")
    steps = param.List(default=[], doc="Steps: [time s, multiple] pairs, each holding until the next (empty: off).")
    burst_factor = param.Number(1.0, bounds=(1.0, 1000.0), step=0.5, doc="Bursts: rate multiple during a burst (1: off).")
    burst_every = param.Number(600.0, bounds=(1.0, 86400.0), step=10.0, doc="Bursts: seconds between burst starts.")
    burst_duration = param.Number(60.0, bounds=(1.0, 86400.0), step=5.0, doc="Bursts: seconds a burst lasts (the end of each period).")
    walk_sigma = param.Number(
        0.0, bounds=(0.0, 10.0), step=0.05, doc="Gaussian random walk of the rate multiple: sigma per 10 s window (0: off)."
    )
    walk_max = param.Number(3.0, bounds=(0.0, 1000.0), step=0.5, doc="Random walk: the multiple stays in [0, walk_max].")
    trace_file = param.String(
        "", doc="trace: the invocations file (azure2019 per-minute counts or azure2021 per invocation), relative to data/traces."
    )
    trace_format = param.Selector(default="azure2019", objects=["azure2019", "azure2021"], doc="trace: the file's format.")
    trace_function = param.String(
        "", doc="trace: the trace function(s) mapped onto this deployment (HashFunction prefix or '#row'; 2021: func or app prefix)."
    )
    trace_speedup = param.Number(1.0, bounds=(0.001, 1e6), step=1.0, doc="trace: trace seconds replayed per simulated second.")
    trace_loop = param.Boolean(False, doc="trace: start over at the end.")
    trace_durations_file = param.String(
        "", doc="trace simulator, azure2019: the durations file (empty: durations.csv beside the invocations)."
    )
    trace_memory_file = param.String("", doc="azure2019: a memory file; the replica's memory request becomes the app's AverageAllocatedMb.")

    def check(self) -> None:
        key = type(self).key
        if self.min_replicas > self.max_replicas:
            raise ParamError(
                f"{key}.min_replicas", f"{self.min_replicas} exceeds max_replicas ({self.max_replicas}); allowed: <= max_replicas"
            )
        if self.scaler in NEEDS_ONE and self.min_replicas < 1:
            raise ParamError(
                f"{key}.min_replicas",
                f"the {self.scaler} scaler needs a replica to measure; allowed: >= 1 (or scaler kpa, keda, scale_to_zero, per_request)",
            )
        if not self.images:
            raise ParamError(f"{key}.images", "empty; allowed: at least one image of data/faas-sim/images.csv")
        if self.burst_duration > self.burst_every:
            raise ParamError(
                f"{key}.burst_duration", f"{self.burst_duration:g} exceeds burst_every ({self.burst_every:g}); allowed: <= burst_every"
            )
        if self.drain_band_low >= self.drain_band_high:
            raise ParamError(f"{key}.drain_band_low", "must be below drain_band_high; allowed: drain_band_low < drain_band_high")
        last = -math.inf
        for i, pair in enumerate(self.steps):
            ok = isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(v, int | float) for v in pair)
            if not ok or pair[0] < 0 or pair[1] < 0 or pair[0] <= last:
                raise ParamError(
                    f"{key}.steps[{i}]", f"{pair!r} is not allowed; allowed: [time, multiple] with times >= 0 increasing, multiples >= 0"
                )
            last = pair[0]
        if (self.arrival == "trace" or self.simulator == "trace") and not self.trace_file.strip():
            raise ParamError(
                f"{key}.trace_file",
                "the trace arrival and simulator need a trace file; allowed: a CSV path relative to data/traces or absolute",
            )

    @property
    def label(self) -> str:
        """The function's name (its slot's key when unnamed)."""
        return self.function or type(self).key


FUNCTION_SCALERS.on_register(lambda name, plugin: extend_selector(FunctionParams, "scaler", name))
REQUEST_GENERATORS.on_register(lambda name, plugin: extend_selector(FunctionParams, "arrival", name))
KEEPALIVE_POLICIES.on_register(lambda name, plugin: extend_selector(FunctionParams, "keep_alive", name))

#: The function slots, one section class per key (``fn1`` .. ``fn6``), an explicit table.
FUNCTION_SLOTS: dict[str, type[FunctionParams]] = {
    key: type(f"Function{i}Params", (FunctionParams,), {"key": key, "__doc__": f"Function slot {i}: one deployment."})
    for i, key in enumerate(SLOT_KEYS, start=1)
}


def check_function_files(section: Section) -> None:
    """The files a function slot names: its images are measured, its traces readable (raises ParamError naming the field)."""
    key = type(section).key
    known = load_measurements().image_sizes
    for i, image in enumerate(section.images):
        if image not in known:
            raise ParamError(f"{key}.images[{i}]", f"{image!r} is not in data/faas-sim/images.csv; allowed: {', '.join(sorted(known))}")
    if section.arrival == "trace" or section.simulator == "trace" or section.trace_memory_file:
        load_function_trace(section)


class FunctionFaultParams(Section):
    """Faults of the function world at given times or seeded random rates."""

    key = "function_faults"

    node_drain_at = param.List(
        default=[], item_type=(int, float), doc="Simulated times (s) at which the busiest node is cordoned and drained."
    )
    node_drain_rate = param.Number(0.0, bounds=(0.0, 100.0), step=0.1, doc="Random node drains per simulated hour.")

    def check(self) -> None:
        for i, t in enumerate(self.node_drain_at):
            if t < 0:
                raise ParamError(f"function_faults.node_drain_at[{i}]", f"{t!r} is not allowed; allowed: times >= 0")

    def scheduled(self) -> list[tuple[str, float, dict]]:
        return [("node_drain", float(t), {}) for t in self.node_drain_at]

    def random(self) -> list[tuple[str, float, bool]]:
        return [("node_drain", self.node_drain_rate, False)]


def register_simulator(name: str, cls: type[FunctionSimulator]) -> None:
    """Add a function simulator to the table (and so to every function slot's ``simulator`` choices)."""
    SIMULATORS.register(cls, name=name)


SIMULATORS.on_register(lambda name, plugin: extend_selector(FunctionParams, "simulator", name))
