"""Kubernetes' replica calculator tests (``replica_calculator_test.go``) against :func:`hpa_replicas` and the HPA policy.

Each row: current replicas, the ready workers' cpu (fraction of the request, one per pod with a metric), unready
pods, pods with no metric, pods being deleted, the target utilisation (%), the expected replicas and the expected
reported utilisation (%, truncated). Pods of 2 containers at ``level`` milli-cpu each with a 1-cpu request per
container are ``level / 1000`` here. Failed pods are left out (the observation never holds failed workers); "hot
cpu" pods (inside the cpu initialisation period with a metric older than their readiness) are unready pods: the
project has no pod start or readiness-transition times, so the classification is given, and the decision on it
is what is checked.
"""

from __future__ import annotations

import pytest
from upstream_cases import HPA_CALC, Source, hpa_observation, table

from engine.autoscaling.hpa import HPAParams, HPAPolicy, hpa_replicas


def calc(test: str, skip: str = "") -> Source:
    return Source("hpa", HPA_CALC, test, skip)


CUSTOM = "custom, object and external metrics: the project's HPA has one metric, the workers' cpu utilisation"
# (the external per-pod (AverageValue) cases run against KEDA's HPA on the queue length: test_upstream_keda.py)
UNEQUAL = "pods with unequal cpu requests: a worker's request is its whole VM, so utilisation is the mean of per-worker loads"

# (source, current, ready loads, unready, missing, deleting, target %, expected replicas, expected utilisation %)
CASES = [
    (calc("TestReplicaCalcScaleUp"), 3, (0.3, 0.5, 0.7), 0, 0, 0, 30, 5, 50),
    (calc("TestReplicaCalcScaleUpUnreadyLessScale"), 3, (0.5, 0.7), 1, 0, 0, 30, 4, 60),
    (calc("TestReplicaCalcScaleUpHotCpuLessScale"), 3, (0.5, 0.7), 1, 0, 0, 30, 4, 60),
    (calc("TestReplicaCalcScaleUpUnreadyNoScale"), 3, (0.4,), 2, 0, 0, 30, 3, 40),
    (calc("TestReplicaCalcScaleHotCpuNoScale"), 3, (0.4,), 2, 0, 0, 30, 3, 40),
    (calc("TestReplicaCalcScaleUpIgnoresFailedPods"), 2, (0.5, 0.7), 0, 0, 0, 30, 4, 60),
    (calc("TestReplicaCalcScaleUpIgnoresDeletionPods"), 2, (0.5, 0.7), 0, 0, 2, 30, 4, 60),
    (calc("TestReplicaCalcScaleDown"), 5, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 0, 50, 3, 28),
    (calc("TestReplicaCalcScaleDownIncludeUnreadyPods"), 5, (0.1, 0.3, 0.5), 2, 0, 0, 50, 2, 30),
    (calc("TestReplicaCalcScaleDownExcludeUnscheduledPods"), 5, (0.1,), 4, 0, 0, 50, 1, 10),
    (calc("TestReplicaCalcScaleDownIgnoreHotCpuPods"), 5, (0.1, 0.3, 0.5), 2, 0, 0, 50, 2, 30),
    (calc("TestReplicaCalcScaleDownIgnoresFailedPods"), 5, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 0, 50, 3, 28),
    (calc("TestReplicaCalcScaleDownIgnoresDeletionPods"), 5, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 2, 50, 3, 28),
    # requests 0.9 / 1.0 / 1.1 cpu: loads are usage / request per pod (102 % either way)
    (calc("TestReplicaCalcTolerance"), 3, (1.01 / 0.9, 1.03, 1.02 / 1.1), 0, 0, 0, 100, 3, 102),
    # six metrics for four pods: the two of unknown pods are dropped (here there is one load per worker)
    (calc("TestReplicaCalcSuperfluousMetrics"), 4, (4.0, 9.5, 3.0, 7.0), 0, 0, 0, 100, 24, 587),
    (calc("TestReplicaCalcMissingMetrics"), 4, (0.4, 0.095), 0, 2, 0, 100, 3, 24),
    (calc("TestReplicaCalcMissingMetricsNoChangeEq"), 2, (1.0,), 0, 1, 0, 100, 2, 100),
    (calc("TestReplicaCalcMissingMetricsNoChangeGt"), 2, (1.9,), 0, 1, 0, 100, 2, 190),
    (calc("TestReplicaCalcMissingMetricsNoChangeLt"), 2, (0.6,), 0, 1, 0, 100, 2, 60),
    (calc("TestReplicaCalcMissingMetricsUnreadyChange"), 3, (0.45,), 1, 1, 0, 50, 3, 45),
    (calc("TestReplicaCalcMissingMetricsHotCpuNoChange"), 3, (0.45,), 1, 1, 0, 50, 3, 45),
    (calc("TestReplicaCalcMissingMetricsUnreadyScaleUp"), 3, (2.0,), 1, 1, 0, 50, 4, 200),
    (calc("TestReplicaCalcMissingMetricsHotCpuScaleUp"), 3, (2.0,), 1, 1, 0, 50, 4, 200),
    # a missing pod on a scale-down counts as 100 % of its request (max(100, target)), not as the target
    (calc("TestReplicaCalcMissingMetricsUnreadyScaleDown"), 4, (0.1, 0.1), 1, 1, 0, 50, 3, 10),
    (calc("TestReplicaCalcComputedToleranceAlgImplementation", UNEQUAL), 10, (), 0, 0, 0, 56, 9, 50),
    (
        calc("TestReplicaCalcDisjointResourcesMetrics", "metrics of pods the HPA does not select: each worker reports its own"),
        1,
        (),
        0,
        0,
        0,
        100,
        0,
        0,
    ),
    (calc("TestReplicaCalcEmptyCPURequest", "a pod without a cpu request: every worker's request is its VM"), 1, (), 0, 0, 0, 100, 0, 0),
]
CASES += [
    (calc(name, CUSTOM), 0, (), 0, 0, 0, 1, 0, 0)
    for name in (
        "TestReplicaCalcScaleUpCM",
        "TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale",
        "TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown",
        "TestReplicaCalcScaleUpCMObject",
        "TestReplicaCalcScaleUpCMPerPodObject",
        "TestReplicaCalcScaleUpCMObjectIgnoresUnreadyPods",
        "TestReplicaCalcScaleUpCMExternal",
        "TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods",
        "TestReplicaCalcScaleUpCMExternalNoLabels",
        "TestReplicaCalcScaleDownCM",
        "TestReplicaCalcScaleDownPerPodCMObject",
        "TestReplicaCalcScaleDownCMObject",
        "TestReplicaCalcScaleDownCMExternal",
        "TestReplicaCalcToleranceCM",
        "TestReplicaCalcToleranceCMObject",
        "TestReplicaCalcTolerancePerPodCMObject",
        "TestReplicaCalcToleranceCMExternal",
    )
]


@pytest.mark.parametrize("source, current, loads, unready, missing, deleting, target, expected, utilisation", table(CASES))
def test_replica_calculator(source, current, loads, unready, missing, deleting, target, expected, utilisation):
    replicas, ratio = hpa_replicas(current, loads, target, 0.1, unready=unready, missing=missing)
    assert replicas == expected
    assert round(ratio * target) == utilisation


def _open_policy(target: int) -> HPAPolicy:
    """An HPA whose behavior never limits (no windows, wide policies) and whose recommendation log starts empty.

    Upstream's calculator tests see the calculator alone; through ``decide`` the same numbers must come out when
    nothing else acts. The empty log is upstream's test harness (an empty list set before the first sync, so
    ``recordInitialRecommendation`` adds nothing).
    """
    params = HPAParams(
        min_replicas=1,
        max_replicas=1000,
        target_utilization=target,
        scale_up_stabilization=0.0,
        scale_down_stabilization=0.0,
        scale_up_pods=1000,
        scale_up_percent=1000,
        scale_down_percent=100,
    )
    policy = HPAPolicy(params)
    policy.memory._initialised = True
    return policy


@pytest.mark.parametrize(
    "source, current, loads, unready, missing, deleting, target, expected, utilisation",
    table([row for row in CASES if row[4] == 0]),
)
def test_replica_calculator_through_the_policy(source, current, loads, unready, missing, deleting, target, expected, utilisation):
    obs = hpa_observation(0.0, loads, unready=unready, draining=deleting)
    assert obs.replicas == current
    verdict = _open_policy(target).decide(obs)
    assert verdict.desired == expected
    assert verdict.utilisation == utilisation


# (source, current replicas, pods without any metric): no metric at all is an error upstream, no decision here
NO_METRIC = [(calc("TestReplicaCalcEmptyMetrics"), 4, 4)]


@pytest.mark.parametrize("source, current, unready", table(NO_METRIC))
def test_no_metric_is_no_decision(source, current, unready):
    with pytest.raises(ValueError):
        hpa_replicas(current, (), 100, 0.1, unready=unready)
    verdict = _open_policy(100).decide(hpa_observation(0.0, (), unready=unready))
    assert verdict.action == "not_measured" and verdict.desired is None
