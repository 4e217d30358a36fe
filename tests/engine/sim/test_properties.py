"""Properties over random scenarios and seeds (hypothesis)."""

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.sim.scenario import Scenario
from engine.sim.simulation import Simulation

scenarios = st.fixed_dictionaries(
    {
        "workload": st.fixed_dictionaries(
            {
                "pattern": st.sampled_from(["constant", "poisson", "diurnal", "steps", "bursts"]),
                "rate": st.floats(0.2, 8.0),
                "service_time": st.floats(0.5, 12.0),
                "service_cv": st.floats(0.0, 1.5),
                "diurnal_period": st.just(600.0),
                "burst_every": st.just(200.0),
                "burst_duration": st.just(40.0),
            }
        ),
        "autoscaler": st.fixed_dictionaries(
            {
                "MAX_WORKERS": st.integers(1, 12),
                "MIN_AVG_TIME": st.floats(1.0, 20.0),
                "MAX_AVG_TIME": st.floats(25.0, 90.0),
                "DECISION_INTERVAL": st.sampled_from([5.0, 10.0, 20.0]),
            }
        ),
        "platform": st.fixed_dictionaries(
            {
                "worker_threads": st.integers(1, 6),
                "heartbeat_loss": st.floats(0.0, 0.3),
                "boot_failure_prob": st.floats(0.0, 0.3),
            }
        ),
        "faults": st.fixed_dictionaries(
            {
                "master_crash_at": st.lists(st.floats(100.0, 800.0), max_size=1),
                "worker_crash_rate": st.floats(0.0, 6.0),
            }
        ),
    }
)


def _build(values: dict, seed: int) -> Simulation:
    values = {**values, "run": {"duration": 900.0, "sample_interval": 5.0, "record_jobs": True}}
    return Simulation(Scenario.from_dict(values), seed=seed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=scenarios, seed=st.integers(0, 2**32))
def test_no_job_lost_or_duplicated_and_workers_capped(values, seed):
    sim = _build(values, seed).run()
    s = sim.samples()
    # at every sample: arrived = completed + queued + in service
    assert (s.arrived_total == s.completed_total + s.queue_length + s.in_service).all()
    assert (s.queue_length >= 0).all() and (s.in_service >= 0).all()
    # the per-job log agrees: each job completed at most once, and as many as the samples say
    jobs = sim.jobs_frame()
    end = s.time.iloc[-1]
    done = jobs[~jobs.aborted & (jobs.end <= end)]
    assert done.job.is_unique
    assert len(done) == s.completed_total.iloc[-1]
    assert (done.start >= done.arrival).all()
    # the worker cap holds at every sample
    assert (s.workers_active <= values["autoscaler"]["MAX_WORKERS"]).all()
    assert (s.workers_total <= values["autoscaler"]["MAX_WORKERS"]).all()


@settings(max_examples=8, deadline=None)
@given(values=scenarios, seed=st.integers(0, 2**32))
def test_same_seed_same_frames_other_seed_other_frames(values, seed):
    a = _build(values, seed).advance(600)
    b = _build(values, seed).advance(600)
    pd.testing.assert_frame_equal(a.samples(), b.samples())
    pd.testing.assert_frame_equal(a.events(), b.events())
    c = _build(values, seed + 1).advance(600)
    # with fixed arrivals and service times only the platform's delays differ: compare events too
    assert not (a.samples().equals(c.samples()) and a.events().equals(c.events()))
