"""End-to-end behaviour of the simulation: the drain band, master-crash recovery, live changes, replay."""

import json

import numpy as np
import pandas as pd
import pytest

from engine.core.params import ParamError
from engine.sim.scenario import Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation


def _sim(seed=1, **sections) -> Simulation:
    base = {"run": {"duration": 1800, "sample_interval": 5, "record_jobs": True}}
    for k, v in sections.items():
        base.setdefault(k, {}).update(v)
    return Simulation(Scenario.from_dict(base), seed=seed)


def _assert_no_job_lost(sim: Simulation) -> None:
    s = sim.samples()
    assert (s.arrived_total == s.completed_total + s.queue_length + s.in_service).all()
    jobs = sim.jobs_frame()
    done = jobs[~jobs.aborted & (jobs.end <= s.time.iloc[-1])]
    assert done.job.is_unique
    assert len(done) == s.completed_total.iloc[-1]
    # every aborted job was started again (or still waits)
    aborted = set(jobs.job[jobs.aborted])
    restarted = set(jobs.job[~jobs.aborted])
    assert len(aborted - restarted) <= s.queue_length.iloc[-1]


def test_default_scenario_settles_inside_the_band():
    sim = Simulation("default").run()
    s = sim.samples()
    late = s[s.time > 900].dropna(subset=["time_left"])
    assert len(late) > 50
    inside = ((late.time_left >= 10) & (late.time_left <= 30)).mean()
    assert inside >= 0.8, f"time_left inside [10, 30] in only {inside:.0%} of late samples"
    assert 10 <= late.time_left.median() <= 30
    summary = sim.summary()
    assert summary["scale_outs"] >= 1 and summary["scale_ins"] >= 1
    # scale-in suspends workers and later scale-outs resume them before creating new ones
    rules = sim.events().query("kind == 'command'").rule.value_counts()
    assert rules.get("scale_in_shutdown", 0) > 0 and rules.get("r9_suspend_drained", 0) > 0
    assert rules.get("scale_out_resume", 0) > 0


def test_master_crash_recovers_and_loses_no_job():
    sim = _sim(seed=3, faults={"master_crash_at": [900.0]}, workload={"rate": 3.0})
    sim.run()
    ev = sim.events()
    cmds = ev[ev.kind == "command"]
    crash = ev[(ev.kind == "fault") & (ev.command == "master_crash")]
    assert len(crash) == 1 and crash.time.iloc[0] == 900.0
    after = cmds[cmds.time > 900]
    suspends = after[after.rule == "master_crash_suspend"]
    assert len(suspends) >= 2, "the workers are suspended when the master is lost"
    t_detect = suspends.time.min()
    assert t_detect <= 900 + 2 * sim.sections["autoscaler"].DECISION_INTERVAL + 1
    new_master = after[(after.command == "CREATE") & (after.vm_type == "MASTER")]
    assert len(new_master) == 1 and new_master.rule.iloc[0] == "master_create"
    resumes = after[after.rule == "master_recovered_resume"]
    # recovery resumes every VM whose last command is SUSPEND: those of the crash and earlier scale-ins
    assert set(suspends.vm) <= set(resumes.vm), "every worker suspended for the crash is resumed"
    s = sim.samples()
    assert (s[(s.time > t_detect) & (s.time < t_detect + 30)].workers_active == 0).any()
    assert s[s.time > 1500].workers_active.min() > 0, "workers run again after recovery"
    assert s.master_state.iloc[-1] == "ACTIVE/RUNNING"
    _assert_no_job_lost(sim)


def test_heartbeat_outage_makes_vms_stale_and_they_are_replaced():
    sim = _sim(seed=5, faults={"heartbeat_outages": [[600.0, 40.0]]})
    sim.run()
    # every heartbeat is lost from t=600: at the next round but one the master's newest is older than DECISION_INTERVAL
    decisions = sim.decisions().set_index("time")
    assert decisions.action[600.0] != "master_recovery" and decisions.action[610.0] == "master_recovery"
    at = sim.events().query("kind == 'command' and time == 610")
    assert at.rule.tolist()[0] == "master_create" and at.rule.tolist()[-1] == "master_crash_delete"
    assert (at.rule.iloc[1:-1] == "master_crash_suspend").all() and len(at) > 2
    assert sim.samples().master_state.iloc[-1] == "ACTIVE/RUNNING"
    _assert_no_job_lost(sim)


def test_lowering_max_workers_live_in_seed_exact_mode_only_stops_growth():
    sim = _sim(seed=2, workload={"rate": 6.0})
    assert sim.sections["controller"].seed_exact
    sim.advance(600)
    before = sim.samples().workers_active.iloc[-1]
    assert before > 4
    sim.set_params({"autoscaler.MAX_WORKERS": 3})
    sim.advance(1800)
    s, ev = sim.samples(), sim.events()
    # the original only refuses CREATEs at the cap: the workers it has keep serving, none is drained for the cap
    assert (s[s.time >= 660].workers_active > 3).mean() > 0.5
    assert not (ev.rule == "cap_shutdown").any()
    assert not ((ev.kind == "command") & (ev.command == "CREATE") & (ev.vm_type == "WORKER") & (ev.time > 600)).any()
    _assert_no_job_lost(sim)


def test_lowering_max_workers_live_with_the_drain_extension_caps_active_workers():
    sim = _sim(seed=2, workload={"rate": 6.0}, controller={"seed_exact": False, "drain_above_cap": True, "cap_resumes": True})
    sim.advance(600)
    assert sim.samples().workers_active.max() > 4
    sim.set_params({"autoscaler.MAX_WORKERS": 3})
    sim.advance(1800)
    s = sim.samples()
    # the surplus drains (its current jobs finish) and is suspended; nothing is created or resumed past the cap
    assert (s[s.time >= 660].workers_active <= 3).all()
    assert (s[s.time >= 660].workers_active == 3).mean() > 0.9, "the cap is used under this load"
    ev = sim.events()
    assert (ev[ev.kind == "command"].rule == "cap_shutdown").sum() >= 1
    param = ev[ev.kind == "param"]
    assert param.command.tolist() == ["autoscaler.MAX_WORKERS"] and param.time.tolist() == [600.0]
    _assert_no_job_lost(sim)


def test_invalid_combination_is_refused_and_nothing_changes():
    sim = _sim()
    sim.advance(100)
    with pytest.raises(ParamError, match="MIN_AVG_TIME") as err:
        sim.set_params({"autoscaler.MAX_WORKERS": 7, "autoscaler.MIN_AVG_TIME": 50})
    assert "allowed" in str(err.value)
    assert sim.sections["autoscaler"].MAX_WORKERS == 20 and sim.sections["autoscaler"].MIN_AVG_TIME == 10
    with pytest.raises(ParamError, match=r"allowed: an integer in \[1, 1000\]"):
        sim.set_params({"autoscaler.MAX_WORKERS": 0})
    with pytest.raises(ParamError, match="fixed for a run"):
        sim.set_params({"run.seed": 4})
    assert sim.inputs == []
    sim.advance(200)  # still running


def test_chunked_advance_gives_identical_frames():
    whole = _sim(seed=9).advance(1200)
    chunked = _sim(seed=9)
    t = 0.0
    for step in np.random.default_rng(0).uniform(0.01, 37.0, 10000):
        t = min(1200.0, t + step)
        chunked.advance(t)
        if t >= 1200:
            break
    pd.testing.assert_frame_equal(whole.samples(), chunked.samples())
    pd.testing.assert_frame_equal(whole.events(), chunked.events())


def test_recording_replays_exactly_and_detects_tampering(tmp_path):
    sim = _sim(seed=4)
    sim.advance(300)
    sim.set_params({"workload.rate": 6.0, "autoscaler.MAX_AVG_TIME": 40})
    sim.advance(612.5)
    sim.inject("worker_crash")
    sim.advance(700)
    sim.inject("heartbeat_outage", duration=15)
    sim.advance(1000)
    path = tmp_path / "session.json"
    path.write_text(json.dumps(sim.recording()))
    rec = json.loads(path.read_text())
    again = Simulation.replay(rec)
    pd.testing.assert_frame_equal(sim.samples(), again.samples())
    pd.testing.assert_frame_equal(sim.events(), again.events())
    rec["inputs"][0]["changes"]["workload.rate"] = 5.0
    with pytest.raises(ScenarioError, match="samples_sha256"):
        Simulation.replay(rec)
    rec["inputs"][0]["time"] = -1
    with pytest.raises(ScenarioError, match=r"inputs\[0\]\.time"):
        Simulation.replay(rec)


@pytest.mark.parametrize("name", ["default", "diurnal", "master-crash"])
def test_shipped_scenarios_load_and_run(name):
    sc = load_scenario(name)
    assert sc.description
    sim = Simulation(sc).advance(600)
    assert sim.summary()["jobs_completed"] > 0


@pytest.mark.parametrize("kind", ["hpa", "kpa", "keda"])
def test_alternative_policies_drive_the_same_world_and_can_be_swapped_live(kind):
    sim = _sim(seed=6, policy={"kind": kind})
    sim.advance(900)
    d = sim.decisions()
    assert (d.policy == kind).any()
    assert sim.samples().workers_active.max() >= 2, f"{kind} scaled out under load"
    sim.set_params({"policy.kind": "queue_drain"})
    sim.advance(1800)
    d = sim.decisions()
    assert (d[d.time > 900].policy.isin(["queue_drain", ""])).all()
    assert d[d.time > 900].time_left.notna().any()
    _assert_no_job_lost(sim)


def test_fault_times_added_live_are_scheduled():
    sim = _sim(seed=8)
    sim.advance(400)
    sim.set_params({"faults.master_crash_at": [200.0, 700.0]})  # 200 is past: not replayed
    sim.advance(1200)
    crashes = sim.events().query("kind == 'fault' and command == 'master_crash'")
    assert crashes.time.tolist() == [700.0]
    assert (sim.decisions().action == "master_recovery").any()
