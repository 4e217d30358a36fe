"""What a user interface needs to know of a world, declared as plain data next to the world in the world table.

A dashboard (or any other front end) reads these rows and never names a world's columns itself: the KPI row
(which column of which table, how it is summarised, its label and format), the faults a user can inject (with
their arguments), the tables a view reads, and the views to show by default. No UI imports: these are values.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.nodescaling.slots import GROUP_KEYS

#: How a KPI summarises its column, from the rows recorded so far.
KPI_SUMMARIES = {
    "last": "the newest row's value",
    "last_valid": "the newest non-missing value",
    "sum_latest": "the sum over the rows of the newest sample time (a per-function table: all functions)",
    "max_latest": "the largest value among the rows of the newest sample time",
    "sum": "the sum over every row so far",
    "share_outside": "the share of rows whose value lies outside [band[0], band[1]] (missing values not counted)",
}


@dataclass(frozen=True)
class Kpi:
    """One figure of the KPI row: ``summary`` (a key of :data:`KPI_SUMMARIES`) of ``table.column``, times ``scale``."""

    key: str
    label: str
    fmt: str  # a format spec ("d", ".1f", ".0%") or "s" for text
    table: str
    column: str
    summary: str = "last"
    scale: float = 1.0
    band: tuple[str, str] | None = None  # share_outside: the columns of the band's low and high edge
    alarm_unless: str | None = None  # text KPIs: shown as an alarm unless the value ends with this
    doc: str = ""

    @property
    def numeric(self) -> bool:
        return self.fmt != "s"


@dataclass(frozen=True)
class FaultArg:
    """One argument of a fault a user can set before injecting it."""

    name: str
    label: str
    kind: str = "float"  # "float" | "node" (a node's name or position; empty: the world's default choice)
    default: float | str | None = None
    bounds: tuple[float, float] | None = None
    required: bool = False


@dataclass(frozen=True)
class FaultButton:
    """A fault a user can inject now: its kind (``Simulation.inject``), a button label and its arguments."""

    kind: str
    label: str
    args: tuple[FaultArg, ...] = ()
    needs_cluster: bool = False


@dataclass(frozen=True)
class SeriesPlot:
    """A time plot of one table: ``columns`` as (column, label) curves over the table's ``time`` column."""

    name: str
    title: str
    ylabel: str
    table: str
    columns: tuple[tuple[str, str], ...]
    fmt: str = ".3g"


@dataclass(frozen=True)
class WorldView:
    """What a UI needs of a world: its sample table, KPIs, faults, the tables its views read and its default views."""

    sample_table: str
    kpis: tuple[Kpi, ...]
    faults: tuple[FaultButton, ...] = ()
    tables: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    series: tuple[SeriesPlot, ...] = ()
    compare_sections: tuple[str, ...] = ()
    #: Titles of sections' control cards, as format strings over the section's values (``"Node group {group}"``).
    section_titles: tuple[tuple[str, str], ...] = ()
    doc: str = ""

    def kpi(self, key: str) -> Kpi:
        return next(k for k in self.kpis if k.key == key)

    def section_title(self, key: str, values: dict) -> str | None:
        """The card title of section ``key`` with ``values`` (None: the section has no declared title)."""
        fmt = dict(self.section_titles).get(key)
        return fmt.format(**values) if fmt is not None else None


NODE_ARG = FaultArg("node", "Node (empty: the busiest)", kind="node")
#: The node autoscaler's cards (function and pod worlds): the autoscaler, then one per node group, named by its group.
NODE_TITLES = (
    ("node_autoscaler", "Node autoscaler"),
    *((key, "Node group {group} ({instance_type}, " + key + ")") for key in GROUP_KEYS),
)

VM_VIEW = WorldView(
    sample_table="samples",
    kpis=(
        Kpi("queue", "Queue", "d", "samples", "queue_length"),
        Kpi("active_workers", "Active workers", "d", "samples", "workers_active"),
        Kpi("wait_p95", "p95 wait (s)", ".1f", "samples", "wait_p95", "last_valid"),
        Kpi("vm_hours", "VM-hours", ".2f", "samples", "vm_seconds", scale=1 / 3600),
        Kpi("outside_band", "Outside band", ".0%", "samples", "time_left", "share_outside", band=("band_low", "band_high")),
        Kpi("master_state", "Master", "s", "samples", "master_state", alarm_unless="RUNNING"),
    ),
    faults=(
        FaultButton("master_crash", "Crash the master"),
        FaultButton("worker_crash", "Crash a worker"),
        FaultButton(
            "heartbeat_outage", "Drop heartbeats", (FaultArg("duration", "Heartbeat outage (s)", default=30.0, bounds=(1.0, 3600.0)),)
        ),
        FaultButton("node_failure", "Fail a node", needs_cluster=True),
    ),
    tables=("samples", "events", "decisions", "nodes", "placements", "breakdowns"),
    views=("vm-series", "events", "placement"),
    compare_sections=("policy", "autoscaler", "hpa", "kpa", "keda", "scheduler", "workload"),
    doc="the master's queue, the workers by state, the drain band, rates, waits and VM-hours",
)

FUNCTIONS_VIEW = WorldView(
    sample_table="function_samples",
    kpis=(
        Kpi("rps", "Requests/s", ".1f", "function_samples", "rps", "sum_latest"),
        Kpi("response_p95", "Worst p95 response (s)", ".3f", "function_samples", "response_p95", "max_latest"),
        Kpi("replicas_running", "Replicas running", "d", "function_samples", "replicas_running", "sum_latest"),
        Kpi("queued", "Gateway queue", "d", "function_samples", "queued", "sum_latest"),
        Kpi("cold_starts", "Cold starts", "d", "function_samples", "cold_starts", "sum"),
        Kpi("rejected", "Rejected", "d", "function_samples", "rejected", "sum_latest"),
    ),
    faults=(FaultButton("node_drain", "Drain a node", (NODE_ARG,), needs_cluster=True),),
    tables=("function_samples", "events", "nodes", "placements", "breakdowns"),
    views=("functions", "events", "placement"),
    compare_sections=("faas", "scheduler"),
    section_titles=NODE_TITLES,
    doc="per-function rates, response percentiles, replicas by state, cold starts and the gateway queue",
)

POD_VIEW = WorldView(
    sample_table="samples",
    kpis=(
        Kpi("gpu_allocated", "GPU allocated", ".1%", "samples", "gpu_allocated"),
        Kpi("frag_ratio", "GPU fragmentation", ".1%", "samples", "frag_ratio", "last_valid"),
        Kpi("running", "Pods running", "d", "samples", "running"),
        Kpi("pending", "Pods waiting", "d", "samples", "pending"),
        Kpi("unplaced", "Never placed", "d", "samples", "unplaced"),
        Kpi("gpus_shared", "GPUs shared", "d", "samples", "gpus_shared"),
    ),
    faults=(
        FaultButton("node_failure", "Fail a node", (NODE_ARG,), needs_cluster=True),
        FaultButton("node_recovery", "Recover a node", (FaultArg("node", "Node (name or position)", kind="node", required=True),), True),
    ),
    tables=("samples", "events", "nodes", "placements", "breakdowns"),
    views=("pod-series", "gpu", "waiting", "events"),
    series=(
        SeriesPlot(
            "allocation",
            "Cluster allocation",
            "share of the cluster",
            "samples",
            (("gpu_allocated", "GPU"), ("cpu_allocated", "cpu"), ("memory_allocated", "memory")),
        ),
        SeriesPlot("fragmentation", "GPU fragmentation", "share of free GPU", "samples", (("frag_ratio", "fragmentation ratio"),)),
        SeriesPlot(
            "pods", "Pods", "pods", "samples", (("running", "running"), ("pending", "waiting"), ("unplaced", "never placed")), fmt="d"
        ),
        SeriesPlot("devices", "GPU devices", "devices", "samples", (("gpus_idle", "idle"), ("gpus_shared", "shared")), fmt="d"),
    ),
    compare_sections=("scheduler",),
    section_titles=NODE_TITLES,
    doc="GPU allocation and fragmentation over time, pods running and waiting, GPU devices in use per node",
)
