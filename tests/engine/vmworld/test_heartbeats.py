"""Heartbeats are sent lazily (not one simpy event each): each still reports its VM and the job queue at its own time.

The world's channel is observed as it runs (every batch the controller flushes is kept); each worker heartbeat's
busy threads and each master heartbeat's queue length are checked against the jobs table, and reading the monitor
at many other times (which sends what is due earlier) must not change a single heartbeat.
"""

from __future__ import annotations

import numpy as np

from engine.sim.scenario import Scenario, load_scenario
from engine.sim.simulation import Simulation
from engine.vmworld.model import AppState, VMType

HORIZON = 900.0


def _sim(loss: float = 0.0) -> Simulation:
    values = load_scenario("default").to_dict()
    values["run"] = {**values.get("run", {}), "duration": HORIZON, "record_jobs": True, "seed": 3}
    values["platform"] = {**values.get("platform", {}), "heartbeat_loss": loss}
    return Simulation(Scenario.from_dict(values))


def _collect(sim: Simulation, peek_every: float | None = None) -> list[tuple]:
    """Every heartbeat the controller received, as (sender, beat), advancing to HORIZON (peeking at the monitor)."""
    channel = sim.platform.channel
    flush = channel.flush
    received: list[tuple] = []

    def keep():
        batch = flush()
        received.extend((sender, beat) for sender, beats in batch.items() for beat in beats)
        return batch

    channel.flush = keep
    if peek_every is None:
        sim.advance(HORIZON)
    else:
        t = 0.0
        while t < HORIZON:
            t = min(HORIZON, t + peek_every)
            sim.advance(t)
            assert all(beat.recv_time < t for beats in channel.monitor.values() for beat in beats)
    return received


def test_each_heartbeat_reports_the_job_queue_at_its_own_time():
    sim = _sim()
    received = _collect(sim)
    jobs = sim.jobs_frame()
    assert jobs is not None and not jobs["aborted"].any()  # no faults: busy threads are the jobs in service
    by_address = {vm.address: vm for vm in [*sim.platform.cloud.vms.values(), *sim.platform.cloud.gone.values()]}
    flow = sim.platform.jobs
    start = np.sort(jobs["start"].to_numpy())
    workers = masters = 0
    for (address, _port), beat in received:
        vm = by_address[address]
        t = beat.recv_time
        if vm.type is VMType.MASTER:
            if beat.app_state is AppState.RUNNING:
                queued = flow.known_arrivals(t) - np.searchsorted(start, t, side="right")
                assert beat.queue_length == queued
                masters += 1
            continue
        mine = jobs[jobs["worker"] == vm.id]
        busy = int(((mine["start"] <= t) & (mine["end"] > t)).sum())
        assert round(beat.cpu * beat.threads) == busy, (vm.id, t)
        workers += 1
    assert masters > 100 and workers > 1000


def test_reading_the_monitor_between_advances_changes_no_heartbeat():
    once = _collect(_sim(loss=0.2))
    peeked = _collect(_sim(loss=0.2), peek_every=3.3)
    assert len(once) > 1000 and once == peeked
