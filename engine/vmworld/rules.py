"""The seed's per-VM rules: the next command for one VM from its state, its newest heartbeat and the last command sent.

Rules 1-11 of the original ``VMScheduler`` (numbered in the comments as in ``docs/explanation/vm-controller.md``):
startup and transition timeouts, stale heartbeats, INIT and SHUTDOWN re-sent, a drained worker suspended, adopted
VMs taken over, an illegal state deleted; rule 7 measures a RUNNING worker's load. :class:`VMRules` only reads the
controller's bookkeeping (``_last``, ``_hb``, ``params``, ``modes``) and returns commands: the
:class:`~engine.vmworld.controller.VMController` (which inherits it) decides what to send.
"""

from __future__ import annotations

from engine.vmworld.model import AppState, Command, CommandKind, VMInfo, VMState, VMType

_DRAIN_STATES = (AppState.RUNNING, AppState.SHUTTING_DOWN)
_BOOTING_STATES = (VMState.INIT, VMState.PENDING)


class VMRules:
    """Per-VM next commands (rules 1-11) over the controller's last commands and buffered heartbeats."""

    def _clock(self, now: float) -> float:
        """The "now" every age is measured from: the original reads whole seconds (``int(time.time())``)."""
        return float(int(now)) if self.modes.seed_exact else now

    def _next_command(self, vm: VMInfo, now: float) -> tuple[Command | None, float | None]:
        """The VM's next command and, for a measured RUNNING worker (rule 7), its load."""
        if vm.state in _BOOTING_STATES:
            return self._startup_timeout(vm.id, now, "pending_timeout"), None
        if vm.state == VMState.FAILED:
            return Command(CommandKind.DELETE, vm.id, "failed_delete"), None
        if vm.state == VMState.ACTIVE:
            return self._active_command(vm, now)
        return None, None  # SUSPENDED

    def _startup_timeout(self, vm_id: int, now: float, rule: str) -> Command | None:
        sent_at, _ = self._last[vm_id]
        if self._clock(now) - sent_at > self.params.MAX_STARTUP_TIME:
            return Command(CommandKind.DELETE, vm_id, rule)
        return None

    def _active_command(self, vm: VMInfo, now: float) -> tuple[Command | None, float | None]:
        p = self.params
        vm_id = vm.id
        buffer = self._hb.get(vm_id)
        newest = buffer[-1] if buffer else None  # _newest, inlined: per active VM per round
        sent_at, last = self._last[vm_id]
        clock = self._clock(now)
        age = clock - sent_at
        if newest is None:  # 1
            if last == CommandKind.RESUME and self.modes.resume_timeout and age > p.MAX_TRANSITION_TIME:
                return Command(CommandKind.DELETE, vm_id, "r1_resume_timeout"), None  # the extension: a resumed VM that stays silent
            return self._startup_timeout(vm_id, now, "r1_startup_timeout"), None
        if last == CommandKind.SUSPEND:  # 2
            return None, None
        if clock - newest.recv_time > p.DECISION_INTERVAL:  # 3
            return Command(CommandKind.DELETE, vm_id, "r3_stale_heartbeat"), None
        state = newest.app_state
        if last == CommandKind.INIT and state == AppState.RUNNING:  # 7 (rules 4-6 cannot apply to it): the common case
            return None, self._worker_load(vm)
        if state == AppState.ERROR:  # 4
            if last == CommandKind.INIT and age > p.MAX_TRANSITION_TIME:
                return Command(CommandKind.DELETE, vm_id, "r4_error_timeout"), None
            return Command(CommandKind.INIT, vm_id, "r4_error_init"), None
        if last == CommandKind.CREATE and state == AppState.READY:  # 5
            return Command(CommandKind.INIT, vm_id, "r5_created_init"), None
        if last == CommandKind.INIT and state in (AppState.READY, AppState.INIT):  # 6
            if age > p.MAX_TRANSITION_TIME:
                return Command(CommandKind.DELETE, vm_id, "r6_transition_timeout"), None
            return Command(CommandKind.INIT, vm_id, "r6_init_resend"), None
        if last == CommandKind.SHUTDOWN and state in _DRAIN_STATES:  # 8
            if age > p.MAX_SHUTDOWN_TIME:
                return Command(CommandKind.DELETE, vm_id, "r8_shutdown_timeout"), None
            return Command(CommandKind.SHUTDOWN, vm_id, "r8_shutdown_resend"), None
        if last == CommandKind.SHUTDOWN and state == AppState.READY:  # 9
            return Command(CommandKind.SUSPEND, vm_id, "r9_suspend_drained"), None
        if last is None or last == CommandKind.RESUME:  # 10
            if state in (AppState.RUNNING, AppState.READY, AppState.INIT):
                return Command(CommandKind.INIT, vm_id, "r10_adopt_init"), None
            if state == AppState.SHUTTING_DOWN:
                return Command(CommandKind.SHUTDOWN, vm_id, "r10_adopt_shutdown"), None
        return Command(CommandKind.DELETE, vm_id, "r11_illegal_state"), None  # 11

    def _worker_load(self, vm: VMInfo) -> float | None:
        """Rule 7's load; cpu alone is trusted less since fresh VMs show inflated cpu."""
        p = self.params
        buffer = self._hb[vm.id]
        if vm.type != VMType.WORKER or len(buffer) < p.MIN_MEASURE_LOAD_HB:
            return None
        newest = buffer[-1]
        if newest.mem > p.MAX_AVG_LOAD or newest.disk > p.MAX_AVG_LOAD:
            return max(newest.cpu, newest.mem, newest.disk)
        return newest.cpu
