"""A seeded fault campaign: random faults and live changes on every shipped scenario, advanced in random chunks.

At every sample it checks what must hold whatever happens: jobs are conserved (rebuilt from the per-job log,
independently of the engine's counters); both VM-second figures (the cloud's, reported, and the original's log) equal a
ledger rebuilt from the event log; with
the cap extensions on (and a loss-free channel) no more than MAX_WORKERS serve one decision interval after a
change; with the stuck-recovery extension on the controller never stays in the original's dead end; and the
session is identical however it is chunked, and when replayed from its recording.

``pytest --hypothesis-profile=long`` runs a deeper campaign (the profiles are in tests/conftest.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Scenario, Simulation, list_scenarios, load_scenario

HORIZON = 1200.0
EXTENDED = {"seed_exact": False, "drain_above_cap": True, "cap_resumes": True, "resume_when_stuck": True, "resume_timeout": True}


def scenario_for(name: str, extended: bool, loss: float) -> Scenario:
    data = load_scenario(name).to_dict()
    data.setdefault("run", {}).update(duration=HORIZON, record_jobs=True)
    data.setdefault("platform", {})["heartbeat_loss"] = loss
    if extended:
        data["controller"] = dict(EXTENDED)
    return Scenario.from_dict(data, origin=f"campaign {name}")


@st.composite
def sessions(draw):
    name = draw(st.sampled_from(sorted(n for n in list_scenarios() if load_scenario(n).world == "vm")))  # the VM world's faults
    extended = draw(st.booleans())
    loss = draw(st.sampled_from([0.0, 0.0, 0.05]))
    clustered = "cluster" in load_scenario(name).values
    faults = ["master_crash", "worker_crash", "heartbeat_outage"] + (["node_failure"] if clustered else [])
    actions = []
    for _ in range(draw(st.integers(0, 6))):
        t = draw(st.floats(0.0, HORIZON - 1.0)).__round__(1)
        if draw(st.booleans()):
            fault = draw(st.sampled_from(faults))
            args = {"duration": draw(st.sampled_from([5.0, 25.0, 60.0]))} if fault == "heartbeat_outage" else {}
            actions.append((t, "fault", (fault, args)))
        else:
            change = draw(
                st.sampled_from(
                    [
                        {"autoscaler.MAX_WORKERS": draw(st.integers(1, 25))},
                        {"autoscaler.MIN_AVG_TIME": 5.0, "autoscaler.MAX_AVG_TIME": draw(st.sampled_from([15.0, 40.0, 90.0]))},
                        {"policy.kind": draw(st.sampled_from(["queue_drain", "hpa", "kpa", "keda"]))},
                        {"workload.rate": draw(st.sampled_from([0.5, 3.0, 8.0]))},
                    ]
                )
            )
            actions.append((t, "params", change))
    actions.sort(key=lambda a: a[0])
    chunks = draw(st.lists(st.floats(7.0, 400.0), min_size=1, max_size=8))
    seed = draw(st.integers(0, 2**31))
    return name, extended, loss, seed, actions, chunks


def play(sc: Scenario, seed: int, actions, chunks) -> Simulation:
    """Advance in the given chunks (cycled), applying each action at its time exactly."""
    sim = Simulation(sc, seed=seed)
    pending = list(actions)
    k = 0
    while sim.now < HORIZON:
        target = min(HORIZON, sim.now + chunks[k % len(chunks)])
        k += 1
        while pending and pending[0][0] <= target:
            t, kind, payload = pending.pop(0)
            sim.advance(t)
            apply(sim, kind, payload)
        sim.advance(target)
    return sim


def apply(sim: Simulation, kind: str, payload) -> None:
    if kind == "params":
        try:
            sim.set_params(payload)
        except ValueError:  # a combination the sections refuse (e.g. MIN above MAX): refused atomically, nothing changes
            pass
    else:
        fault, args = payload
        sim.inject(fault, **args)


# -- ledgers rebuilt from the tables ----------------------------------------------------------------------------


def check_jobs_conserved(sim: Simulation) -> None:
    samples, jobs = sim.samples(), sim.frame("jobs")
    t = samples.time.to_numpy()
    ok = ~jobs.aborted.to_numpy()
    start, end = jobs.start.to_numpy(), jobs.end.to_numpy()
    stop = np.where(ok, end, jobs.left.to_numpy())  # an aborted row served until its worker left
    completed = np.searchsorted(np.sort(end[ok]), t, side="right")
    serving = np.searchsorted(np.sort(start), t, side="right") - np.searchsorted(np.sort(stop), t, side="right")
    assert (samples.completed_total.to_numpy() == completed).all(), "completions differ from the job log"
    assert (samples.in_service.to_numpy() == serving).all(), "jobs in service differ from the job log"
    assert (samples.arrived_total == samples.completed_total + samples.in_service + samples.queue_length).all()
    assert jobs.groupby("job").aborted.sum().max() <= len(jobs) and ok.sum() == jobs.job[ok].nunique(), "a job completed twice"


def cloud_ledger(events: pd.DataFrame, times: np.ndarray) -> np.ndarray:
    """What the cloud bills, rebuilt from the event log: CREATE on, SUSPENDED/FAILED off, resuming on, DELETE off."""
    since: dict[int, float] = {}
    closed = 0.0
    out = np.zeros(len(times))
    rows = events[events.kind.isin(["command", "vm"])]
    it = iter(rows.itertuples(index=False))
    row = next(it, None)
    for i, t in enumerate(times):
        while row is not None and row.time <= t:
            vm = int(row.vm)
            if row.kind == "command" and row.command == "CREATE":
                since.setdefault(vm, row.time)
            elif (
                row.kind == "command"
                and row.command == "DELETE"
                and row.reason != "refused_by_cloud"
                or row.kind == "vm"
                and row.command in ("SUSPENDED", "FAILED")
            ):
                if vm in since:
                    closed += row.time - since.pop(vm)
            elif row.kind == "vm" and row.command in ("PENDING", "ACTIVE"):
                since.setdefault(vm, row.time)
            row = next(it, None)
        out[i] = closed + sum(t - s for s in since.values())
    return out


def controller_ledger(events: pd.DataFrame, times: np.ndarray, whole_seconds: bool) -> np.ndarray:
    """The controller's own accounts, rebuilt from the commands it sent (refused ones too, as the original logs them)."""
    stamp = (lambda t: float(int(t))) if whole_seconds else (lambda t: t)
    since: dict[int, float] = {}
    closed = 0.0
    out = np.zeros(len(times))
    rows = events[events.kind == "command"]
    it = iter(rows.itertuples(index=False))
    row = next(it, None)
    for i, t in enumerate(times):
        while row is not None and row.time <= t:
            vm = int(row.vm)
            if row.command in ("CREATE", "RESUME"):
                since.setdefault(vm, stamp(row.time))
            elif row.command in ("SUSPEND", "DELETE") and vm in since:
                closed += stamp(row.time) - since.pop(vm)
            row = next(it, None)
        out[i] = closed + sum(stamp(t) - s for s in since.values())
    return out


def check_vm_seconds(sim: Simulation) -> None:
    samples, events = sim.samples(), sim.events()
    times = samples.time.to_numpy()
    np.testing.assert_allclose(samples.vm_seconds, cloud_ledger(events, times), rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        samples.vm_seconds_logged, controller_ledger(events, times, sim.sections["controller"].seed_exact), rtol=0, atol=1e-6
    )


def check_cap(sim: Simulation) -> None:
    """With the cap extensions on and no lost datagram: at most MAX_WORKERS serve, a decision interval after any change."""
    samples, events = sim.samples(), sim.events()
    changes = events[(events.kind == "param") & (events.command == "autoscaler.MAX_WORKERS")]
    caps = [(0.0, float(load_cap(sim)))] + [(float(t), float(v)) for t, v in zip(changes.time, changes.value, strict=True)]
    interval = sim.sections["autoscaler"].DECISION_INTERVAL
    for (t0, cap), (t1, _) in zip(caps, [*caps[1:], (math.inf, 0.0)], strict=True):
        window = samples[(samples.time >= t0 + interval + 1.0) & (samples.time < t1)]
        assert (window.workers_active <= cap).all(), f"more than {cap:g} workers serve in [{t0 + interval + 1:g}, {t1:g})"


def load_cap(sim: Simulation) -> int:
    return int(sim.scenario.values.get("autoscaler", {}).get("MAX_WORKERS", 20))


def check_never_stuck(sim: Simulation) -> None:
    stuck = sim.decisions().stuck.to_numpy()
    assert not (stuck[1:] & stuck[:-1]).any(), "the controller stayed stuck for two rounds with resume_when_stuck on"


def check_no_silent_resumed_worker_blocks_scaling(sim: Simulation) -> None:
    """With resume_timeout on, no resumed worker stays silent (and "starting") beyond MAX_TRANSITION_TIME + a round."""
    events = sim.events()
    commands = events[events.kind == "command"]
    limit = sim.sections["autoscaler"].MAX_TRANSITION_TIME + sim.sections["autoscaler"].DECISION_INTERVAL
    deleted = commands[commands.rule == "r1_startup_timeout"]
    for vm, at in zip(deleted.vm, deleted.time, strict=True):
        before = commands[(commands.vm == vm) & (commands.time < at)]
        assert not (len(before) and before.command.iloc[-1] == "RESUME" and at - before.time.iloc[-1] > limit), (
            f"VM {vm} waited {at - before.time.iloc[-1]:g} s"
        )


def check_same_frames(a: Simulation, b: Simulation) -> None:
    for table in a.tables:
        pd.testing.assert_frame_equal(a.frame(table), b.frame(table), obj=table)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(session=sessions())
def test_fault_campaign_invariants_hold_at_every_sample(session):
    name, extended, loss, seed, actions, chunks = session
    sc = scenario_for(name, extended, loss)
    sim = play(sc, seed, actions, chunks)
    check_jobs_conserved(sim)
    check_vm_seconds(sim)
    if extended:
        check_never_stuck(sim)
        check_no_silent_resumed_worker_blocks_scaling(sim)
        if loss == 0.0:
            check_cap(sim)
    whole = play(sc, seed, actions, [HORIZON])  # one chunk between actions
    check_same_frames(sim, whole)
    replayed = Simulation.replay(sim.recording())
    check_same_frames(sim, replayed)


@pytest.mark.parametrize("extended", [False, True])
def test_the_original_dead_end_is_shown_and_the_extension_leaves_it(extended):
    """Every active worker crashes while another is suspended: the original never resumes it (a visible alert)."""
    data = {"run": {"duration": 1800}, "workload": {"rate": 0.5}}
    if extended:
        data["controller"] = {"seed_exact": False, "resume_when_stuck": True}
    sim = Simulation(Scenario.from_dict(data), seed=3).advance(900)
    assert sim.samples().workers_suspended.iloc[-1] >= 1
    for vm in list(sim.platform.cloud.vms.values()):
        if vm.type.value == "WORKER" and vm.state.value == "ACTIVE":
            sim.inject("worker_crash", vm=vm.id)
    sim.set_params({"workload.rate": 6.0})
    sim.advance(1800)
    alerts = sim.events().query("kind == 'alert'")
    assert alerts.command.iloc[0] == "controller_stuck" and alerts.time.iloc[0] <= 930
    last = sim.samples().iloc[-1]
    if extended:
        assert alerts.command.tolist()[1] == "controller_unstuck" and last.workers_active >= 3
        assert (sim.events().rule == "stuck_resume").sum() >= 1
    else:
        assert len(alerts) == 1 and last.workers_active == 0 and last.queue_length > 3000
        assert sim.decisions().stuck.iloc[-1]
