"""VM-seconds that add up: the reported figure against an independent ledger of every VM's state history.

The ledger does not read the cloud's accounts nor the event log: the test steps the simulation one simpy event
at a time and, between two events, adds the elapsed time for every VM the cloud lists in a billed state
(booting, resuming or ACTIVE: not SUSPENDED, FAILED or deleted). Random faults (master and worker crashes,
heartbeat outages, node failures, boot failures), slow suspends (so that crashes and master recoveries land
while a suspend is under way, and SUSPENDs are refused for booting workers) and every extension on or off.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Scenario, Simulation
from engine.vmworld.model import VMState

BILLED = (VMState.INIT, VMState.PENDING, VMState.ACTIVE)
EXTENDED = {"seed_exact": False, "drain_above_cap": True, "cap_resumes": True, "resume_when_stuck": True, "resume_timeout": True}


def scenario(extended: bool, clustered: bool, master_crashes: list[float], worker_crashes: list[float], suspend_time: float) -> Scenario:
    data = {
        "run": {"duration": 1500, "sample_interval": 5},
        "workload": {"pattern": "poisson", "rate": 3.0, "service_time": 5.0},
        "autoscaler": {"MIN_AVG_TIME": 10, "MAX_AVG_TIME": 30, "MAX_WORKERS": 8},
        "platform": {"suspend_time": suspend_time, "boot_failure_prob": 0.1, "heartbeat_loss": 0.05},
        "faults": {"master_crash_at": master_crashes, "worker_crash_at": worker_crashes, "worker_crash_rate": 1.0},
    }
    if extended:
        data["controller"] = dict(EXTENDED)
    if clustered:
        data["cluster"] = {"topology": "cloud_regions"}
    return Scenario.from_dict(data, origin="ledger test")


def step_with_ledger(sim: Simulation, until: float, node_failures: list[float]) -> tuple[float, list[tuple[float, float]]]:
    """Step ``sim`` to ``until`` one event at a time; return the ledger at ``until`` and (time, ledger) at every sample."""
    env, cloud = sim.env, sim.platform.cloud
    ledger = 0.0
    at_samples = []
    failures = sorted(node_failures)
    sampled = 0
    while env.peek() < until:
        billed = sum(1 for vm in cloud.vms.values() if vm.state in BILLED)
        before = env.now
        env.step()
        ledger += billed * (env.now - before)
        while failures and failures[0] <= env.now:
            failures.pop(0)
            if sim.platform.placement is not None:
                sim.inject("node_failure")
        if sim.sample_count > sampled:  # a sample was taken at env.now, after the states it saw
            sampled = sim.sample_count
            at_samples.append((env.now, ledger))
    billed = sum(1 for vm in cloud.vms.values() if vm.state in BILLED)
    ledger += billed * (until - env.now)
    sim.advance(until)  # no event is due before ``until``: only the clock moves
    return ledger, at_samples


@pytest.mark.parametrize("extended", [False, True], ids=["seed_exact", "every_extension"])
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clustered=st.booleans(),
    master_crashes=st.lists(st.floats(100.0, 1400.0).map(lambda t: round(t, 1)), max_size=3),
    worker_crashes=st.lists(st.floats(100.0, 1400.0).map(lambda t: round(t, 1)), max_size=4),
    node_failures=st.lists(st.floats(100.0, 1400.0).map(lambda t: round(t, 1)), max_size=2),
    suspend_time=st.sampled_from([3.0, 30.0, 120.0]),
    seed=st.integers(0, 2**20),
)
def test_reported_vm_seconds_equal_the_ledger_of_every_vm_state_history(
    extended, clustered, master_crashes, worker_crashes, node_failures, suspend_time, seed
):
    sim = Simulation(scenario(extended, clustered, master_crashes, worker_crashes, suspend_time), seed=seed)
    ledger, at_samples = step_with_ledger(sim, 1500.0, node_failures)
    samples = sim.samples().set_index("time")
    for t, expected in at_samples:
        assert samples.vm_seconds.loc[t] == pytest.approx(expected, abs=1e-6), f"at the sample at {t:g} s"
    assert sim.summary()["vm_hours"] * 3600.0 == pytest.approx(ledger, abs=1e-6)


def _crashes_during_a_suspend(events) -> int:
    """Faults that hit a VM between its accepted SUSPEND and its SUSPENDED state."""
    hits = 0
    sent = events[(events.kind == "command") & (events.command == "SUSPEND") & (events.reason != "refused_by_cloud")]
    for vm, at in zip(sent.vm, sent.time, strict=True):
        done = events[(events.kind == "vm") & (events.vm == vm) & (events.command == "SUSPENDED") & (events.time >= at)].time.min()
        hits += int(((events.kind == "fault") & (events.vm == vm) & (events.time > at) & (events.time < done)).sum())
    return hits


def test_a_refused_suspend_and_a_crash_during_a_suspend_are_accounted_from_the_cloud_states():
    """The master crashes at 300 s while workers boot (their SUSPEND is refused: they keep running and are counted),
    and two workers crash at 340 and 345 s while their 120 s suspend is under way (counted until SUSPENDED)."""
    sim = Simulation(scenario(False, False, [300.0], [340.0, 345.0], 120.0), seed=7)
    ledger, _ = step_with_ledger(sim, 1500.0, [])
    events = sim.events()
    assert ((events.command == "SUSPEND") & (events.reason == "refused_by_cloud")).sum() >= 1
    assert _crashes_during_a_suspend(events) >= 1
    summary = sim.summary()
    assert summary["vm_hours"] * 3600.0 == pytest.approx(ledger, abs=1e-6)
    # the original's own log closes accounts when SUSPEND is sent and reopens them on a RESUME the cloud refused
    assert summary["vm_hours_logged"] != pytest.approx(summary["vm_hours"], rel=0.01)
