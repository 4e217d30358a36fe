"""The VM cloud (an OpenNebula-like IaaS): the VM list, VM commands, boot, suspend, resume, delete, and faults.

VM lifecycle: CREATE -> PENDING (placement, image pull, boot) -> ACTIVE, or FAILED on a boot failure;
SUSPEND -> SUSPENDED; RESUME -> PENDING (resuming) -> ACTIVE; DELETE removes the VM from the list. The
app on an ACTIVE VM is the daemon's business (:mod:`engine.vmworld.daemon`). :class:`VMCloud` implements
the controller's :class:`~engine.vmworld.rounds.Cloud` protocol.

Choices where the real systems leave room (documented, tested):
* the cloud refuses SUSPEND of a VM that is not ACTIVE and RESUME of one that is not SUSPENDED
  (the command is logged as refused, as OpenNebula answers such requests with an error);
* a crash (fault) kills the guest: the cloud still lists the VM ACTIVE, it just falls silent, so the
  controller finds it through its stale heartbeats; a node failure marks its VMs FAILED; a suspend already
  under way completes (it is the hypervisor's, not the guest's);
* a resumed worker that was RUNNING comes back connected to the master it had; if that master is
  gone it reports ERROR until it is given INIT again.
"""

from __future__ import annotations

import numpy as np
import simpy

from engine.core.events import EventLog
from engine.core.params import Mirror
from engine.core.rng import gamma_delay
from engine.scheduling.service import Placement, PlacementService
from engine.vmworld.daemon import AppDaemons
from engine.vmworld.model import AppState, Command, CommandKind, VMInfo, VMState, VMType
from engine.vmworld.vm import VM, later, later_cloud


class VMCloud:
    """The cloud's VMs in the cloud's order; worker VMs are placed on the cluster's nodes when there is one."""

    def __init__(
        self,
        env: simpy.Environment,
        platform: Mirror,
        daemons: AppDaemons,
        rng: np.random.Generator,
        log: EventLog,
        placement: PlacementService | None = None,
    ):
        self.env = env
        self.p = platform
        self.daemons = daemons
        self.rng = rng
        self.log = log
        self.placement = placement
        self.vms: dict[int, VM] = {}  # listed VMs in the cloud's order
        self._listing: dict[int, VMInfo] = {}  # their rows of the VM list, in the same order, replaced on a state change
        self.gone: dict[int, VM] = {}  # deleted VMs
        self._next_id = 0
        self._billed = 0.0  # closed billing spans, seconds
        self._billing: dict[int, float] = {}  # VM -> since when it bills (not SUSPENDED, FAILED or deleted)

    def _delay(self, mean: float) -> float:
        return gamma_delay(self.rng, mean, self.p.delay_cv)

    def _bill(self, vm: VM, on: bool) -> None:
        now = self.env.now
        if on:
            self._billing.setdefault(vm.id, now)
        elif vm.id in self._billing:
            self._billed += now - self._billing.pop(vm.id)

    def vm_seconds(self, now: float) -> float:
        """The reported VM time, from the cloud's own state changes only: every VM listed and not SUSPENDED or FAILED, up to ``now``."""
        return self._billed + sum(now - since for since in self._billing.values())

    def _set_state(self, vm: VM, state: VMState, reason: str = "", node: str | None = None) -> None:
        self._bill(vm, state not in (VMState.SUSPENDED, VMState.FAILED))
        vm.state = state
        if vm.id in self._listing:
            self._listing[vm.id] = VMInfo(vm.id, vm.type, state, vm.address)
        self.log("vm", vm=vm.id, vm_type=vm.type.value, command=state.value, reason=reason, node=node)

    # -- the Cloud protocol ----------------------------------------------------------------------------
    def list_vms(self) -> list[VMInfo]:
        return list(self._listing.values())  # kept current by every state change: read every controller round

    def create(self, vm_type: VMType, now: float, rule: str) -> int:
        vm_id = self._next_id
        self._next_id += 1
        vm = VM(vm_id, vm_type, now)
        self.vms[vm_id] = vm
        self._listing[vm_id] = VMInfo(vm_id, vm_type, vm.state, vm.address)
        self._bill(vm, True)
        self.log("command", vm=vm_id, vm_type=vm_type.value, command=CommandKind.CREATE.value, rule=rule)
        if vm_type is VMType.WORKER and self.placement is not None:
            placed = self.placement.request(vm_id, now)
            if placed is None:
                self.log(
                    "placement",
                    vm=vm_id,
                    vm_type=vm_type.value,
                    command="PENDING",
                    reason="no_feasible_node",
                    placement=self.placement.last_row,
                )
                return vm_id
            self._placed(vm, placed)
        else:
            self._boot(vm, 0.0)
        return vm_id

    def execute(self, command: Command, now: float) -> None:
        vm = self.vms.get(command.vm_id)
        kind = command.kind
        refused = (
            vm is None
            or (kind is CommandKind.SUSPEND and vm.state is not VMState.ACTIVE)
            or (kind is CommandKind.RESUME and vm.state is not VMState.SUSPENDED)
        )
        self.log(
            "command",
            vm=command.vm_id,
            vm_type=vm.type.value if vm else None,
            command=kind.value,
            rule=command.rule,
            reason="refused_by_cloud" if refused else "",
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
            self.daemons.send_init(vm)
        elif kind is CommandKind.SHUTDOWN:
            self.daemons.send_shutdown(vm)

    # -- placement, boot -------------------------------------------------------------------------------
    def _placed(self, vm: VM, placed: Placement) -> None:
        vm.placement = placed
        vm.on_node = placed.node
        wait = self.placement.image_wait(placed, self.env.now)
        self.log("placement", vm=vm.id, vm_type=vm.type.value, command="BIND", node=placed.node, placement=placed.row, seconds=wait)
        self._boot(vm, wait)

    def _boot(self, vm: VM, extra: float) -> None:
        later(self.env, extra + self._delay(self.p.boot_time), vm, self._booted)

    def _booted(self, vm: VM) -> None:
        if vm.state is not VMState.PENDING:
            return
        if self.rng.random() < self.p.boot_failure_prob:
            self._set_state(vm, VMState.FAILED, "boot_failure")
            return
        self._activate(vm)

    def _activate(self, vm: VM, app: AppState | None = None) -> None:
        self._set_state(vm, VMState.ACTIVE)
        self.daemons.boot(vm, app)

    # -- VM commands -----------------------------------------------------------------------------------
    def _delete(self, vm: VM, now: float) -> None:
        vm.cloud_epoch += 1
        self.daemons.stop(vm, now)
        self._bill(vm, False)
        vm.state = VMState.DELETED
        del self.vms[vm.id]
        del self._listing[vm.id]
        self.gone[vm.id] = vm
        self.daemons.channel.drop(vm)
        if self.placement is not None and vm.type is VMType.WORKER:
            for placed in self.placement.release(vm.id, now):
                waiting = self.vms.get(placed.vm_id)
                if waiting is not None and waiting.state is VMState.PENDING and waiting.placement is None:
                    self._placed(waiting, placed)

    def _suspend(self, vm: VM, now: float) -> None:
        app = vm.app
        self.daemons.stop(vm, now)
        vm.app = app  # memory is kept across a suspend
        vm.cloud_epoch += 1
        # the hypervisor suspends the VM whatever its guest does meanwhile (a crash must not leave it ACTIVE for good)
        later_cloud(self.env, self._delay(self.p.suspend_time), vm, self._suspended)

    def _suspended(self, vm: VM) -> None:
        self._set_state(vm, VMState.SUSPENDED)

    def _resume(self, vm: VM, now: float) -> None:
        vm.epoch += 1
        vm.cloud_epoch += 1
        self._set_state(vm, VMState.PENDING, "resuming")
        later(self.env, self._delay(self.p.resume_time), vm, self._resumed)

    def _resumed(self, vm: VM) -> None:
        app = self.daemons.resumed_state(vm)
        vm.app = None
        self._activate(vm, app)

    # -- faults ----------------------------------------------------------------------------------------
    def crash(self, vm: VM, now: float) -> None:
        """The guest dies: silent from now on; the cloud still lists it as it was."""
        if vm.state is VMState.PENDING:
            self.daemons.stop(vm, now)
            self._set_state(vm, VMState.FAILED, "crashed_while_booting")
            return
        self.daemons.stop(vm, now)
        vm.alive = False

    def fail(self, vm: VM, now: float, node: str) -> None:
        """The cloud reports the VM FAILED (its host ``node`` died)."""
        self.daemons.stop(vm, now)
        vm.alive = False
        self._set_state(vm, VMState.FAILED, "node_failed", node=node)
