"""A hand-driven fake cloud and a harness for the seed's VM controller (shared by the controller and policy tests)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.autoscaling.seed_conf import AutoscalerParams
from engine.vmworld.controller import ACTIONS, RULES, VMController
from engine.vmworld.model import AppState, Command, CommandKind, Heartbeat, VMInfo, VMState, VMType, vm_address
from engine.vmworld.params import ControllerParams

A = AppState
K = CommandKind
S = VMState
MASTER, WORKER = VMType.MASTER, VMType.WORKER


class FakeCloud:
    """A VM list the tests mutate by hand; DELETE removes a VM from the list, nothing else acts."""

    def __init__(self, vms: Iterable[tuple[int, VMType, VMState]] = (), reactive: bool = False):
        self.vms: dict[int, VMInfo] = {i: VMInfo(i, t, s, vm_address(i)) for i, t, s in vms}
        self.next_id = 100
        self.sent: list[Command] = []
        self.reactive = reactive  # SUSPEND/RESUME change the state at once

    def list_vms(self) -> list[VMInfo]:
        return list(self.vms.values())

    def create(self, vm_type: VMType, now: float, rule: str) -> int:
        vm_id = self.next_id
        self.next_id += 1
        self.vms[vm_id] = VMInfo(vm_id, vm_type, S.PENDING, vm_address(vm_id))
        self.sent.append(Command(K.CREATE, vm_id, rule, vm_type))
        return vm_id

    def execute(self, command: Command, now: float) -> None:
        assert command.vm_id in self.vms, f"command to an unlisted VM: {command}"
        self.sent.append(command)
        if command.kind == K.DELETE:
            del self.vms[command.vm_id]
        elif self.reactive and command.kind == K.SUSPEND:
            self.set(command.vm_id, S.SUSPENDED)
        elif self.reactive and command.kind == K.RESUME:
            self.set(command.vm_id, S.ACTIVE)

    def set(self, vm_id: int, state: VMState) -> None:
        self.vms[vm_id] = VMInfo(vm_id, self.vms[vm_id].type, state, self.vms[vm_id].address)

    def workers(self) -> list[int]:
        return [v.id for v in self.vms.values() if v.type == WORKER]


class Harness:
    """An autoscaler on a fake cloud, stepped every 10 s; the master beats RUNNING unless told not to."""

    def __init__(self, vms=(), threads: int = 2, avg_time: float = 5.0, modes: ControllerParams | None = None, **params):
        self.cloud = FakeCloud(vms)
        self.params = AutoscalerParams(**params)
        self.scaler = VMController(self.params, self.cloud, modes=modes)
        self.threads = threads
        self.avg_time = avg_time
        self.now = 0.0
        self.scaler.start(self.now)

    def beat(self, state: AppState, **fields) -> Heartbeat:
        fields.setdefault("threads", self.threads)
        fields.setdefault("avg_time", self.avg_time)
        return Heartbeat(self.now, state, **fields)

    def step(
        self,
        beats: Mapping[int, object] | None = None,
        *,
        dt: float = 10.0,
        queue: Iterable[int] = (0,),
        master: bool = True,
        running: Iterable[int] = (),
    ):
        """``beats``: vm id -> AppState, Heartbeat, or a list of them; ``running``: ids beating RUNNING."""
        self.now += dt
        out: dict[int, list[Heartbeat]] = {}
        for vm_id in running:
            out[vm_id] = [self.beat(A.RUNNING)]
        for vm_id, value in (beats or {}).items():
            items = value if isinstance(value, list) else [value]
            out[vm_id] = [self.beat(v) if isinstance(v, AppState) else v for v in items]
        if master and self.scaler.master_id not in out:
            out[self.scaler.master_id] = [Heartbeat(self.now, A.RUNNING, queue_length=q) for q in queue]
        before = len(self.cloud.sent)
        decision = self.scaler.step(self.now, out)
        assert list(decision.commands) == self.cloud.sent[before:], "Decision lists the commands in the order sent"
        assert decision.time == self.now and decision.action in ACTIONS
        assert all(c.rule in RULES for c in decision.commands)
        return decision


def kinds(decision, vm_id=None):
    return [(c.kind, c.rule) for c in decision.commands if vm_id is None or c.vm_id == vm_id]


def only(decision, vm_id):
    """The one command sent to ``vm_id`` this round, as (kind, rule), or None."""
    sent = kinds(decision, vm_id)
    assert len(sent) <= 1
    return sent[0] if sent else None


#: What the round the adopted master is found RUNNING sends after any CREATE and RESUMEs: its own INIT (the
#: original executes the master's command after the if/else of ``_handle_master``, recovery round included).
MASTER_INIT = (K.INIT, "r10_adopt_init")


def adopted(*workers: tuple[int, VMState], **params) -> Harness:
    """Master 1 and the given workers exist before start; the master is found RUNNING (and INIT'd) at t=10."""
    h = Harness([(1, MASTER, S.ACTIVE)] + [(i, WORKER, s) for i, s in workers], **params)
    d = h.step()
    assert d.action == "master_recovered" and kinds(d) == [MASTER_INIT]
    return h


def fresh_worker(**params) -> Harness:
    """Master 1 found RUNNING (and INIT'd) at t=10, which creates worker 100 (last command CREATE at t=10)."""
    h = Harness([(1, MASTER, S.ACTIVE)], **params)
    d = h.step()
    assert kinds(d) == [(K.CREATE, "initial_worker"), MASTER_INIT]
    assert h.cloud.workers() == [100] and h.scaler.last_command(100) == (10.0, K.CREATE)
    return h


def settled(active: int = 4, suspended: int = 0, **params) -> Harness:
    """Master 1, ``active`` RUNNING workers (ids 2..), then ``suspended`` SUSPENDED ones, all INIT'd by t=20.

    With 2 threads and 5 s per task a master queue of 32 drains in 32/8*5 = 20 s: inside [10, 30].
    """
    ids = list(range(2, 2 + active))
    sus = list(range(2 + active, 2 + active + suspended))
    h = Harness([(1, MASTER, S.ACTIVE)] + [(i, WORKER, S.ACTIVE) for i in ids] + [(i, WORKER, S.SUSPENDED) for i in sus], **params)
    h.active_ids, h.suspended_ids = ids, sus
    d = h.step(running=ids, queue=[32])
    assert d.action == "master_recovered" and h.scaler.worker_count == active + suspended
    assert kinds(d) == [MASTER_INIT]
    d = h.step(running=ids, queue=[32])
    assert kinds(d) == [(K.INIT, "r10_adopt_init")] * active and d.action == "not_measured"
    return h


# ---- start-up and master first -------------------------------------------------------------------
