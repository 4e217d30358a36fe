"""What the VM controller and its world agree on: the rule and action names, the :class:`Cloud` it drives, and
:class:`ControlRound`, what one decision round saw and did (a row of the ``decisions`` table).

Every command the controller sends is tagged with one of :data:`RULES`; every round's ``action`` is one of
:data:`ACTIONS`. The controller itself is :class:`~engine.vmworld.controller.VMController`; the rules in plain
words are in ``docs/explanation/vm-controller.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from engine.vmworld.model import Command, VMInfo, VMType

#: How heartbeats may be keyed: VM id, sender IP, or (IP, port) as the original's monitor keys them.
HeartbeatKey = int | str | tuple[str, int]

RULES: tuple[str, ...] = (
    "pending_timeout",
    "failed_delete",
    "r1_startup_timeout",
    "r3_stale_heartbeat",
    "r4_error_init",
    "r4_error_timeout",
    "r5_created_init",
    "r6_init_resend",
    "r6_transition_timeout",
    "r8_shutdown_resend",
    "r8_shutdown_timeout",
    "r9_suspend_drained",
    "r10_adopt_init",
    "r10_adopt_shutdown",
    "r11_illegal_state",
    "master_crash_suspend",
    "master_crash_delete",
    "master_create",
    "master_recovered_resume",
    "initial_worker",
    "no_worker_create",
    "scale_in_shutdown",
    "scale_out_resume",
    "scale_out_create",
    "cap_shutdown",
    "cap_suspend",
    "stuck_resume",
    "r1_resume_timeout",
)

ACTIONS: tuple[str, ...] = ("waiting_for_master", "master_recovery", "master_recovered", "scale_out", "scale_in", "hold", "not_measured")


class Cloud(Protocol):
    """What the controller drives; the VM cloud implements it."""

    def list_vms(self) -> list[VMInfo]:
        """Every VM not DELETED, in the cloud's order."""
        ...

    def create(self, vm_type: VMType, now: float, rule: str) -> int:
        """Create a VM (listed as PENDING right after) and return its id."""
        ...

    def execute(self, command: Command, now: float) -> None:
        """Run DELETE/SUSPEND/RESUME, or send an app INIT/SHUTDOWN datagram."""
        ...


@dataclass(frozen=True, slots=True)
class ControlRound:
    """What one round saw and did. ``commands`` are in the order sent to the cloud.

    ``action``: "master_recovery" (master replaced), "waiting_for_master", "master_recovered" (found
    RUNNING this round), or in scaling rounds "not_measured" (something starting, no active worker or
    too few master heartbeats), "scale_in" / "scale_out" (time_left outside the band, even when the
    count comes out 0 or MAX_WORKERS stops it) or "hold". The measurements (``time_left``,
    ``avg_queue``, ``avg_time``) are None unless the round measured; the worker counts and ``threads``
    are those of scaling rounds (0 in rounds that only handled the master).

    ``policy`` names the scaling policy in charge; in scaling rounds ``metric``, ``target``, ``desired``
    and ``reason`` are its verdict's (``time_left``/``avg_queue`` are the queue drain's only). ``desired``
    counts serving plus pending workers; None when the policy held or did not measure.
    """

    time: float
    action: str
    commands: tuple[Command, ...] = ()
    time_left: float | None = None
    avg_queue: float | None = None
    avg_time: float | None = None
    threads: int = 0
    active: int = 0
    suspended: int = 0
    starting: int = 0
    band_low: float = 0.0
    band_high: float = 0.0
    load: float | None = None
    master_crash_rule: str | None = None
    policy: str | None = None
    metric: float | None = None
    target: float | None = None
    desired: int | None = None
    reason: str | None = None
    stuck: bool = False
