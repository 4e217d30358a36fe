"""Knative's autoscaler tests (``pkg/autoscaler/scaling/autoscaler_test.go``) against :class:`KPAPolicy`.

Upstream feeds the stable and panic averages from a fake metric client and the ready count from a fake pod counter,
then calls ``Scale``; here :meth:`KPAPolicy.start` is the autoscaler's creation (with the ready count the pod counter
had then) and :meth:`KPAPolicy.scale` its ``Scale``, given the same averages and ready count. A step is
``(now s, stable average, panic average, ready pods, expected pods, panic since)``, the last ``...`` where upstream
does not check it; a step may end with a dict of parameter changes applied before it (``Update`` of the spec).
Target T is ``container_concurrency`` T at 100 %. Upstream's excess burst capacity column is not ported (no
activator: the master buffers every job), nor its gauges.
"""

from __future__ import annotations

import pytest
from upstream_cases import KNATIVE, Source, table

from engine.autoscaling.base import ScalingObservation
from engine.autoscaling.kpa import KPAParams, KPAPolicy


def knative(test: str, skip: str = "") -> Source:
    return Source("kpa", KNATIVE, test, skip)


def spec(target: int, **fields) -> dict:
    """Upstream's test spec: target, rates 10 / 10, panic threshold 2 (200 %), stable window 60 s, no delay."""
    return {"container_concurrency": target, "target_percentage": 100, "max_scale_up_rate": 10.0, "max_scale_down_rate": 10.0} | fields


# The delay tests set a panic threshold of 100 (x ready) to keep out of panic; 1000 % is the param's bound and
# keeps these steps out of panic as well (at most 4 pods wanted over 1 ready).
CALM = {"panic_threshold_percentage": 1000.0}
SIMPLE = [(2, 40, 40, 0, 4, ...), (300, 0, 0, 0, 4, ...), (302, 0, 0, 0, 0, ...)]
RPS = "requests-per-second targets: the project's KPA scales on concurrency"
REACH = "an unreachable revision (no scale-down rate limit, no delay): the project has no revisions or routes"

# (source, spec, ready pods at creation, steps)
CASES = [
    (knative("TestAutoscalerScaleDownDelay/simple"), spec(10, scale_down_delay=300.0, **CALM), 0, SIMPLE),
    # the subtest continues on the autoscaler "simple" left
    (
        knative("TestAutoscalerScaleDownDelay/gradual"),
        spec(10, scale_down_delay=300.0, **CALM),
        0,
        SIMPLE
        + [(540, 40, 40, 0, 4, ...), (600, 30, 30, 0, 4, ...), (660, 0, 0, 0, 4, ...), (840, 0, 0, 0, 3, ...), (900, 0, 0, 0, 0, ...)],
    ),
    (knative("TestAutoscalerScaleDownDelayZero"), spec(10, **CALM), 0, [(0, 40, 40, 0, 4, ...), (0.5, 20, 20, 0, 2, ...)]),
    (knative("TestAutoscalerMetrics"), spec(10), 1, [(0, 50, 50, 1, 5, ...)]),
    (knative("TestAutoscalerStableModeIncreaseWithConcurrencyDefault"), spec(10), 1, [(0, 50, 10, 1, 5, ...), (0, 100, 10, 1, 10, ...)]),
    (
        knative("TestAutoscalerUnpanicAfterSlowIncrease"),
        spec(1),
        1,
        [(0, 11, 25, 10, 25, 0), (30, 30, 41, 40, 41, 0), (62, 50, 56, 55, 50, None)],
    ),
    (knative("TestAutoscalerExtendPanicWindow"), spec(1), 1, [(0, 11, 25, 10, 25, 0), (30, 30, 80, 40, 80, 30)]),
    (knative("TestAutoscalerStableModeDecrease"), spec(10), 1, [(0, 100, 100, 8, 10, ...), (0, 50, 50, 8, 5, ...)]),
    (knative("TestAutoscalerStableModeNoTrafficScaleToZero"), spec(10), 1, [(0, 1, 0, 1, 1, ...), (0, 0, 0, 1, 0, ...)]),
    (knative("TestAutoscalerActivationScale"), spec(10, activation_scale=2), 1, [(0, 0, 0, 1, 0, ...), (0, 1, 0, 1, 2, ...)]),
    (
        knative("TestAutoscalerPanicModeExponentialTrackAndStabilize"),
        spec(1),
        1,
        [
            (0, 6, 6, 1, 6, ...),
            (0.001, 36, 36, 6, 36, 0.001),
            (1.001, 216, 216, 36, 216, 1.001),
            (1.001, 1296, 1296, 216, 1296, 1.001),
            (2.001, 1296, 1296, 1296, 1296, ...),
        ],
    ),
    (
        knative("TestAutoscalerPanicThenUnPanicScaleDown"),
        spec(10),
        1,
        [(0, 100, 100, 1, 10, ...), (0.001, 100, 1000, 10, 100, ...), (30.001, 1, 1, 10, 100, ...), (61.001, 1, 1, 10, 1, ...)],
    ),
    (knative("TestAutoscalerRateLimitScaleUp"), spec(10), 1, [(0, 1000, 1001, 1, 10, ...), (0, 1000, 1001, 10, 100, ...)]),
    (knative("TestAutoscalerRateLimitScaleDown"), spec(10), 1, [(0, 1, 1, 100, 10, ...), (0, 1, 1, 10, 1, ...)]),
    (knative("TestAutoscalerUseOnePodAsMinimumIfEndpointsNotFound"), spec(10), 1, [(0, 1000, 888, 0, 10, ...)]),
    (
        knative("TestAutoscalerUpdateTarget"),
        spec(10),
        1,
        [(0, 100, 101, 1, 10, ...), (0, 100, 101, 10, 100, ..., {"container_concurrency": 1})],
    ),
    (knative("TestAutoscalerMetricsWithRPS", RPS), spec(10), 1, []),
    (knative("TestAutoscalerStableModeIncreaseWithRPS", RPS), spec(10), 1, []),
    (knative("TestAutoscalerScaleDownDelayNotReachable", REACH), spec(10), 0, []),
    (knative("TestCantCountPods", "the ready count never fails to be read here"), spec(10), 1, []),
]

# TestAutoscalerScale: one fresh autoscaler per row (created at 1 ready pod), ready set to the base scale, and for
# the panic rows a panic entered 5 s before with 5 pods held.
SCALE = "TestAutoscalerScale/"
PANIC_5S = {"panic_since": -5.0, "max_panic_pods": 5}
CASES += [
    (knative(SCALE + "AutoscalerNoDataAtZeroNoAutoscale"), spec(10), 1, [(0, 0, 0, 1, 0, ...)]),
    (knative(SCALE + "AutoscalerNoDataAtZeroNoAutoscaleWithExplicitEPs"), spec(10), 1, [(0, 0, 0, 1, 0, ...)]),
    (knative(SCALE + "AutoscalerStableModeUnlimitedTBC"), spec(181), 1, [(0, 21, 26, 1, 1, ...)]),
    (knative(SCALE + "Autoscaler0TBC"), spec(10), 1, [(0, 50, 49, 1, 5, ...)]),
    (knative(SCALE + "AutoscalerStableModeNoChange"), spec(10), 1, [(0, 50, 50, 1, 5, ...)]),
    (knative(SCALE + "AutoscalerPanicStableLargerThanPanic"), spec(1), 1, [(0, 50, 30, 5, 50, ..., PANIC_5S)]),
    (knative(SCALE + "AutoscalerPanicStableLessThanPanic"), spec(1), 1, [(0, 20, 30, 5, 30, ..., PANIC_5S)]),
    (knative(SCALE + "AutoscalerStableModeNoChangeAlreadyScaled"), spec(10), 1, [(0, 50, 50, 5, 5, ...)]),
    (knative(SCALE + "AutoscalerStableModeIncreaseWithSmallScaleUpRate"), spec(1, max_scale_up_rate=1.1), 1, [(0, 3, 3.1, 2, 3, ...)]),
    (
        knative(SCALE + "AutoscalerStableModeDecreaseWithSmallScaleDownRate"),
        spec(10, max_scale_down_rate=1.1),
        1,
        [(0, 1, 1, 100, 90, ...)],
    ),
    (knative(SCALE + "AutoscalerStableModeDecreaseNonReachable", REACH), spec(10), 1, []),
    (knative(SCALE + "AutoscalerPanicModeDoublePodCount"), spec(10), 1, [(0, 50, 100, 1, 10, ...)]),
]


@pytest.mark.parametrize("source, params, ready_at_creation, steps", table(CASES))
def test_autoscaler_scale(source, params, ready_at_creation, steps):
    policy = KPAPolicy(KPAParams(**params))
    policy.start(0.0, ready_at_creation)
    for now, stable, panic, ready, expected, panic_since, *changes in steps:
        for name, value in (changes[0] if changes else {}).items():
            target = policy if name in ("panic_since", "max_panic_pods") else policy.params
            setattr(target, name, value)
        assert policy.scale(now, stable, panic, ready) == expected, f"at {now} s"
        if panic_since is not ...:
            assert policy.panic_since == panic_since, f"panic since, at {now} s"


# (source, ready pods at creation, in panic after creation): newAutoscaler holds the ready pods as maxPanicPods
START = [(knative(f"TestStartInPanicMode/{n} ready"), n, n > 1) for n in range(3)]


@pytest.mark.parametrize("source, ready, in_panic", table(START))
def test_start_in_panic(source, ready, in_panic):
    policy = KPAPolicy(KPAParams(**spec(100)))
    policy.start(0.0, ready)
    assert (policy.panic_since is not None, policy.max_panic_pods) == (in_panic, ready)
    # the same through decide: the first round's ready workers (idle) are what the policy starts with
    first = KPAPolicy(KPAParams(**spec(100)))
    obs = ScalingObservation(now=0.0, active=tuple(range(ready)), threads=4 * ready, cpu=(0.0,) * ready, busy=(0.0,) * ready, queue=(0,))
    first.decide(obs)
    assert (first.panic_since is not None, first.max_panic_pods) == (in_panic, ready)


NO_DATA = [(knative("TestAutoscalerNoDataNoAutoscale"),)]


@pytest.mark.parametrize("source", table(NO_DATA))
def test_no_data_no_decision(source):
    """No metric yet (here: no master heartbeat, so no queue length) -> an invalid result (here: not measured)."""
    verdict = KPAPolicy(KPAParams(**spec(10))).decide(ScalingObservation(now=0.0))
    assert verdict.action == "not_measured" and verdict.desired is None
