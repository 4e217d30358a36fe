"""The seed's VM controller (the original ``VMScheduler``), with pluggable scaling.

One master VM holds a job queue; worker VMs take jobs from it. Every ``DECISION_INTERVAL`` the controller
refreshes the cloud's VM list, buffers the heartbeats received since the last round, works out one next command
per VM (each tagged with its rule, :data:`RULES`), handles the master first, and scales the workers with a
:class:`~engine.autoscaling.base.ScalingPolicy` (the seed's queue drain by default). Simpy-free: the VM world calls
:meth:`VMController.start` once and :meth:`VMController.step` every round, and implements :class:`Cloud`.

What a round is and the rule names are in :mod:`engine.vmworld.rounds`, the per-VM rules 1-11 (a VM's next command)
in :mod:`engine.vmworld.rules`. The rules in plain words, the order of sending, seed-exact mode (``ControllerParams.seed_exact``) and its
extensions, and the original's defects and how each is handled: ``docs/explanation/vm-controller.md`` (and
``docs/explanation/vm-autoscaler-seed-exact.md`` for how seed-exact mode is checked against the original).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.autoscaling.base import ScalingObservation, ScalingPolicy, ScalingVerdict
from engine.autoscaling.queue_drain import QueueDrainPolicy
from engine.autoscaling.seed_conf import AutoscalerParams
from engine.core.params import Mirror
from engine.vmworld.model import AppState, Command, CommandKind, Heartbeat, VMInfo, VMState, VMType
from engine.vmworld.params import ControllerParams
from engine.vmworld.rounds import ACTIONS, RULES, Cloud, ControlRound, HeartbeatKey
from engine.vmworld.rules import VMRules

#: Re-exported: the rule and action names and the round are :mod:`engine.vmworld.rounds`'s, the per-VM rules
#: :mod:`engine.vmworld.rules`'s.
__all__ = ["ACTIONS", "RULES", "Cloud", "ControlRound", "HeartbeatKey", "VMController"]

_LEAVING = (CommandKind.SHUTDOWN, CommandKind.SUSPEND)
_STARTING = (CommandKind.CREATE, CommandKind.RESUME)


class VMController(VMRules):
    """The seed's controller: per-VM rules, master first, and scaling by a policy (the seed's queue-drain band by default)."""

    def __init__(self, params: AutoscalerParams, cloud: Cloud, policy: ScalingPolicy | None = None, modes: ControllerParams | None = None):
        self.section = params
        self.params = Mirror(params)  # plain values, kept current by a watcher: read per VM per round
        self.cloud = cloud
        self.modes = Mirror(modes if modes is not None else ControllerParams())  # read per VM per round
        self.policy: ScalingPolicy = policy if policy is not None else QueueDrainPolicy()
        self.worker_count = 0
        self.waiting_for_master = True
        self.master_id: int | None = None
        self.start_commands: tuple[Command, ...] = ()
        self._started = False
        self._vms: list[VMInfo] = []
        self._by_id: dict[int, VMInfo] = {}
        self._by_address: dict[str, int] = {}
        self._types: dict[int, VMType] = {}
        self._last: dict[int, tuple[float, CommandKind | None]] = {}  # last distinct command, first sent at
        self._hb: dict[int, list[Heartbeat]] = {}
        self._deleted: set[int] = set()  # deleted by us, possibly still listed for a while
        self._running_since: dict[int, float] = {}
        self._closed_seconds = 0.0
        self._sent: list[Command] = []

    # ---- public API -------------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Adopt the existing VMs (and master), or create a master; then wait for the master."""
        if self._started:
            raise RuntimeError("VMController.start called twice")
        self._started = True
        self._sent = []
        self._vms = [v for v in self.cloud.list_vms() if v.state != VMState.DELETED]
        self._index()
        for vm in self._vms:
            self._adopt(vm, now)
            if vm.type == VMType.MASTER:
                self.master_id = vm.id  # the original keeps the last master listed
        if self.master_id is None:
            self.master_id = self._create(VMType.MASTER, now, "master_create")
        self.waiting_for_master = True
        self.start_commands = tuple(self._sent)

    def step(self, now: float, heartbeats: Mapping[HeartbeatKey, Sequence[Heartbeat]]) -> ControlRound:
        """One decision round: refresh the VM list, buffer ``heartbeats`` (by VM id or sender address), decide, execute."""
        if not self._started:
            raise RuntimeError("VMController.step called before start")
        self._sent = []
        self._refresh(now)
        self._buffer(heartbeats)
        return self._handle_master(now) or self._decide(now)

    def set_policy(self, policy: ScalingPolicy) -> None:
        """Decide with ``policy`` from the next round on; the VMs and their commands carry over."""
        self.policy = policy

    def vm_seconds(self, now: float) -> float:
        """Cumulative VM running time as the original logs it (the samples' ``vm_seconds_logged``): accounts opened and
        closed when commands are sent, refused ones too. The reported figure is the cloud's (:meth:`VMCloud.vm_seconds`)."""
        now = self._stamp(now)
        return self._closed_seconds + sum(now - since for since in self._running_since.values())

    def last_command(self, vm_id: int) -> tuple[float, CommandKind | None] | None:
        """(time first sent, kind) of the VM's last distinct command; kind None means none yet."""
        return self._last.get(vm_id)

    def heartbeats(self, vm_id: int) -> tuple[Heartbeat, ...]:
        """The VM's buffered heartbeats, newest last."""
        return tuple(self._hb.get(vm_id, ()))

    # ---- the round ----------------------------------------------------------------------------

    def _stamp(self, now: float) -> float:
        """Stamps of adoption and of running-time accounts: whole seconds in the original."""
        return float(int(now)) if self.modes.seed_exact else now

    def _index(self) -> None:
        self._by_id = {v.id: v for v in self._vms}
        self._by_address = {v.address: v.id for v in self._vms if v.address}

    def _adopt(self, vm: VMInfo, now: float) -> None:
        self._types[vm.id] = vm.type
        self._last[vm.id] = (self._stamp(now), None)
        if vm.state != VMState.SUSPENDED:
            self._running_since[vm.id] = self._stamp(now)

    def _refresh(self, now: float) -> None:
        listed = [v for v in self.cloud.list_vms() if v.state != VMState.DELETED]
        if self._deleted:  # usually empty: the cloud delists a deleted VM at once
            self._deleted &= {v.id for v in listed}  # once gone from the list, no need to remember the deletion
            listed = [v for v in listed if v.id not in self._deleted]
        self._vms = listed
        self._index()
        last, by_id, types = self._last, self._by_id, self._types
        for vanished in [vm_id for vm_id in last if vm_id not in by_id]:
            self._forget(vanished, now)
        for vm in listed:
            if vm.id not in last:
                self._adopt(vm, now)
            types[vm.id] = vm.type

    def _buffer(self, heartbeats: Mapping[HeartbeatKey, Sequence[Heartbeat]]) -> None:
        keep = self.params.MAX_HB_HISTORY
        hb, by_address, by_id = self._hb, self._by_address, self._by_id
        for key, received in heartbeats.items():
            if not received:
                continue
            if isinstance(key, tuple):  # _vm_of, inlined: per sender per round
                key = key[0]
            vm_id = by_address.get(key) if isinstance(key, str) else key if key in by_id else None
            if vm_id is None:  # unknown senders are ignored, as in the original
                continue
            buffer = hb.get(vm_id)
            if buffer is None:
                hb[vm_id] = buffer = []
            buffer.extend(received)
            if len(buffer) > keep:
                del buffer[:-keep]

    def _vm_of(self, key: HeartbeatKey) -> int | None:
        if isinstance(key, tuple):
            key = key[0]
        if isinstance(key, str):
            return self._by_address.get(key)
        return key if key in self._by_id else None

    def _forget(self, vm_id: int, now: float) -> None:
        self._close_account(vm_id, now)
        self._last.pop(vm_id, None)
        self._hb.pop(vm_id, None)
        self._types.pop(vm_id, None)

    def _newest(self, vm_id: int) -> Heartbeat | None:
        buffer = self._hb.get(vm_id)
        return buffer[-1] if buffer else None

    def _decision(self, now: float, action: str, **measured) -> ControlRound:
        return ControlRound(
            time=now,
            action=action,
            commands=tuple(self._sent),
            band_low=self.params.MIN_AVG_TIME,
            band_high=self.params.MAX_AVG_TIME,
            policy=self.policy.name,
            **measured,
        )

    # ---- master first -------------------------------------------------------------------------

    def _handle_master(self, now: float) -> ControlRound | None:
        master = self._by_id.get(self.master_id)
        if master is None:
            return self._master_crash(now, None, "master_vanished")
        master_command, _ = self._next_command(master, now)
        if master_command is not None and master_command.kind == CommandKind.DELETE:
            return self._master_crash(now, master, master_command.rule)
        if not self.waiting_for_master:
            return None
        newest = self._newest(master.id)
        action = "waiting_for_master"
        if master.state == VMState.ACTIVE and newest is not None and newest.app_state == AppState.RUNNING:
            action = "master_recovered"
            workers = [v for v in self._vms if v.type == VMType.WORKER]
            self.worker_count = len(workers)
            resumes = [
                Command(CommandKind.RESUME, v.id, "master_recovered_resume")
                for v in self._vms
                if self._last[v.id][1] == CommandKind.SUSPEND
            ]
            if self.modes.cap_resumes:  # the extension: only as many as MAX_WORKERS leaves room for
                staying = sum(1 for v in workers if self._last[v.id][1] != CommandKind.SUSPEND)
                resumes = resumes[: max(0, self.params.MAX_WORKERS - staying)]
            if not workers:
                self._create(VMType.WORKER, now, "initial_worker")
            self.waiting_for_master = False
            for command in resumes:
                self._send(command, now)
        if master_command is not None:  # after the resumes, in every round that waits for the master, as the original
            self._send(master_command, now)  # the master must be driven to RUNNING
        return self._decision(now, action)

    def _master_crash(self, now: float, master: VMInfo | None, rule: str) -> ControlRound:
        self.waiting_for_master = True
        old_master = self.master_id
        suspends = [
            Command(CommandKind.SUSPEND, v.id, "master_crash_suspend")
            for v in self._vms
            if v.id != old_master and v.state != VMState.SUSPENDED
        ]
        self.master_id = self._create(VMType.MASTER, now, "master_create")
        for command in suspends:
            self._send(command, now)
        if master is not None:
            self._send(Command(CommandKind.DELETE, old_master, "master_crash_delete"), now)
        return self._decision(now, "master_recovery", master_crash_rule=rule)

    # ---- scaling ------------------------------------------------------------------------------

    def _decide(self, now: float) -> ControlRound:
        table: dict[int, Command | None] = {}
        loads: list[float] = []
        for vm in self._vms:
            if vm.state is VMState.SUSPENDED:  # no command (what _next_command says): most VMs of a scaled-in fleet
                table[vm.id] = None
                continue
            command, load = self._next_command(vm, now)
            table[vm.id] = command
            if load is not None:
                loads.append(load)
        if not any(vm.type == VMType.WORKER for vm in self._vms):
            self._create(VMType.WORKER, now, "no_worker_create")
        obs, suspended, resumable = self._observe(now, table)
        verdict = self.policy.decide(obs)
        self._apply(verdict, obs, table, resumable, now)
        stuck = self._stuck(obs, verdict, resumable)
        if stuck and self.modes.resume_when_stuck:
            table[resumable[0]] = Command(CommandKind.RESUME, resumable[0], "stuck_resume")
        if self.modes.drain_above_cap:
            self._enforce_cap(obs, table)
        for command in table.values():
            if command is not None:
                self._send(command, now)
        measured = verdict.action != "not_measured"
        return self._decision(
            now,
            verdict.action,
            threads=obs.threads,
            active=len(obs.active),
            suspended=len(suspended),
            starting=obs.starting,
            load=sum(loads) / len(loads) if loads else None,
            time_left=verdict.time_left,
            avg_queue=verdict.avg_queue,
            avg_time=obs.avg_time if measured else None,
            metric=verdict.metric,
            target=verdict.target,
            desired=verdict.desired,
            reason=verdict.reason,
            stuck=stuck,
        )

    @staticmethod
    def _stuck(obs: ScalingObservation, verdict: ScalingVerdict, resumable: list[int]) -> bool:
        """The original's dead end: work is queued, no worker serves or is on its way, some are suspended, and the
        policy adds none (the queue drain cannot measure without an active worker; nothing else resumes)."""
        queued = bool(obs.queue) and obs.queue[-1] > 0
        adds = verdict.desired is not None and verdict.desired > obs.replicas
        return queued and not obs.active and obs.pending == 0 and obs.starting == 0 and bool(resumable) and not adds

    def _observe(self, now: float, table: Mapping[int, Command | None]) -> tuple[ScalingObservation, list[int], list[int]]:
        """Classify the workers (see :class:`ScalingObservation`); also the suspended ids and the resumable ones."""
        active: list[int] = []
        cpu: list[float] = []
        busy: list[float] = []
        draining: list[int] = []
        suspended: list[int] = []
        resumable: list[int] = []
        pending = starting = 0
        total_time = 0.0
        total_threads = 0
        hb = self._hb
        last_of = self._last
        worker, active_state, suspended_state, running = VMType.WORKER, VMState.ACTIVE, VMState.SUSPENDED, AppState.RUNNING
        delete, resume = CommandKind.DELETE, CommandKind.RESUME
        for vm in self._vms:
            if vm.type != worker:
                continue
            vm_id = vm.id
            command = table[vm_id]
            last = last_of[vm_id][1]
            leaving = last in _LEAVING
            if last in _STARTING:
                starting += 1
            if command is not None and command.kind == delete:
                continue
            state = vm.state
            if state == suspended_state:  # most VMs of a scaled-in fleet
                suspended.append(vm_id)
                if last == resume:
                    pending += 1
                else:
                    resumable.append(vm_id)
                continue
            buffer = hb.get(vm_id)
            newest = buffer[-1] if buffer else None  # _newest, inlined: per worker per round
            if state == active_state and newest is not None and newest.app_state == running:
                active.append(vm_id)
                total_time += newest.avg_time
                total_threads += newest.threads
                cpu.append(newest.cpu)
                busy.append(newest.cpu * newest.threads)
                if leaving:
                    draining.append(vm_id)
            elif not leaving:  # booting, or ACTIVE and not (yet) RUNNING
                pending += 1
        p = self.params
        master_buffer = self._hb.get(self.master_id, [])
        obs = ScalingObservation(
            now=now,
            active=tuple(active),
            threads=total_threads,
            cpu=tuple(cpu),
            busy=tuple(busy),
            avg_time=total_time / len(active) if active else None,
            queue=tuple(hb.queue_length for hb in master_buffer),
            draining=tuple(draining),
            pending=pending,
            suspended=len(resumable),
            starting=starting,
            worker_count=self.worker_count,
            max_workers=p.MAX_WORKERS,
            interval=p.DECISION_INTERVAL,
            band_low=p.MIN_AVG_TIME,
            band_high=p.MAX_AVG_TIME,
            min_heartbeats=p.MIN_MEASURE_LOAD_HB,
        )
        return obs, suspended, resumable

    def _apply(
        self, verdict: ScalingVerdict, obs: ScalingObservation, table: dict[int, Command | None], resumable: list[int], now: float
    ) -> None:
        """Turn ``verdict.desired`` into SHUTDOWNs (from the end of the active list) or RESUMEs then CREATEs."""
        if verdict.desired is None:
            return
        change = verdict.desired - obs.replicas
        if change < 0:
            if self.policy.seed_scale_in:
                pool, excess = obs.active, -change
            else:  # pending workers go first (they keep booting: fewer serving ones are shut down)
                pool, excess = obs.serving, -change - obs.pending
            remove = max(0, min(excess, len(pool)))
            for vm_id in pool[len(pool) - remove :]:
                table[vm_id] = Command(CommandKind.SHUTDOWN, vm_id, "scale_in_shutdown")
        elif change > 0:
            resumes = min(change, len(resumable))
            if self.modes.cap_resumes:
                resumes = min(resumes, max(0, obs.max_workers - obs.replicas))
            for vm_id in resumable[:resumes]:
                table[vm_id] = Command(CommandKind.RESUME, vm_id, "scale_out_resume")
            to_create = change - resumes
            while to_create > 0 and self._create(VMType.WORKER, now, "scale_out_create") is not None:
                to_create -= 1

    def _enforce_cap(self, obs: ScalingObservation, table: dict[int, Command | None]) -> None:
        """The ``drain_above_cap`` extension: at most MAX_WORKERS serve.

        Workers about to start serving (an INIT to one not yet RUNNING: just booted, resumed or in ERROR) are
        suspended instead when no room is left (``cap_suspend``); serving workers beyond MAX_WORKERS are drained
        from the end of the active list (``cap_shutdown``).
        """
        leaving = {
            vm_id
            for vm_id, c in table.items()
            if c is not None and c.kind in (CommandKind.SHUTDOWN, CommandKind.DELETE, CommandKind.SUSPEND)
        }
        serving = [vm_id for vm_id in obs.serving if vm_id not in leaving]
        room = obs.max_workers - len(serving)
        for vm in self._vms:
            command = table.get(vm.id)
            newest = self._newest(vm.id)
            joining = (
                vm.type == VMType.WORKER
                and command is not None
                and command.kind == CommandKind.INIT
                and (newest is None or newest.app_state != AppState.RUNNING)
            )
            if not joining:
                continue
            if room > 0:
                room -= 1
            else:
                table[vm.id] = Command(CommandKind.SUSPEND, vm.id, "cap_suspend")
        excess = len(serving) - obs.max_workers
        if excess > 0:
            for vm_id in serving[len(serving) - excess :]:
                table[vm_id] = Command(CommandKind.SHUTDOWN, vm_id, "cap_shutdown")

    # ---- executing ----------------------------------------------------------------------------

    def _create(self, vm_type: VMType, now: float, rule: str) -> int | None:
        """CREATE a VM, or None when a worker would exceed MAX_WORKERS."""
        if vm_type == VMType.WORKER and self.worker_count >= self.params.MAX_WORKERS:
            return None
        vm_id = self.cloud.create(vm_type, now, rule)
        self._sent.append(Command(CommandKind.CREATE, vm_id, rule, vm_type))
        self._types[vm_id] = vm_type
        self._last[vm_id] = (now, CommandKind.CREATE)
        self._running_since[vm_id] = self._stamp(now)
        if vm_type == VMType.WORKER:
            self.worker_count += 1
        return vm_id

    def _send(self, command: Command, now: float) -> None:
        vm_id = command.vm_id
        kind = command.kind
        if kind == CommandKind.DELETE:
            if self._types.get(vm_id) == VMType.WORKER:
                self.worker_count -= 1
            self._forget(vm_id, now)
            self._deleted.add(vm_id)
        elif kind == CommandKind.SUSPEND:
            self._hb.pop(vm_id, None)
            self._close_account(vm_id, now)
        elif kind == CommandKind.RESUME:
            self._running_since.setdefault(vm_id, self._stamp(now))
        self.cloud.execute(command, now)
        self._sent.append(command)
        if kind != CommandKind.DELETE:
            previous = self._last.get(vm_id)
            if previous is None or previous[1] != kind:  # re-sending keeps the first time
                self._last[vm_id] = (now, kind)

    def _close_account(self, vm_id: int, now: float) -> None:
        since = self._running_since.pop(vm_id, None)
        if since is not None:  # already closed (e.g. FAILED after SUSPEND): nothing to add
            self._closed_seconds += self._stamp(now) - since
