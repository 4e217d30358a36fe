"""One VM as the cloud and its app daemon see it, and the timers that belong to one life of a VM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from engine.vmworld.jobs import WorkerSlot
from engine.vmworld.model import CONTROLLER_PORT, AppState, VMState, VMType, vm_address


class VM:
    """A listed VM: cloud state, app state, where it runs; ``epoch`` is bumped when a life of the VM ends."""

    __slots__ = (
        "id",
        "type",
        "state",
        "app",
        "alive",
        "epoch",
        "created_at",
        "placement",
        "slot",
        "master_link",
        "on_node",
        "address",
        "sender",
        "cloud_epoch",
    )

    def __init__(self, vm_id: int, vm_type: VMType, now: float):
        self.id = vm_id
        self.type = vm_type
        self.state = VMState.PENDING
        self.app: AppState | None = None  # None until the daemon is up
        self.alive = True  # False once the guest crashed
        self.epoch = 0  # bumped to cancel timers that belong to an earlier life of the guest (its daemon)
        self.cloud_epoch = 0  # bumped to cancel the cloud's own timers (a suspend in progress) when the VM is resumed or deleted
        self.created_at = now
        self.placement: Any = None
        self.slot: WorkerSlot | None = None
        self.master_link: int | None = None
        self.on_node: str | None = None
        self.address = vm_address(vm_id)
        self.sender = (self.address, CONTROLLER_PORT)  # where its datagrams come from


def later(env: simpy.Environment, delay: float, vm: VM, fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn(vm, *args)`` after ``delay`` unless the VM has moved on to another life meanwhile."""
    epoch = vm.epoch
    ev = env.timeout(max(0.0, delay))
    ev.callbacks.append(lambda _e: vm.epoch == epoch and fn(vm, *args))


def later_cloud(env: simpy.Environment, delay: float, vm: VM, fn: Callable[..., Any], *args: Any) -> None:
    """Like :func:`later` for the hypervisor's operations: a guest crash does not cancel them, a newer cloud command does."""
    epoch = vm.cloud_epoch
    ev = env.timeout(max(0.0, delay))
    ev.callbacks.append(lambda _e: vm.cloud_epoch == epoch and fn(vm, *args))
