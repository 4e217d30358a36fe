"""The VM cloud and the app daemons on a real simpy clock: lifecycle, refusals, suspend/resume memory, faults, heartbeats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import simpy

from engine.core.events import EventLog
from engine.core.params import Mirror
from engine.core.recorder import Recorder
from engine.vmworld.cloud import VMCloud
from engine.vmworld.daemon import AppDaemons, HeartbeatChannel
from engine.vmworld.jobs import JobFlow
from engine.vmworld.model import CONTROLLER_PORT, AppState, Command, CommandKind, VMState, VMType
from engine.vmworld.params import PlatformParams
from engine.workload.arrivals import ArrivalStream
from engine.workload.params import WorkloadParams
from engine.workload.service import ServiceTimes

K = CommandKind
FIXED = {"boot_time": 40.0, "resume_time": 8.0, "suspend_time": 3.0, "app_start_time": 2.0, "app_init_time": 3.0, "delay_cv": 0.0}


class World:
    """A cloud with daemons and a channel, no controller: the test sends the commands."""

    def __init__(self, **platform):
        self.env = simpy.Environment()
        self.params = PlatformParams(**{**FIXED, **platform})
        mirror = Mirror(self.params)
        workload = WorkloadParams(rate=0.0)
        self.jobs = JobFlow(ArrivalStream(workload, np.random.default_rng(1)), ServiceTimes(workload, np.random.default_rng(2)))
        self.recorder = Recorder()
        self.log = EventLog(self.recorder, lambda: self.env.now)
        self.channel = HeartbeatChannel(self.env, mirror, np.random.default_rng(3))
        self.daemons = AppDaemons(self.env, mirror, self.jobs, np.random.default_rng(4), self.channel)
        self.cloud = VMCloud(self.env, mirror, self.daemons, np.random.default_rng(4), self.log)

    def at(self, t: float) -> World:
        self.env.run(until=t)
        return self

    def send(self, kind: CommandKind, vm: int, rule: str = "test") -> None:
        self.cloud.execute(Command(kind, vm, rule), self.env.now)

    def vm(self, vm_id: int):
        return self.cloud.vms[vm_id]

    def events(self) -> pd.DataFrame:
        return self.recorder.frame("events")


def running_master_and_worker() -> World:
    w = World()
    w.cloud.create(VMType.MASTER, 0.0, "master_create")
    w.cloud.create(VMType.WORKER, 0.0, "scale_out_create")
    w.at(43.0)  # booted at 40, daemons READY at 42
    w.send(K.INIT, 1)  # the worker's INIT ends at 43.05 + 3 = 46.05, before the master runs: ERROR
    w.at(44.0)
    w.send(K.INIT, 0)  # the master runs from 44.05 + 3 = 47.05
    return w


def test_create_boots_then_the_daemon_comes_up_ready():
    w = World()
    vm_id = w.cloud.create(VMType.WORKER, 0.0, "scale_out_create")
    assert [v.state for v in w.cloud.list_vms()] == [VMState.PENDING]
    w.at(39.9)
    assert w.vm(vm_id).state is VMState.PENDING
    w.at(41.0)
    assert w.vm(vm_id).state is VMState.ACTIVE and w.vm(vm_id).app is None
    w.at(42.1)
    assert w.vm(vm_id).app is AppState.READY
    ev = w.events()
    assert ev.kind.tolist() == ["command", "vm"] and ev.command.tolist() == ["CREATE", "ACTIVE"] and ev.time.tolist() == [0.0, 40.0]
    assert w.cloud.list_vms()[0].address == "10.0.0.0"


def test_a_worker_without_a_running_master_goes_to_error_and_init_recovers_it():
    w = running_master_and_worker()
    w.at(50.0)
    assert w.vm(0).app is AppState.RUNNING and w.daemons.running_master == 0
    assert w.vm(1).app is AppState.ERROR
    w.send(K.INIT, 1)
    w.at(60.0)
    assert w.vm(1).app is AppState.RUNNING and w.vm(1).master_link == 0 and w.jobs.accepting_threads() == w.params.worker_threads


def test_the_cloud_refuses_suspend_of_a_vm_not_active_and_resume_of_one_not_suspended():
    w = World()
    w.cloud.create(VMType.WORKER, 0.0, "scale_out_create")
    w.send(K.SUSPEND, 0)
    w.send(K.RESUME, 0)
    refused = w.events().query("kind == 'command' and command in ['SUSPEND', 'RESUME']")
    assert refused.reason.tolist() == ["refused_by_cloud", "refused_by_cloud"] and refused.rule.tolist() == ["test", "test"]
    w.at(45.0)
    assert w.vm(0).state is VMState.ACTIVE  # the refused commands did nothing


def test_a_suspended_worker_keeps_its_app_state_and_resumes_into_it_while_its_master_runs():
    w = running_master_and_worker()
    w.at(50.0)
    w.send(K.INIT, 1)
    w.at(60.0)
    w.send(K.SUSPEND, 1)
    assert w.jobs.accepting_threads() == 0  # threads leave at once
    w.at(63.5)
    assert w.vm(1).state is VMState.SUSPENDED and w.vm(1).app is AppState.RUNNING  # memory kept
    w.send(K.RESUME, 1)
    assert w.vm(1).state is VMState.PENDING
    w.at(72.0)
    assert w.vm(1).state is VMState.ACTIVE and w.vm(1).app is AppState.RUNNING and w.jobs.accepting_threads() > 0
    states = w.events().query("kind == 'vm' and vm == 1")
    assert states.command.tolist() == ["ACTIVE", "SUSPENDED", "PENDING", "ACTIVE"] and states.reason.tolist()[2] == "resuming"


def test_a_worker_resumed_after_its_master_is_gone_reports_error():
    w = running_master_and_worker()
    w.at(50.0)
    w.send(K.INIT, 1)
    w.at(60.0)
    w.send(K.SUSPEND, 1)
    w.at(64.0)
    w.send(K.DELETE, 0)  # the master goes
    w.send(K.RESUME, 1)
    w.at(80.0)
    assert w.vm(1).app is AppState.ERROR and 0 not in w.cloud.vms and 0 in w.cloud.gone


def test_a_crashed_guest_falls_silent_while_the_cloud_still_lists_it_active():
    w = running_master_and_worker()
    w.at(50.0)
    w.channel.flush()
    w.cloud.crash(w.vm(0), w.env.now)
    w.at(80.0)
    beats = w.channel.flush()
    assert (w.vm(0).address, CONTROLLER_PORT) not in beats and (w.vm(1).address, CONTROLLER_PORT) in beats
    assert w.vm(0).state is VMState.ACTIVE and not w.vm(0).alive and w.daemons.running_master is None


def test_a_crash_while_booting_is_a_failed_vm():
    w = World()
    w.cloud.create(VMType.WORKER, 0.0, "scale_out_create")
    w.at(10.0)
    w.cloud.crash(w.vm(0), 10.0)
    w.at(60.0)
    assert w.vm(0).state is VMState.FAILED
    assert w.events().query("kind == 'vm'").reason.tolist() == ["crashed_while_booting"]


def test_heartbeats_are_lost_with_the_loss_probability_and_all_of_them_in_an_outage():
    w = running_master_and_worker()
    w.at(50.0)
    w.channel.flush()
    w.channel.outage(w.env.now + 20.0)
    w.at(70.0)
    assert w.channel.flush() == {}
    w.at(90.0)
    assert sum(len(v) for v in w.channel.flush().values()) >= 10  # two VMs, every 2 s
    w.params.heartbeat_loss = 1.0  # the mirror follows the section: no datagram gets through
    w.at(91.0)
    w.channel.flush()
    w.at(120.0)
    assert w.channel.flush() == {}


def test_a_deleted_vm_leaves_the_list_and_its_unread_heartbeats_are_dropped():
    w = running_master_and_worker()
    w.at(50.0)
    assert (w.vm(1).address, CONTROLLER_PORT) in w.channel.monitor
    address = w.vm(1).address
    w.send(K.DELETE, 1)
    assert 1 not in w.cloud.vms and (address, CONTROLLER_PORT) not in w.channel.monitor
    assert [v.id for v in w.cloud.list_vms()] == [0]
