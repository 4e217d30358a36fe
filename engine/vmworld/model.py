"""The vocabulary shared by the cloud, the app daemons and the seed's VM controller."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple


class VMType(StrEnum):
    MASTER = "MASTER"
    WORKER = "WORKER"


class VMState(StrEnum):
    """Cloud state of a VM."""

    INIT = "INIT"
    PENDING = "PENDING"  # booting
    ACTIVE = "ACTIVE"
    SUSPENDED = "SUSPENDED"
    FAILED = "FAILED"
    DELETED = "DELETED"  # gone from the cloud's list; kept only for the record


class AppState(StrEnum):
    """State reported by the app daemon on a VM."""

    READY = "READY"
    INIT = "INIT"
    RUNNING = "RUNNING"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    ERROR = "ERROR"


class CommandKind(StrEnum):
    # cloud commands
    CREATE = "CREATE"
    DELETE = "DELETE"
    SUSPEND = "SUSPEND"
    RESUME = "RESUME"
    # app commands (datagrams to the VM's daemon)
    INIT = "INIT"
    SHUTDOWN = "SHUTDOWN"

    @property
    def is_app(self) -> bool:
        return self in (CommandKind.INIT, CommandKind.SHUTDOWN)


class Heartbeat(NamedTuple):
    """One heartbeat as buffered by the monitor (``recv_time`` is when the controller side got it).

    Immutable; a named tuple rather than a frozen dataclass because one is made per VM per heartbeat interval
    (a frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``, several times slower)."""

    recv_time: float
    app_state: AppState
    queue_length: int = 0  # the master's job queue length
    avg_time: float = 0.0  # a worker's average task time (s)
    threads: int = 0  # a worker's worker threads
    cpu: float = 0.0
    mem: float = 0.0
    disk: float = 0.0


class VMInfo(NamedTuple):
    """One row of the cloud's VM list, in the cloud's order; ``address`` is the VM's IP (heartbeats come from it).

    Immutable; a named tuple for the same reason as :class:`Heartbeat` (one per VM per controller round)."""

    id: int
    type: VMType
    state: VMState
    address: str = ""


#: The UDP port app daemons send heartbeats from and take app commands on (the original's CONTROLLER_PORT).
CONTROLLER_PORT = 5555


def vm_address(vm_id: int) -> str:
    """The IP address the cloud gives VM ``vm_id`` (10.x.y.z, unique per id)."""
    return f"10.{(vm_id >> 16) & 255}.{(vm_id >> 8) & 255}.{vm_id & 255}"


@dataclass(frozen=True, slots=True)
class Command:
    """A command the autoscaler sends, with the rule that produced it.

    ``vm_id`` is None for CREATE until the cloud assigns one; ``vm_type`` is set for CREATE.
    """

    kind: CommandKind
    vm_id: int | None
    rule: str
    vm_type: VMType | None = None
