"""The cloud, the app daemons on its VMs and the heartbeat channel: the world the VM autoscaler drives.

VM lifecycle: CREATE -> PENDING (placement, image pull, boot) -> ACTIVE, or FAILED on a boot failure;
SUSPEND -> SUSPENDED; RESUME -> PENDING (resuming) -> ACTIVE; DELETE removes the VM from the list.
The app daemon on an ACTIVE VM starts READY; INIT moves it to INIT and then RUNNING (a worker needs a
running master, or it goes to ERROR); SHUTDOWN drains a worker's jobs and returns it to READY.
Heartbeats and app commands travel over a lossy datagram channel.

Choices where the real systems leave room (documented, tested):
* the cloud refuses SUSPEND of a VM that is not ACTIVE and RESUME of one that is not SUSPENDED
  (the command is logged as refused, as OpenNebula answers such requests with an error);
* a crash (fault) kills the guest: the cloud still lists the VM ACTIVE, it just falls silent, so the
  autoscaler finds it through its stale heartbeats; a node failure marks its VMs FAILED;
* a resumed worker that was RUNNING comes back connected to the master it had; if that master is
  gone it reports ERROR until it is given INIT again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import simpy

from .jobs import JobFlow, WorkerSlot
from .params import Mirror, PlatformParams
from .rng import gamma_delay
from .vm_model import AppState, Command, CommandKind, Heartbeat, VMInfo, VMState, VMType

LogFn = Callable[..., None]


class VM:
    __slots__ = ("id", "type", "state", "app", "alive", "epoch", "created_at", "placement", "slot", "master_link", "on_node")

    def __init__(self, vm_id: int, vm_type: VMType, now: float):
        self.id = vm_id
        self.type = vm_type
        self.state = VMState.PENDING
        self.app: AppState | None = None  # None until the daemon is up
        self.alive = True  # False once the guest crashed
        self.epoch = 0  # bumped to cancel timers that belong to an earlier life of the VM
        self.created_at = now
        self.placement: Any = None
        self.slot: WorkerSlot | None = None
        self.master_link: int | None = None
        self.on_node: str | None = None


class World:
    """VMs, app daemons and heartbeats; implements the ``Cloud`` protocol the autoscaler drives."""

    def __init__(
        self,
        env: simpy.Environment,
        platform: PlatformParams,
        jobs: JobFlow,
        rng: np.random.Generator,
        channel_rng: np.random.Generator,
        log: LogFn,
        placement: Any = None,
    ):
        self.env = env
        self.p = Mirror(platform)  # read on every heartbeat
        self.jobs = jobs
        self.rng = rng
        self.channel_rng = channel_rng
        self.log = log
        self.placement = placement
        self.vms: dict[int, VM] = {}  # listed VMs in the cloud's order
        self.gone: dict[int, VM] = {}  # deleted VMs
        self.monitor: dict[int, list[Heartbeat]] = {}
        self.running_master: int | None = None
        self.outage_until = -1.0
        self._next_id = 0
        self._image_ready: dict[tuple[str, str], float] = {}  # (node, image) -> when its pull completes

    # -- helpers ---------------------------------------------------------------------------
    def _later(self, delay: float, vm: VM, fn: Callable[..., None], *args: Any) -> None:
        """Call ``fn(vm, *args)`` after ``delay`` unless the VM has moved on to another life."""
        epoch = vm.epoch
        ev = self.env.timeout(max(0.0, delay))
        ev.callbacks.append(lambda _e: vm.epoch == epoch and fn(vm, *args))

    def _delay(self, mean: float) -> float:
        return gamma_delay(self.rng, mean, self.p.delay_cv)

    def _set_state(self, vm: VM, state: VMState, detail: str = "") -> None:
        vm.state = state
        self.log("vm", vm=vm.id, vm_type=vm.type.value, command=state.value, rule="", detail=detail)

    def _lost(self) -> bool:
        return self.env.now < self.outage_until or self.channel_rng.random() < self.p.heartbeat_loss

    # -- the Cloud protocol ----------------------------------------------------------------
    def list_vms(self) -> list[VMInfo]:
        return [VMInfo(vm.id, vm.type, vm.state) for vm in self.vms.values()]

    def create(self, vm_type: VMType, now: float, rule: str) -> int:
        vm_id = self._next_id
        self._next_id += 1
        vm = VM(vm_id, vm_type, now)
        self.vms[vm_id] = vm
        self.log("command", vm=vm_id, vm_type=vm_type.value, command=CommandKind.CREATE.value, rule=rule, detail="")
        if vm_type is VMType.WORKER and self.placement is not None:
            placed = self.placement.request(vm_id, now)
            if placed is None:
                self.log("placement", vm=vm_id, vm_type=vm_type.value, command="PENDING", rule="", detail="no feasible node")
                return vm_id
            self._placed(vm, placed)
        else:
            self._boot(vm, 0.0)
        return vm_id

    def execute(self, command: Command, now: float) -> None:
        vm = self.vms.get(command.vm_id)
        kind = command.kind
        refused = vm is None or (kind is CommandKind.SUSPEND and vm.state is not VMState.ACTIVE) or (
            kind is CommandKind.RESUME and vm.state is not VMState.SUSPENDED
        )
        self.log(
            "command",
            vm=command.vm_id,
            vm_type=vm.type.value if vm else None,
            command=kind.value,
            rule=command.rule,
            detail="refused by the cloud" if refused else "",
        )
        if refused:
            return
        if kind is CommandKind.DELETE:
            self._delete(vm, now)
        elif kind is CommandKind.SUSPEND:
            self._suspend(vm, now)
        elif kind is CommandKind.RESUME:
            self._resume(vm, now)
        elif kind is CommandKind.INIT:
            self._send(vm, self._app_init)
        elif kind is CommandKind.SHUTDOWN:
            self._send(vm, self._app_shutdown)

    def flush_heartbeats(self) -> dict[int, list[Heartbeat]]:
        out, self.monitor = self.monitor, {}
        return out

    # -- cloud side ------------------------------------------------------------------------
    def _placed(self, vm: VM, placed: Any) -> None:
        vm.placement = placed
        vm.on_node = placed.node
        # The scheduler counts an image as cached once a pod is bound; the node still has to pull it
        # once, and pods bound meanwhile wait for that same pull (as a kubelet does).
        now = self.env.now
        key = (placed.node, self.placement.cluster_params.worker_image)
        ready = now + placed.schedule_seconds + placed.pull_seconds
        if placed.pull_seconds > 0 or key not in self._image_ready:
            self._image_ready[key] = ready
        ready = max(ready, self._image_ready[key])
        wait = ready - now
        self.log(
            "placement",
            vm=vm.id,
            vm_type=vm.type.value,
            command="BIND",
            rule="",
            detail=f"node={placed.node} feasible={placed.feasible} score={placed.score:g} pull={max(0.0, wait - placed.schedule_seconds):.1f}s",
        )
        self._boot(vm, wait)

    def _boot(self, vm: VM, extra: float) -> None:
        self._later(extra + self._delay(self.p.boot_time), vm, self._booted)

    def _booted(self, vm: VM) -> None:
        if vm.state is not VMState.PENDING:
            return
        if self.rng.random() < self.p.boot_failure_prob:
            self._set_state(vm, VMState.FAILED, "boot failure")
            return
        self._activate(vm)

    def _activate(self, vm: VM, app: AppState | None = None) -> None:
        self._set_state(vm, VMState.ACTIVE)
        if app is None:
            self._later(self._delay(self.p.app_start_time), vm, self._daemon_up, AppState.READY)
        else:
            self._daemon_up(vm, app)

    def _daemon_up(self, vm: VM, app: AppState) -> None:
        vm.app = app
        if app is AppState.RUNNING:
            self._app_running(vm)
        # first heartbeat at a random phase so that VMs do not beat in lockstep
        self._later(self.rng.uniform(0.0, self.p.heartbeat_interval), vm, self._heartbeat)

    def _delete(self, vm: VM, now: float) -> None:
        self._stop_guest(vm, now)
        vm.state = VMState.DELETED
        del self.vms[vm.id]
        self.gone[vm.id] = vm
        self.monitor.pop(vm.id, None)
        if self.placement is not None and vm.type is VMType.WORKER:
            for placed in self.placement.release(vm.id, now):
                waiting = self.vms.get(placed.vm_id)
                if waiting is not None and waiting.state is VMState.PENDING and waiting.placement is None:
                    self._placed(waiting, placed)

    def _suspend(self, vm: VM, now: float) -> None:
        app = vm.app
        self._stop_guest(vm, now)
        vm.app = app  # memory is kept across a suspend
        self._later(self._delay(self.p.suspend_time), vm, self._suspended)

    def _suspended(self, vm: VM) -> None:
        self._set_state(vm, VMState.SUSPENDED)

    def _resume(self, vm: VM, now: float) -> None:
        vm.epoch += 1
        self._set_state(vm, VMState.PENDING, "resuming")
        self._later(self._delay(self.p.resume_time), vm, self._resumed)

    def _resumed(self, vm: VM) -> None:
        app = vm.app or AppState.READY
        if app in (AppState.RUNNING, AppState.INIT, AppState.SHUTTING_DOWN):
            if vm.type is VMType.MASTER:
                app = AppState.READY
            elif vm.master_link != self.running_master or vm.master_link is None:
                app = AppState.ERROR
            elif app is not AppState.RUNNING:
                app = AppState.READY
        vm.app = None
        self._activate(vm, app)

    def _stop_guest(self, vm: VM, now: float) -> None:
        """Whatever ran on the VM stops now: timers, heartbeats, threads; a master stops dispatching."""
        vm.epoch += 1
        vm.app = None
        if vm.type is VMType.WORKER:
            self.jobs.remove(vm.id, now)
        elif self.running_master == vm.id:
            self.running_master = None
            self.jobs.pause(now)

    # -- faults ----------------------------------------------------------------------------
    def crash(self, vm: VM, now: float) -> None:
        """The guest dies: silent from now on; the cloud still lists it as it was."""
        if vm.state is VMState.PENDING:
            self._stop_guest(vm, now)
            self._set_state(vm, VMState.FAILED, "crashed while booting")
            return
        self._stop_guest(vm, now)
        vm.alive = False

    def fail(self, vm: VM, now: float, detail: str) -> None:
        """The cloud reports the VM FAILED (its host died)."""
        self._stop_guest(vm, now)
        vm.alive = False
        self._set_state(vm, VMState.FAILED, detail)

    # -- the app daemon and the channel ----------------------------------------------------
    def _send(self, vm: VM, handler: Callable[[VM], None]) -> None:
        if vm.state is not VMState.ACTIVE or not vm.alive or vm.app is None:
            return  # nobody listens
        if self.channel_rng.random() < self.p.heartbeat_loss:
            return
        self._later(self.p.app_command_latency, vm, handler)

    def _app_init(self, vm: VM) -> None:
        if vm.app in (AppState.READY, AppState.ERROR):
            vm.app = AppState.INIT
            self._later(self._delay(self.p.app_init_time), vm, self._app_initialised)

    def _app_initialised(self, vm: VM) -> None:
        if vm.app is not AppState.INIT:
            return
        if vm.type is VMType.WORKER and self.running_master is None:
            vm.app = AppState.ERROR  # no master to connect to
            return
        vm.app = AppState.RUNNING
        self._app_running(vm)

    def _app_running(self, vm: VM) -> None:
        now = self.env.now
        if vm.type is VMType.MASTER:
            self.running_master = vm.id
            self.jobs.resume(now)
            return
        vm.master_link = self.running_master
        if vm.slot is None:
            placed = vm.placement
            vm.slot = WorkerSlot(
                vm.id,
                speed=placed.speed_factor if placed is not None else 1.0,
                storage_seconds=placed.storage_seconds_per_job if placed is not None else 0.0,
            )
        self.jobs.add_threads(vm.slot, self.p.worker_threads, now)

    def _app_shutdown(self, vm: VM) -> None:
        if vm.type is VMType.MASTER:
            return
        if vm.app is AppState.INIT:
            vm.app = AppState.READY
        elif vm.app is AppState.RUNNING:
            vm.app = AppState.SHUTTING_DOWN
            now = self.env.now
            done = self.jobs.drain(vm.id, now)
            self._later(done - now, vm, self._drained)

    def _drained(self, vm: VM) -> None:
        if vm.app is AppState.SHUTTING_DOWN:
            self.jobs.remove(vm.id, self.env.now)
            vm.app = AppState.READY

    def _heartbeat(self, vm: VM) -> None:
        now = self.env.now
        if vm.state is VMState.ACTIVE and vm.alive and vm.app is not None:
            if not self._lost():
                self.monitor.setdefault(vm.id, []).append(self._beat(vm, now))
            self._later(self.p.heartbeat_interval, vm, self._heartbeat)

    def _beat(self, vm: VM, now: float) -> Heartbeat:
        jobs = self.jobs
        jobs.catch_up(now)
        if vm.type is VMType.MASTER:
            queue = jobs.queue_length(now) if vm.app is AppState.RUNNING else 0
            return Heartbeat(now, vm.app, queue_length=queue, cpu=0.2, mem=0.3, disk=0.1)
        threads = self.p.worker_threads
        busy = jobs.busy_threads(vm.id, now)
        cpu = busy / threads
        avg = vm.slot.avg_time if vm.slot is not None else 0.0
        return Heartbeat(now, vm.app, avg_time=avg, threads=threads, cpu=cpu, mem=0.2 + 0.3 * cpu, disk=0.1)
