"""The app daemon on every VM and the lossy datagram channel between the daemons and the controller.

The daemon on an ACTIVE VM starts READY; INIT moves it to INIT and then RUNNING (a worker needs a running
master, or it goes to ERROR); SHUTDOWN drains a worker's jobs and returns it to READY. A running daemon
sends a heartbeat every ``heartbeat_interval``; heartbeats and app commands are datagrams, lost with
probability ``heartbeat_loss`` (and all heartbeats during an outage). The monitor buffers heartbeats by
sender address ``(ip, port)``, as the original's monitor does, until the controller flushes them.

Heartbeats are not simpy events. A daemon's beats fall every ``heartbeat_interval`` from a random phase, and what
one says depends only on its VM and the job queue at its own time, so they wait in a heap of due times and are
sent, in time order, by :meth:`AppDaemons.sync` before anything reads them or changes what they read: a controller
round (the monitor), a catch-up of the job queue past the next due beat (:attr:`JobFlow.checkpoint`: the queue stops
there and the daemons send what is due), a change of a running VM, an app command or an outage (both touch the
channel's random stream), and the end of every advance.
A beat due at the very time of another event is sent after it. The result is the one simpy event per beat gave,
at a fraction of the cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from heapq import heappop, heappush, heapreplace

import numpy as np
import simpy

from engine.core.params import Mirror
from engine.core.rng import gamma_delay
from engine.vmworld.jobs import JobFlow
from engine.vmworld.model import AppState, Heartbeat, VMState, VMType
from engine.vmworld.params import PlatformParams
from engine.vmworld.vm import VM, later

Address = tuple[str, int]

#: Builds a named tuple from its fields in order, without the keyword-handling constructor (one per beat).
_new = tuple.__new__

_ACTIVE, _WORKER, _RUNNING = VMState.ACTIVE, VMType.WORKER, AppState.RUNNING  # read per heartbeat


class HeartbeatChannel:
    """The unreliable channel and the controller side's monitor buffer."""

    #: Uniform draws are taken from the stream this many at a time (the same numbers, in the same order, as one by one).
    DRAWS = 1024

    def __init__(self, env: simpy.Environment, platform: Mirror, rng: np.random.Generator):
        self.env = env
        self.p = platform
        self.rng = rng
        self._monitor: dict[Address, list[Heartbeat]] = {}
        self.outage_until = -1.0
        self.before_read: Callable[[float], None] = lambda _t: None  # the daemons send what is due (AppDaemons.sync)
        self._draws: list[float] = []
        self._next = 0

    def _uniform(self) -> float:
        """The stream's next uniform draw in [0, 1) (this stream serves only the channel's losses)."""
        i = self._next
        if i >= len(self._draws):
            self._draws = self.rng.random(self.DRAWS).tolist()
            i = 0
        self._next = i + 1
        return self._draws[i]

    def command_lost(self) -> bool:
        """Is the next app command datagram (sent now) lost?"""
        self.before_read(self.env.now)
        return self._uniform() < self.p.heartbeat_loss

    def outage(self, until: float) -> None:
        """Every heartbeat is lost from now until ``until`` (outages that overlap merge)."""
        self.before_read(self.env.now)
        self.outage_until = max(self.outage_until, until)

    def drop(self, vm: VM) -> None:
        """Forget what a deleted VM sent but the controller has not read."""
        self.before_read(self.env.now)
        self._monitor.pop(vm.sender, None)

    @property
    def monitor(self) -> dict[Address, list[Heartbeat]]:
        """What the monitor holds now, by sender (a read: the controller takes it with :meth:`flush`)."""
        self.before_read(self.env.now)
        return self._monitor

    def flush(self) -> dict[Address, list[Heartbeat]]:
        """Everything received before now, by sender; the monitor starts empty."""
        self.before_read(self.env.now)
        out, self._monitor = self._monitor, {}
        return out


class AppDaemons:
    """The app daemons of every VM: state machine, worker threads on the job queue, heartbeats."""

    def __init__(
        self, env: simpy.Environment, platform: PlatformParams | Mirror, jobs: JobFlow, rng: np.random.Generator, channel: HeartbeatChannel
    ):
        self.env = env
        self.p = platform if isinstance(platform, Mirror) else Mirror(platform)  # read on every heartbeat
        self.jobs = jobs
        self.rng = rng
        self.channel = channel
        self.running_master: int | None = None
        self._due: list[tuple[float, int, VM, int]] = []  # heartbeats not yet sent: (time, order, VM, its life)
        self._order = 0  # beats due at the same time go in the order they were scheduled, as simpy's events would
        channel.before_read = self.sync
        jobs.on_checkpoint = self._send_due

    def _delay(self, mean: float) -> float:
        return gamma_delay(self.rng, mean, self.p.delay_cv)

    # -- the VM's life, as the cloud drives it -----------------------------------------------------------
    def boot(self, vm: VM, app: AppState | None = None) -> None:
        """The VM became ACTIVE: its daemon comes up READY after a start-up delay, or at once in ``app`` (a resume)."""
        self.sync(self.env.now)
        if app is None:
            later(self.env, self._delay(self.p.app_start_time), vm, self._daemon_up, AppState.READY)
        else:
            self._daemon_up(vm, app)

    def stop(self, vm: VM, now: float) -> None:
        """Whatever ran on the VM stops now: timers, heartbeats, threads; a master stops dispatching."""
        self.sync(now)
        vm.epoch += 1
        vm.app = None
        if vm.type is VMType.WORKER:
            self.jobs.remove(vm.id, now)
        elif self.running_master == vm.id:
            self.running_master = None
            self.jobs.pause(now)

    def resumed_state(self, vm: VM) -> AppState:
        """The app state a resumed VM comes back in: a worker whose master is gone reports ERROR."""
        app = vm.app or AppState.READY
        if app in (AppState.RUNNING, AppState.INIT, AppState.SHUTTING_DOWN):
            if vm.type is VMType.MASTER:
                app = AppState.READY
            elif vm.master_link != self.running_master or vm.master_link is None:
                app = AppState.ERROR
            elif app is not AppState.RUNNING:
                app = AppState.READY
        return app

    def _daemon_up(self, vm: VM, app: AppState) -> None:
        self.sync(self.env.now)
        vm.app = app
        if app is AppState.RUNNING:
            self._app_running(vm)
        # first heartbeat at a random phase so that VMs do not beat in lockstep
        self._next_heartbeat(vm, max(0.0, self.rng.uniform(0.0, self.p.heartbeat_interval)))

    # -- app commands ------------------------------------------------------------------------------------
    def send_init(self, vm: VM) -> None:
        self._send(vm, self._app_init)

    def send_shutdown(self, vm: VM) -> None:
        self._send(vm, self._app_shutdown)

    def _send(self, vm: VM, handler: Callable[[VM], None]) -> None:
        if vm.state is not VMState.ACTIVE or not vm.alive or vm.app is None:
            return  # nobody listens
        if self.channel.command_lost():
            return
        later(self.env, self.p.app_command_latency, vm, handler)

    def _app_init(self, vm: VM) -> None:
        self.sync(self.env.now)
        if vm.app in (AppState.READY, AppState.ERROR):
            vm.app = AppState.INIT
            later(self.env, self._delay(self.p.app_init_time), vm, self._app_initialised)

    def _app_initialised(self, vm: VM) -> None:
        self.sync(self.env.now)
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
            vm.slot = self.jobs.new_worker(
                vm.id,
                speed=placed.speed_factor if placed is not None else 1.0,
                storage_seconds=placed.storage_seconds_per_job if placed is not None else 0.0,
            )
        self.jobs.add_threads(vm.slot, self.p.worker_threads, now)

    def _app_shutdown(self, vm: VM) -> None:
        self.sync(self.env.now)
        if vm.type is VMType.MASTER:
            return
        if vm.app is AppState.INIT:
            vm.app = AppState.READY
        elif vm.app is AppState.RUNNING:
            vm.app = AppState.SHUTTING_DOWN
            now = self.env.now
            done = self.jobs.drain(vm.id, now)
            later(self.env, done - now, vm, self._drained)

    def _drained(self, vm: VM) -> None:
        self.sync(self.env.now)
        if vm.app is AppState.SHUTTING_DOWN:
            self.jobs.remove(vm.id, self.env.now)
            vm.app = AppState.READY

    # -- heartbeats --------------------------------------------------------------------------------------
    def _next_heartbeat(self, vm: VM, delay: float) -> None:
        """The VM's first heartbeat, ``delay`` from now; each beat schedules the next unless the VM's life ends."""
        self._order += 1
        due = self.env.now + delay
        heappush(self._due, (due, self._order, vm, vm.epoch))
        if due < self.jobs.checkpoint:
            self.jobs.checkpoint = due

    def sync(self, t: float) -> None:
        """Send, in time order, every heartbeat due before ``t`` (each as it would have been at its own time): the job
        queue stops at each due time (:meth:`JobFlow.through_checkpoints`) and calls :meth:`_send_due` there."""
        self.jobs.through_checkpoints(t)

    def _send_due(self, now: float) -> float:
        """Send the heartbeats due at ``now`` (the job queue is caught up to it); returns when the next one is due.

        The hot path of the heartbeats: the channel's loss draw and delivery inlined, one beat per VM per interval."""
        due = self._due
        channel = self.channel
        p = self.p
        order = self._order
        free_by = self.jobs.earliest_free()
        while due:
            entry = due[0]
            sent = entry[0]
            if sent > now:
                break
            vm = entry[2]
            app = vm.app
            if vm.epoch != entry[3] or vm.state is not _ACTIVE or not vm.alive or app is None:
                heappop(due)  # its life ended: no more beats
                continue
            if sent < channel.outage_until:
                lost = True
            else:
                i = channel._next
                draws = channel._draws
                if i >= len(draws):
                    draws = channel._draws = channel.rng.random(channel.DRAWS).tolist()
                    i = 0
                channel._next = i + 1
                lost = draws[i] < p.heartbeat_loss
            if not lost:
                if vm.type is _WORKER:
                    threads = p.worker_threads
                    slot = vm.slot
                    busy, avg = 0, 0.0
                    if slot is not None:
                        mine = slot.threads
                        if free_by > sent and mine and mine[0].accepting:
                            busy = len(mine)  # no thread taking jobs is free yet
                        else:
                            for th in mine:
                                if th.free_at > sent:
                                    busy += 1
                        if slot.jobs:
                            avg = slot.busy_time / slot.jobs
                    cpu = busy / threads
                    # fields in order: recv_time, app_state, queue_length, avg_time, threads, cpu, mem, disk
                    beat = _new(Heartbeat, (sent, app, 0, avg, threads, cpu, 0.2 + 0.3 * cpu, 0.1))
                else:
                    queue = self.jobs.queue_length(sent) if app is _RUNNING else 0
                    beat = _new(Heartbeat, (sent, app, queue, 0.0, 0, 0.2, 0.3, 0.1))
                monitor = channel._monitor
                bucket = monitor.get(vm.sender)
                if bucket is None:
                    monitor[vm.sender] = [beat]
                else:
                    bucket.append(beat)
            order += 1
            heapreplace(due, (sent + max(0.0, p.heartbeat_interval), order, vm, entry[3]))
        self._order = order
        return due[0][0] if due else math.inf
