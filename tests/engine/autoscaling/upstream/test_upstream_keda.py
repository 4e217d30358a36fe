"""KEDA's ScaledObject executor (``scale_scaledobjects.go`` and its tests) against :class:`KEDAPolicy`.

Upstream calls ``RequestScale(scaledObject, isActive, ...)`` on a target of some replicas; here the policy polls an
observation of that many serving workers whose master queue holds ``queue`` jobs (active: queue above the
activation threshold, 0). A case is a list of polls ``(now s, queue, replicas, expected)``: ``expected`` is the
count the operator sets, or ``...`` where the operator leaves the count to the HPA (which must then not go to
zero). Unless a case says otherwise the ScaledObject was created long before (upstream's zero creation time).
"""

from __future__ import annotations

import pytest
from upstream_cases import HPA_CALC, HPA_CONTROLLER, KEDA_OBJECTS, KEDA_RULES, Source, table

from engine.autoscaling.base import ScalingObservation
from engine.autoscaling.keda import KEDAParams, KEDAPolicy

LONG_AGO = -86400.0


def keda(test: str, skip: str = "") -> Source:
    return Source("keda", KEDA_OBJECTS, test, skip)


def rule(test: str) -> Source:
    """A case written from the executor's code (function / rule) where its tests do not cover the rule."""
    return Source("keda", KEDA_RULES, test)


def observation(now: float, queue: int, replicas: int) -> ScalingObservation:
    active = tuple(range(2, 2 + replicas))
    return ScalingObservation(
        now=now, active=active, threads=4 * replicas, cpu=(0.5,) * replicas, busy=(2.0,) * replicas, queue=(queue,), worker_count=replicas
    )


IDLE = "idleReplicaCount: not modelled (inactive goes to minReplicaCount)"
PAUSE = "the paused / paused-scale-in / paused-scale-out / force-activation annotations: not modelled"

# (source, keda params, created at, polls)
CASES = [
    (keda("TestScaleToMinReplicasWhenNotActive"), {"min_replica_count": 0}, LONG_AGO, [(0, 0, 10, 0)]),
    (keda("TestScaleToMinReplicasFromLowerInitialReplicaCount"), {"min_replica_count": 5}, LONG_AGO, [(0, 0, 1, 5)]),
    (keda("TestScaleFromMinReplicasWhenActive"), {"min_replica_count": 0}, LONG_AGO, [(0, 5, 0, 1)]),
    # the rules of RequestScale / scaleFromZeroOrIdle / scaleToZeroOrIdle the tests above do not reach
    (
        rule("RequestScale/inactive at zero below minReplicaCount goes to minReplicaCount"),
        {"min_replica_count": 2},
        LONG_AGO,
        [(0, 0, 0, 2)],
    ),
    (rule("scaleFromZeroOrIdle/active at zero goes to minReplicaCount when above 1"), {"min_replica_count": 3}, LONG_AGO, [(0, 5, 0, 3)]),
    (
        rule("scaleToZeroOrIdle/never active: zero only past the initial cooldown from creation"),
        {"initial_cooldown_period": 600.0, "cooldown_period": 60.0},
        0.0,
        [(0, 0, 3, ...), (300, 0, 3, ...), (570, 0, 3, ...), (600, 0, 3, 0)],
    ),
    (
        rule("scaleToZeroOrIdle/once active, the cooldown after the last activity and not the initial cooldown"),
        {"initial_cooldown_period": 600.0, "cooldown_period": 60.0},
        0.0,
        [(0, 0, 3, ...), (30, 5, 3, ...), (60, 0, 3, ...), (90, 0, 3, ...), (120, 0, 3, 0)],
    ),
    (
        rule("scaleToZeroOrIdle/cooldownPeriod counts from the last active poll"),
        {"cooldown_period": 300.0},
        LONG_AGO,
        [(0, 5, 2, ...), (60, 5, 2, ...), (90, 0, 2, ...), (360, 0, 2, ...), (390, 0, 2, 0)],
    ),
    (
        rule("RequestScale/inactive with minReplicaCount above 0 never goes to zero"),
        {"min_replica_count": 1},
        LONG_AGO,
        [(0, 0, 3, ...), (900, 0, 3, ...)],
    ),
    (keda("TestScaleToIdleReplicasWhenNotActive", IDLE), {}, LONG_AGO, []),
    (keda("TestScaleFromIdleToMinReplicasWhenActive", IDLE), {}, LONG_AGO, []),
    (keda("TestEventWitTriggerInfo", IDLE), {}, LONG_AGO, []),
    (keda("TestScaleToPausedReplicasCount", PAUSE), {}, LONG_AGO, []),
    (keda("TestNoScaleToMinReplicasWhenNotActiveAndPauseScaleInAnnotationSet", PAUSE), {}, LONG_AGO, []),
    (keda("TestNoScaleToIdleReplicasWhenNotActiveAndPauseScaleInAnnotationSet", PAUSE), {}, LONG_AGO, []),
    (keda("TestScaleFromMinReplicasWhenActivationForced", PAUSE), {}, LONG_AGO, []),
    (keda("TestNoScaleFromMinReplicasWhenActiveAndPausedScaleOutAnnotationSet", PAUSE), {}, LONG_AGO, []),
    (keda("TestNoScaleFromIdleReplicasToMinReplicasWhenActiveAndPausedScaleOutAnnotationSet", PAUSE), {}, LONG_AGO, []),
]


@pytest.mark.parametrize("source, params, created, polls", table(CASES))
def test_scaled_object_executor(source, params, created, polls):
    policy = KEDAPolicy(KEDAParams(polling_interval=30.0, **params))
    policy.started = created
    for now, queue, replicas, expected in polls:
        verdict = policy.decide(observation(float(now), queue, replicas))
        if expected is ...:
            assert verdict.desired != 0, f"at {now} s: {verdict.reason}"
        else:
            assert verdict.desired == expected, f"at {now} s: {verdict.reason}"


# The HPA KEDA creates reads the trigger as an external metric of type AverageValue, which is Kubernetes'
# "external per-pod" metric: desired = ceil(total / target per pod), current within tolerance. Upstream's cases
# for that metric run here against KEDA's HPA on the master queue, milli-units as jobs (8600m -> 8600 jobs).
# (source, current replicas, queue, target per worker, recommendation log "initial" / "empty", expected)
EXTERNAL_PER_POD = [
    (Source("keda", HPA_CALC, "TestReplicaCalcScaleUpPerPodCMExternal"), 3, 8600, 2150.0, "initial", 4),
    (Source("keda", HPA_CALC, "TestReplicaCalcScaleDownPerPodCMExternal"), 5, 8600, 2867.0, "empty", 3),
    (Source("keda", HPA_CALC, "TestReplicaCalcTolerancePerPodCMExternal"), 3, 8600, 2900.0, "initial", 3),
    (Source("keda", HPA_CONTROLLER, "TestScaleUpPerPodCMExternal"), 3, 8600, 2222.0, "initial", 4),
    (Source("keda", HPA_CONTROLLER, "TestScaleDownPerPodCMExternal"), 5, 8600, 3000.0, "empty", 3),
    (Source("keda", HPA_CONTROLLER, "TestTolerancePerPodCMExternal"), 4, 8600, 2200.0, "initial", 4),
]


@pytest.mark.parametrize("source, current, queue, target, log, expected", table(EXTERNAL_PER_POD))
def test_external_per_pod_metric_through_kedas_hpa(source, current, queue, target, log, expected):
    policy = KEDAPolicy(KEDAParams(target_queue_length=target, max_replica_count=6))
    policy.started = LONG_AGO
    if log == "empty":
        policy.memory._initialised = True  # upstream's harness: an empty recommendation log before the sync
    verdict = policy.decide(observation(0.0, queue, current))
    assert verdict.desired == expected, verdict.reason
