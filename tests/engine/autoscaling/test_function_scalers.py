"""Per-function scalers (``engine/autoscaling/functions.py``) against hand-computed observations: one decision table each.

faas-sim's arithmetic (``sim/faas/scaling.py``) with ``faas_sim_exact`` on, and the fixes with it off; the package's
HPA, KPA, KEDA and queue-drain policies through :class:`PolicyScaler` on the shared sections.
"""

from __future__ import annotations

import pytest

from engine.autoscaling.functions import FunctionObservation, IdleScaler, Overlay
from engine.autoscaling.hpa import HPAParams
from engine.autoscaling.keda import KEDAParams
from engine.autoscaling.kpa import KPAParams
from engine.autoscaling.registry import FUNCTION_SCALERS, make_function_scaler
from engine.faas.params import FUNCTION_SLOTS


def fn(**values):
    return FUNCTION_SLOTS["fn1"](**values)


def obs(
    now=10.0, running=1, pending=0, busy=None, queued=None, cpu=None, threads=4, gateway=0, invocations=0, last=None, avg=None, lo=1, hi=20
):
    ready = tuple(range(running))
    return FunctionObservation(
        now=now,
        ready=ready,
        concurrency=(threads,) * running,
        busy=tuple(busy or (0,) * running),
        queued=tuple(queued or (0,) * running),
        cpu=tuple(cpu or (0.0,) * running),
        pending=pending,
        gateway_queue=gateway,
        invocations=invocations,
        arrivals=invocations,  # as many arrived as started: the replicas keep up
        last_request=last,
        avg_execution=avg,
        min_replicas=lo,
        max_replicas=hi,
    )


def shared():
    return {"hpa": HPAParams(), "kpa": KPAParams(), "keda": KEDAParams()}


def decide(spec, *observations):
    scaler = make_function_scaler(spec, shared())
    verdicts = [scaler.decide(o) for o in observations]
    return verdicts[-1]


@pytest.mark.parametrize(
    "replicas, invocations, scale_factor, exact, expected",
    [
        (3, 300, 1, True, None),  # faas-sim's default step: int(1% x 20) = 0, it never scales
        (3, 300, 1, False, 4),  # fixed: at least one (and counting arrivals)
        (3, 300, 10, True, 5),  # 30 rps >= 20: up by int(10% x 20) = 2
        (3, 100, 10, True, 1),  # 10 rps < 20: down by 2
        (1, 100, 10, True, None),  # never below one
        (19, 300, 10, True, 20),  # capped at max_replicas
    ],
)
def test_rps_threshold_decision_table(replicas, invocations, scale_factor, exact, expected):
    spec = fn(scaler="rps_threshold", scale_factor=scale_factor, faas_sim_exact=exact)
    verdict = decide(spec, obs(now=10.0, running=replicas, invocations=invocations))
    assert verdict.desired == expected
    assert verdict.metric == pytest.approx(invocations / 10.0)


@pytest.mark.parametrize(
    "running, pending, invocations, exact, target, expected",
    [
        (2, 0, 600, True, 200, 3),  # 300 per replica per window / 200: ceil(2 x 1.5) = 3
        (2, 1, 600, True, 200, 4),  # faas-sim adds desired - running = 1 on top of the pending one
        (2, 0, 420, True, 200, None),  # 210 / 200 within the 0.1 tolerance
        (2, 0, 100, True, 200, 1),  # 50 per replica: down to ceil(2 x 0.25) = 1
        (2, 0, 600, False, 200, 1),  # per second: 600 / 50 s / 2 = 6 per replica, far below 200
        (2, 1, 600, False, 4, None),  # 6 per s / 4: 3 wanted; fixed: the total (2 + 1 pending) is already 3
        (0, 1, 600, True, 200, None),  # no running replica: nothing to average
    ],
)
def test_average_rps_decision_table(running, pending, invocations, exact, target, expected):
    spec = fn(scaler="average_rps", faas_sim_exact=exact, target_average_rps=target)
    verdict = decide(spec, obs(now=50.0, running=running, pending=pending, invocations=invocations))
    assert verdict.desired == expected


@pytest.mark.parametrize(
    "queued, pending, expected",
    [
        ((100, 200), 0, 4),  # median 150 / 75: ceil(2 x 2) = 4
        ((70, 80), 0, None),  # median 75: ratio 1
        ((0, 10), 0, 1),  # median 5: ceil(2 x 5/75) = 1
        ((100, 200), 3, None),  # with pending zeros the median (0) would shrink: reversed decision, hold
    ],
)
def test_queue_per_replica_decision_table(queued, pending, expected):
    spec = fn(scaler="queue_per_replica")
    assert decide(spec, obs(running=2, pending=pending, queued=queued)).desired == expected


@pytest.mark.parametrize(
    "replicas, last, now, busy, minimum, expected",
    [
        (1, 0.0, 400.0, 0, 1, 0),  # idle 400 s >= 300: zero
        (1, 0.0, 200.0, 0, 1, None),  # idle 200 s: keep
        (1, 0.0, 400.0, 1, 1, None),  # still serving: keep
        (0, 0.0, 400.0, 0, 1, None),  # at zero: the gateway wakes it
        (1, 390.0, 400.0, 0, 2, 2),  # active, below min
    ],
)
def test_scale_to_zero_decision_table(replicas, last, now, busy, minimum, expected):
    spec = fn(scaler="scale_to_zero", min_replicas=minimum, max_replicas=4)
    o = obs(now=now, running=replicas, busy=(busy,) * replicas, last=last)
    assert IdleScaler(spec).decide(o).desired == expected


def test_hpa_through_the_shared_section_with_per_function_targets():
    spec = fn(scaler="hpa", target_utilization=50, min_replicas=1, max_replicas=10)
    verdict = decide(spec, obs(now=15.0, running=2, cpu=(1.0, 1.0)))  # 100% of the request / 50%: twice the replicas
    assert verdict.desired == 4 and verdict.metric == 100 and verdict.target == 50
    spec.max_replicas = 3  # live: the overlay reads it at the next decision
    assert decide(spec, obs(now=15.0, running=2, cpu=(1.0, 1.0))).desired == 3


def test_kpa_counts_waiting_requests_as_concurrency():
    spec = fn(scaler="kpa", min_replicas=0, max_replicas=20)
    verdict = decide(spec, obs(now=2.0, running=2, busy=(4, 4), gateway=10))  # 18 in flight / (4 threads x 70%)
    assert verdict.desired == 7


def test_keda_queue_length_per_replica():
    spec = fn(scaler="keda", target_keda_queue=10.0, min_replicas=0, max_replicas=20)
    assert decide(spec, obs(now=15.0, running=1, gateway=30)).desired == 3
    # at zero, activation by the operator's poll
    assert decide(spec, obs(now=15.0, running=0, gateway=5, lo=0)).desired == 1


def test_queue_drain_applied_to_replicas():
    spec = fn(scaler="queue_drain", drain_band_low=10.0, drain_band_high=30.0)
    rounds = [obs(now=10.0 * k, running=1, gateway=200, avg=1.0) for k in (1, 2, 3)]
    assert decide(spec, *rounds).desired == 2  # 200 waiting / 4 threads x 1 s = 50 s > 30 s: add ceil(50/25 - 1) = 1
    held = [obs(now=10.0 * k, running=1, gateway=100, avg=1.0) for k in (1, 2, 3)]
    assert decide(spec, *held).desired is None  # 25 s inside the band


def test_rps_threshold_counts_arrivals_when_not_faas_sim_exact():
    o = FunctionObservation(now=10.0, ready=(0,), concurrency=(2,), busy=(2,), queued=(30,), cpu=(1.0,), invocations=40, arrivals=300)
    assert decide(fn(scaler="rps_threshold", scale_factor=10), o).desired is None  # faas-sim: 4 rps started, below 20; at the floor
    assert decide(fn(scaler="rps_threshold", scale_factor=10, faas_sim_exact=False), o).desired == 3  # 30 rps arrived: up by 2


def test_every_function_scaler_is_a_row_with_a_doc_and_builds():
    for name, entry in FUNCTION_SCALERS.items():
        assert entry.doc
        built = make_function_scaler(fn(scaler=name, min_replicas=1), shared())
        assert (built is None) == (entry.build is None)


def test_overlay_reads_overrides_then_the_base():
    base, override = HPAParams(tolerance=0.2), fn(target_utilization=70)
    view = Overlay(base, override, {"target_utilization": "target_utilization"})
    assert view.target_utilization == 70 and view.tolerance == 0.2
    override.target_utilization = 30
    assert view.target_utilization == 30


def test_hpa_on_requests_per_replica():
    spec = fn(scaler="hpa", hpa_metric="requests", target_requests_per_replica=5.0, max_replicas=10)
    o = FunctionObservation(now=15.0, ready=(0, 1), concurrency=(4, 4), busy=(1, 1), queued=(0, 0), cpu=(0.1, 0.1), rps=(12.0, 8.0))
    verdict = decide(spec, o)
    assert verdict.desired == 4 and verdict.target == 100  # 20 rps / 5 per replica; the cpu (10 %) is not looked at
