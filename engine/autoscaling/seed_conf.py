"""The seed's configuration module: the queue-drain band and the controller's limits, one section as in the original.

The names are the original controller's (``conf.MIN_AVG_TIME`` ...). The queue-drain policy reads the band
and MIN_MEASURE_LOAD_HB; the VM controller (``engine.vmworld.controller``) reads the rest; every policy is
capped by MAX_WORKERS.
"""

from __future__ import annotations

from typing import ClassVar

import param

from engine.core.params import ParamError, Section


class AutoscalerParams(Section):
    """The queue-drain VM autoscaler (names as in the original controller)."""

    key = "autoscaler"
    range_labels: ClassVar[dict[tuple[str, str], str]] = {("MIN_AVG_TIME", "MAX_AVG_TIME"): "Queue-drain band (s)"}

    DECISION_INTERVAL = param.Number(
        10.0, bounds=(1.0, 600.0), step=1.0, label="Decision interval (s)", softbounds=(1, 120), doc="Seconds between two decisions."
    )
    MIN_MEASURE_LOAD_HB = param.Integer(
        3, bounds=(1, 100), label="Heartbeats per measurement", softbounds=(1, 20), doc="Heartbeats needed before load is measured."
    )
    MAX_HB_HISTORY = param.Integer(10, bounds=(1, 1000), label="Heartbeats kept per VM", softbounds=(1, 50), doc="Heartbeats kept per VM.")
    MIN_AVG_TIME = param.Number(
        10.0,
        bounds=(0.0, 3600.0),
        step=1.0,
        label="Drain band, lower end (s)",
        softbounds=(0, 300),
        doc="Lower end of the drain band: below it the queue drains too fast (scale in).",
    )
    MAX_AVG_TIME = param.Number(
        30.0,
        bounds=(0.0, 3600.0),
        step=1.0,
        label="Drain band, upper end (s)",
        softbounds=(0, 300),
        doc="Upper end of the drain band: above it the queue drains too slowly (scale out).",
    )
    MAX_WORKERS = param.Integer(
        20,
        bounds=(1, 1000),
        label="Max workers",
        softbounds=(1, 100),
        doc="Most worker VMs that may exist at once. The original only refuses CREATEs at the cap: lowered live, it stops "
        "growth but drains nothing (controller.drain_above_cap does) and resumes still go past it (controller.cap_resumes stops them).",
    )
    MAX_STARTUP_TIME = param.Number(
        300.0,
        bounds=(1.0, 7200.0),
        step=10.0,
        label="Start-up time-out (s)",
        softbounds=(1, 900),
        doc="Seconds a VM may take to boot and send its first heartbeat.",
    )
    MAX_TRANSITION_TIME = param.Number(
        60.0,
        bounds=(1.0, 3600.0),
        step=5.0,
        label="INIT-to-RUNNING time-out (s)",
        softbounds=(1, 300),
        doc="Seconds an app may take to reach RUNNING after INIT.",
    )
    MAX_SHUTDOWN_TIME = param.Number(
        300.0,
        bounds=(1.0, 7200.0),
        step=10.0,
        label="Shutdown time-out (s)",
        softbounds=(1, 900),
        doc="Seconds a worker may take to drain after SHUTDOWN.",
    )
    MAX_AVG_LOAD = param.Number(
        0.8,
        bounds=(0.0, 10.0),
        step=0.05,
        label="Memory/disk load threshold",
        softbounds=(0, 2),
        doc="Memory/disk load above which load is the max of cpu, mem, disk.",
    )

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
