"""The VM world's sections: the cloud and app around the controller (``platform``), its faults (``faults``) and the
controller's modes (``controller``)."""

from __future__ import annotations

import param

from engine.core.params import ParamError, Section


class PlatformParams(Section):
    """The cloud and the application around the autoscaler: delays, threads, heartbeats."""

    key = "platform"

    boot_time = param.Number(
        40.0,
        bounds=(0.0, 3600.0),
        step=1.0,
        label="Boot time (s)",
        softbounds=(0, 300),
        doc="Mean seconds for a created VM to boot (PENDING to ACTIVE).",
    )
    resume_time = param.Number(
        8.0,
        bounds=(0.0, 3600.0),
        step=1.0,
        label="Resume time (s)",
        softbounds=(0, 120),
        doc="Mean seconds for a suspended VM to come back ACTIVE.",
    )
    suspend_time = param.Number(
        3.0, bounds=(0.0, 600.0), step=1.0, label="Suspend time (s)", softbounds=(0, 60), doc="Mean seconds for a VM to suspend."
    )
    app_start_time = param.Number(
        2.0,
        bounds=(0.0, 600.0),
        step=0.5,
        label="App start time (s)",
        softbounds=(0, 60),
        doc="Mean seconds from ACTIVE until the app daemon is READY.",
    )
    app_init_time = param.Number(
        3.0,
        bounds=(0.0, 600.0),
        step=0.5,
        label="App INIT time (s)",
        softbounds=(0, 60),
        doc="Mean seconds an app spends in INIT before RUNNING.",
    )
    delay_cv = param.Number(
        0.2,
        bounds=(0.0, 2.0),
        step=0.05,
        label="Delay variability (CV)",
        doc="Coefficient of variation of every delay above (gamma distributed; 0 is fixed).",
    )
    boot_failure_prob = param.Number(
        0.0, bounds=(0.0, 1.0), step=0.01, label="Boot failure probability", doc="Probability that a created VM fails to boot (FAILED)."
    )
    worker_threads = param.Integer(
        4, bounds=(1, 256), label="Threads per worker", softbounds=(1, 32), doc="Worker threads per worker VM (jobs served at once)."
    )
    heartbeat_interval = param.Number(
        2.0,
        bounds=(0.1, 600.0),
        step=0.5,
        label="Heartbeat interval (s)",
        softbounds=(0.1, 30),
        doc="Seconds between two heartbeats of a running app.",
    )
    heartbeat_loss = param.Number(
        0.0,
        bounds=(0.0, 1.0),
        step=0.01,
        label="Heartbeat loss probability",
        doc="Probability that a heartbeat or app command datagram is lost.",
    )
    app_command_latency = param.Number(
        0.05,
        bounds=(0.0, 60.0),
        step=0.05,
        label="App command latency (s)",
        softbounds=(0, 2),
        doc="Seconds an app command datagram takes to arrive.",
    )


class FaultParams(Section):
    """Faults at given simulated times or at seeded random rates."""

    key = "faults"

    master_crash_at = param.List(
        default=[], item_type=(int, float), label="Master crash times (s)", doc="Simulated times (s) at which the master VM crashes."
    )
    worker_crash_at = param.List(
        default=[], item_type=(int, float), label="Worker crash times (s)", doc="Simulated times (s) at which a random worker VM crashes."
    )
    heartbeat_outages = param.List(
        default=[], label="Heartbeat outages [start, duration] (s)", doc="[start, duration] pairs (s) during which every heartbeat is lost."
    )
    master_crash_rate = param.Number(
        0.0,
        bounds=(0.0, 100.0),
        step=0.1,
        label="Master crashes per hour",
        softbounds=(0, 10),
        doc="Random master crashes per simulated hour.",
    )
    worker_crash_rate = param.Number(
        0.0,
        bounds=(0.0, 100.0),
        step=0.1,
        label="Crashes per worker per hour",
        softbounds=(0, 10),
        doc="Random crashes per worker VM per simulated hour.",
    )

    def check(self) -> None:
        for i, pair in enumerate(self.heartbeat_outages):
            if (
                not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(v, int | float) for v in pair))
                or pair[0] < 0
                or pair[1] <= 0
            ):
                raise ParamError(f"faults.heartbeat_outages[{i}]", f"{pair!r} is not allowed; allowed: [start >= 0, duration > 0]")
        for name in ("master_crash_at", "worker_crash_at"):
            for i, t in enumerate(getattr(self, name)):
                if t < 0:
                    raise ParamError(f"faults.{name}[{i}]", f"{t!r} is not allowed; allowed: times >= 0")

    def scheduled(self) -> list[tuple[str, float, dict]]:
        """The faults listed at given times, as (kind, time, args)."""
        wanted = [("master_crash", float(t), {}) for t in self.master_crash_at]
        wanted += [("worker_crash", float(t), {}) for t in self.worker_crash_at]
        wanted += [("heartbeat_outage", float(start), {"duration": duration}) for start, duration in self.heartbeat_outages]
        return wanted

    def random(self) -> list[tuple[str, float, bool]]:
        """The seeded random faults, as (kind, rate per simulated hour, one draw per target rather than one per tick)."""
        return [("master_crash", self.master_crash_rate, False), ("worker_crash", self.worker_crash_rate, True)]


#: The controller's departures from the original, each a named switch (all off in seed-exact mode).
EXTENSIONS = ("drain_above_cap", "cap_resumes", "resume_when_stuck", "resume_timeout")


class ControllerParams(Section):
    """How faithfully the VM controller follows the original ``VMScheduler``, and the project's extensions of it.

    ``seed_exact`` reproduces the original round for round: ages measured from a whole-second "now"
    (``int(time)``) against fractional command stamps, adopted VMs and running-time accounts stamped in whole
    seconds. Off: the float clock everywhere. The command order is the original's in both (in the round the
    master is found RUNNING again: the initial worker's CREATE, the RESUMEs, then the master's own command).
    The extensions change decisions and can only be switched on with ``seed_exact`` off.
    """

    key = "controller"

    seed_exact = param.Boolean(
        True,
        label="Seed-exact mode",
        doc="Decide exactly as the original VMScheduler: whole-second clock for ages, no extensions.",
    )
    drain_above_cap = param.Boolean(
        False,
        label="Drain workers above a lowered cap",
        doc="Extension: at most MAX_WORKERS serve: the serving workers above it are drained (cap_shutdown) and workers "
        "coming up beyond it are suspended (cap_suspend). The original only stops creating workers at the cap.",
    )
    cap_resumes = param.Boolean(
        False,
        label="Never resume past the cap",
        doc="Extension: never resume suspended workers past MAX_WORKERS, in a scale-out or a master recovery (the original resumes them regardless).",
    )
    resume_when_stuck = param.Boolean(
        False,
        label="Resume a worker when stuck",
        doc="Extension: when work is queued, no worker serves or starts and some are suspended (the original's dead end: "
        "it never resumes them), resume one (stuck_resume).",
    )
    resume_timeout = param.Boolean(
        False,
        label="Time out a RESUME",
        doc="Extension: a VM told to RESUME that sends no heartbeat within MAX_TRANSITION_TIME is deleted (r1_resume_timeout). "
        "The original waits MAX_STARTUP_TIME, counting it as starting (no scaling) meanwhile: e.g. a worker that crashed "
        "while its SUSPEND was refused (it was booting) and so never suspended.",
    )

    def check(self) -> None:
        if self.seed_exact:
            for name in EXTENSIONS:
                if getattr(self, name):
                    raise ParamError(
                        f"controller.{name}",
                        "is an extension of the seed and cannot be on in seed-exact mode; allowed: controller.seed_exact false first",
                    )

    @property
    def extensions_on(self) -> list[str]:
        """The extensions switched on."""
        return [name for name in EXTENSIONS if getattr(self, name)]
