"""The lazy job flow against a plain simpy model with one event per arrival and completion."""

import numpy as np
import simpy

from engine.vmworld.jobs import JobFlow, WorkerSlot
from engine.workload.arrivals import ArrivalStream
from engine.workload.params import WorkloadParams
from engine.workload.service import ServiceTimes


def _flow(rate: float, service: float, cv: float, seed: int, record: bool = True) -> JobFlow:
    wp = WorkloadParams(pattern="poisson", rate=rate, service_time=service, service_cv=cv)
    return JobFlow(ArrivalStream(wp, np.random.default_rng(seed)), ServiceTimes(wp, np.random.default_rng(seed + 1)), record_jobs=record)


def _simpy_reference(arrivals: list[float], services: list[float], servers: int) -> list[float]:
    """Start time of every job in a FIFO queue with ``servers`` servers, one simpy event at a time."""
    env = simpy.Environment()
    res = simpy.Resource(env, capacity=servers)
    starts = [0.0] * len(arrivals)

    def job(i):
        with res.request() as req:
            yield req
            starts[i] = env.now
            yield env.timeout(services[i])

    def source():
        for i, a in enumerate(arrivals):
            yield env.timeout(a - env.now)
            env.process(job(i))

    env.process(source())
    env.run()
    return starts


def test_lazy_flow_matches_event_by_event_simpy_model():
    flow = _flow(rate=3.0, service=2.5, cv=0.8, seed=11)
    flow.add_threads(WorkerSlot(0), 4, 0.0)
    flow.add_threads(WorkerSlot(1), 3, 0.0)
    # observe at irregular times, as heartbeats and samples do
    for t in np.cumsum(np.random.default_rng(5).uniform(0.1, 7.0, 400)):
        flow.catch_up(float(t))
    rows = [r for r in flow.rows if r[2] <= flow.now]
    arrivals = [r[1] for r in rows]
    services = [r[3] - r[2] for r in rows]
    assert len(rows) > 1000
    # jobs are committed in arrival order
    assert [r[0] for r in rows] == list(range(len(rows)))
    reference = _simpy_reference(arrivals, services, servers=7)
    np.testing.assert_allclose([r[2] for r in rows], reference, rtol=0, atol=1e-9)


def test_crashed_worker_requeues_its_jobs_and_none_is_lost():
    flow = _flow(rate=2.0, service=4.0, cv=0.3, seed=3)
    flow.add_threads(WorkerSlot(0), 2, 0.0)
    flow.add_threads(WorkerSlot(1), 2, 0.0)
    flow.catch_up(100.0)
    lost = flow.remove(1, 100.0)
    assert lost == 2  # both of its threads were busy under this load
    flow.add_threads(WorkerSlot(2), 6, 150.0)
    flow.catch_up(400.0)
    done = [r for r in flow.rows if not r[5] and r[3] <= 400.0]
    ids = [r[0] for r in done]
    assert len(ids) == len(set(ids))
    assert sum(1 for r in flow.rows if r[5]) == 2
    # accounting: arrived = completed + queued + in service
    t = 400.0
    assert flow.arrived_total(t) == len(done) + flow.queue_length(t) + flow.in_service(t)


def test_draining_worker_finishes_its_jobs_then_leaves():
    flow = _flow(rate=5.0, service=3.0, cv=0.0, seed=1)
    flow.add_threads(WorkerSlot(0), 2, 0.0)
    flow.catch_up(50.0)
    done_at = flow.drain(0, 50.0)
    assert 50.0 < done_at <= 53.0  # fixed 3 s jobs: the current ones end within 3 s
    flow.catch_up(100.0)
    assert all(r[2] <= 50.0 for r in flow.rows)  # nothing new started on a draining worker
    assert flow.remove(0, done_at) == 0


def test_pause_stops_dispatch_and_resume_never_starts_jobs_in_the_past():
    flow = _flow(rate=2.0, service=1.0, cv=0.5, seed=2)
    flow.add_threads(WorkerSlot(0), 4, 0.0)
    flow.catch_up(30.0)
    flow.pause(30.0)
    flow.catch_up(90.0)
    assert not [r for r in flow.rows if 30.0 < r[2] < 90.0]
    queued = flow.queue_length(90.0)
    assert queued > 50
    flow.resume(90.0)
    flow.catch_up(200.0)
    assert min(r[2] for r in flow.rows if r[2] > 30.0) >= 90.0


def test_tiny_coefficients_of_variation_are_taken_as_fixed():
    # 1/cv**2 overflows for cv ~ 1e-200: found by the property tests
    from engine.core.rng import gamma_delay

    wp = WorkloadParams(service_time=2.0, service_cv=1e-214)
    service = ServiceTimes(wp, np.random.default_rng(0))
    assert [service.next() for _ in range(3)] == [2.0, 2.0, 2.0]
    assert gamma_delay(np.random.default_rng(0), 5.0, 1e-300) == 5.0


def test_whole_run_wait_percentiles_are_within_a_tenth_of_a_percent():
    from engine.core.histogram import LogHistogram as WaitHistogram

    waits = np.random.default_rng(3).exponential(20.0, 50_000)
    h = WaitHistogram()
    h.add(waits[:20_000])
    h.add(waits[20_000:])
    for q in (50, 95, 99):
        exact = np.percentile(waits, q, method="inverted_cdf")
        assert abs(h.percentile(q) / exact - 1) < 0.0011
