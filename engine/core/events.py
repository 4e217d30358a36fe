"""The run's event log: one table every producer appends to, each fact in a typed column (no prose).

``kind`` says what happened; the other columns are filled where they apply (missing elsewhere):

=========  =================================================================================================
kind       columns
=========  =================================================================================================
command    ``vm``, ``vm_type``, ``command`` (CREATE, DELETE, SUSPEND, RESUME, INIT, SHUTDOWN), ``rule`` (the
           controller rule that produced it), ``reason`` ``refused_by_cloud`` when the cloud refused it
vm         ``vm``, ``vm_type``, ``command`` (the new cloud state), ``reason`` (``boot_failure``,
           ``crashed_while_booting``, ``resuming``, ``node_failed``), ``node`` (for ``node_failed``)
placement  ``vm``, ``vm_type``, ``command`` (BIND or PENDING), ``node``, ``placement`` (row of the
           ``placements`` table), ``seconds`` (BIND: until the image is on the node, scheduling included,
           waiting for a pull in flight there), ``reason`` ``no_feasible_node`` for PENDING
fault      ``command`` (the fault kind), ``reason`` (``injected``, ``scheduled``, ``random``), ``vm``,
           ``vm_type`` and ``node`` it hit, ``seconds`` (a heartbeat outage's duration), ``value`` (JSON of
           what else it hit, e.g. ``{"vms": [3, 5]}``)
param      ``command`` (the parameter, ``section.NAME``), ``value`` (its new value as JSON)
alert      ``command`` (``controller_stuck`` when the controller reaches the original's dead end: work queued, no
           worker serving or starting, some suspended, nothing resuming them; ``controller_unstuck`` when it
           leaves it), ``reason``, ``value`` (JSON, e.g. ``{"suspended": 3}``)
=========  =================================================================================================
"""

from __future__ import annotations

from collections.abc import Callable

from engine.core.recorder import Recorder, table

EVENTS = table(
    "events",
    "The event log: commands with the rule that produced each, VM states, placements, faults, parameter changes.",
    [
        ("time", "float64", "simulated seconds"),
        ("kind", "string", "command | vm | placement | fault | param | alert"),
        ("vm", "Int64", "the VM concerned"),
        ("vm_type", "string", "MASTER | WORKER"),
        ("command", "string", "command kind, new VM state, BIND/PENDING, fault kind or parameter name"),
        ("rule", "string", "the controller rule that produced a command"),
        ("node", "string", "the node concerned (placements, node failures)"),
        ("reason", "string", "why, as a token (see the module docs)"),
        ("value", "string", "JSON: a parameter's new value, or what else a fault hit"),
        ("placement", "Int64", "row of the placements table (placement events)"),
        ("seconds", "Float64", "a duration: image wait of a BIND, length of a heartbeat outage"),
    ],
)


class EventLog:
    """Appends rows to the recorder's ``events`` table, stamped with the clock's time."""

    __slots__ = ("_add", "_now")

    def __init__(self, recorder: Recorder, now: Callable[[], float]):
        if EVENTS.name not in recorder:
            recorder.declare(EVENTS)
        self._add = recorder.appender(EVENTS.name)
        self._now = now

    def __call__(
        self,
        kind: str,
        vm: int | None = None,
        vm_type: str | None = None,
        command: str = "",
        rule: str = "",
        node: str | None = None,
        reason: str = "",
        value: str | None = None,
        placement: int | None = None,
        seconds: float | None = None,
    ) -> None:
        self._add((self._now(), kind, vm, vm_type, command, rule, node, reason, value, placement, seconds))
