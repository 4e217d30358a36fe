"""Kubernetes' HPA controller tests (``horizontal_test.go``): behavior tables against :class:`HPAMemory`, whole syncs
against :meth:`HPAPolicy.decide`.

Times are seconds with "now" at 0; upstream's ``generateEventsUniformDistribution(changes, 120)`` puts the events
in the middles of equal slices of the last 120 s (:func:`spread`). A rules tuple is upstream's
``generateScalingRules(pods, podsPeriod, percent, percentPeriod, stabilizationWindow)`` (selectPolicy Max, a value
of 0 leaves that policy out), ``None`` the autoscaling/v2 defaults, which are also this project's.
"""

from __future__ import annotations

import pytest
from upstream_cases import HPA_CONTROLLER, Source, hpa_observation, table

from engine.autoscaling.hpa import HPAMemory, HPAParams, HPAPolicy


def hpa(test: str, skip: str = "") -> Source:
    return Source("hpa", HPA_CONTROLLER, test, skip)


def spread(changes: list[int], period: float = 120.0) -> list[tuple[float, int]]:
    """``generateEventsUniformDistribution``: event i at the middle of the i-th of len(changes) slices of the period."""
    slice_ = period / len(changes)
    return [(-(period - slice_ * (i + 1) + slice_ / 2), change) for i, change in enumerate(changes)]


def behavior(up=None, down=None, **fields) -> HPAParams:
    """HPAParams with ``generateScalingRules``-style rules for each direction (None: the defaults)."""
    for direction, rules in (("up", up), ("down", down)):
        if rules is None:
            continue
        pods, pods_period, percent, percent_period, window = rules
        fields |= {f"scale_{direction}_pods": pods, f"scale_{direction}_percent": percent}
        fields |= {f"scale_{direction}_stabilization": float(window), f"scale_{direction}_select": "Max"}
        if pods:
            fields[f"scale_{direction}_pods_period"] = pods_period
        if percent:
            fields[f"scale_{direction}_percent_period"] = percent_period
    return HPAParams(**fields)


LEGACY = "the HPA without a behavior (legacy limit max(2 x current, 4), one down window): the project always runs a behavior"
PARAM_BOUND = "a policy value above the param's bounds (Pods/Percent up to 1000, scale-down Percent up to 100)"

# ---- convertDesiredReplicasWithBehaviorRate ---------------------------------------------------------------------
# (source, up events, down events, min, max, up rules, down rules, current, desired before limits, expected, condition)
E3, E4, E6 = spread([1, 5, 9]), spread([8, 12, 9, 11]), spread([2, 4, 6])
RATE = "TestScalingWithRules/"
RATES = [
    (hpa(RATE + "prenormalized desired replicas within range"), [], [], 3, 8, None, None, 5, 7, 7, "DesiredWithinRange"),
    (hpa(RATE + "prenormalized desired replicas < minReplicas"), [], [], 2, 8, None, None, 3, 1, 2, "TooFewReplicas"),
    (
        hpa(RATE + "prenormalized desired replicas within range when minReplicas is 0"),
        [],
        [],
        0,
        10,
        None,
        None,
        1,
        0,
        0,
        "DesiredWithinRange",
    ),
    (hpa(RATE + "maxReplicas is the limit because maxReplicas < scaleUpLimit"), [], [], 1, 10, None, None, 20, 1000, 10, "TooManyReplicas"),
    (
        hpa(RATE + "desired replica count is more than the maximum replica count"),
        [],
        [],
        100,
        150,
        None,
        None,
        100,
        1000,
        150,
        "TooManyReplicas",
    ),
    (
        hpa(RATE + "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies"),
        [],
        [],
        1,
        2000,
        (0, 0, 1, 60, 0),
        None,
        3,
        1000,
        4,
        "ScaleUpLimit",
    ),
    # upstream marks this row testThis and returns early; its expectation still holds for the code
    (
        hpa(RATE + "scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies"),
        [],
        [],
        3,
        2000,
        None,
        (20, 60, 0, 0, 0),
        1000,
        3,
        980,
        "ScaleDownLimit",
    ),
    (hpa(RATE + "scaleUp with default behavior"), [], [], 1, 1000, None, None, 10, 50, 20, "ScaleUpLimit"),
    (
        hpa(RATE + "scaleUp with pods policy larger than percent policy"),
        [],
        [],
        1,
        1000,
        (100, 60, 100, 60, 0),
        None,
        10,
        500,
        110,
        "ScaleUpLimit",
    ),
    (
        hpa(RATE + "scaleUp with percent policy larger than pods policy"),
        [],
        [],
        1,
        1000,
        (2, 60, 100, 60, 0),
        None,
        10,
        500,
        20,
        "ScaleUpLimit",
    ),
    (
        hpa(RATE + "scaleUp with spec MaxReplicas limitation with large pod policy"),
        [],
        [],
        1,
        1000,
        (100, 60, 0, 0, 0),
        None,
        10,
        50,
        50,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "scaleUp with spec MaxReplicas limitation with large percent policy", PARAM_BOUND),
        [],
        [],
        1,
        1000,
        (10000, 60, 0, 0, 0),
        None,
        10,
        50,
        50,
        "DesiredWithinRange",
    ),
    (hpa(RATE + "scaleUp with pod policy limitation"), [], [], 1, 1000, (30, 60, 0, 0, 0), None, 10, 50, 40, "ScaleUpLimit"),
    (hpa(RATE + "scaleUp with percent policy limitation"), [], [], 1, 1000, (0, 0, 200, 60, 0), None, 10, 50, 30, "ScaleUpLimit"),
    (
        hpa(RATE + "scaleDown with percent policy larger than pod policy"),
        [],
        [],
        1,
        1000,
        None,
        (20, 60, 1, 60, 300),
        100,
        2,
        80,
        "ScaleDownLimit",
    ),
    (
        hpa(RATE + "scaleDown with pod policy larger than percent policy"),
        [],
        [],
        1,
        1000,
        None,
        (2, 60, 1, 60, 300),
        100,
        2,
        98,
        "ScaleDownLimit",
    ),
    (
        hpa(RATE + "scaleDown with spec MinReplicas=nil limitation with large pod policy"),
        [],
        [],
        1,
        1000,
        None,
        (100, 60, 0, 0, 300),
        10,
        0,
        1,
        "TooFewReplicas",
    ),
    (
        hpa(RATE + "scaleDown with spec MinReplicas limitation with large pod policy"),
        [],
        [],
        1,
        1000,
        None,
        (100, 60, 0, 0, 300),
        10,
        0,
        1,
        "TooFewReplicas",
    ),
    (
        hpa(RATE + "scaleDown with spec MinReplicas limitation with large percent policy"),
        [],
        [],
        5,
        1000,
        None,
        (0, 0, 100, 60, 300),
        10,
        2,
        5,
        "TooFewReplicas",
    ),
    (hpa(RATE + "scaleDown with pod policy limitation"), [], [], 1, 1000, None, (5, 60, 0, 0, 300), 10, 2, 5, "ScaleDownLimit"),
    (hpa(RATE + "scaleDown with percent policy limitation"), [], [], 1, 1000, None, (0, 0, 50, 60, 300), 10, 5, 5, "DesiredWithinRange"),
    (
        hpa(RATE + "scaleUp with spec MaxReplicas limitation with large pod policy and events"),
        E3,
        [],
        1,
        200,
        (300, 60, 0, 0, 0),
        None,
        100,
        500,
        200,
        "TooManyReplicas",
    ),
    (
        hpa(RATE + "scaleUp with spec MaxReplicas limitation with large percent policy and events", PARAM_BOUND),
        E3,
        [],
        1,
        200,
        (0, 0, 10000, 60, 0),
        None,
        100,
        500,
        200,
        "TooManyReplicas",
    ),
    (
        hpa(RATE + "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events"),
        E3,
        [],
        1,
        1000,
        (5, 120, 0, 0, 0),
        None,
        100,
        500,
        100,
        "ScaleUpLimit",
    ),
    (
        hpa(RATE + "scaleUp with pod policy and previous scale up events"),
        E3,
        [],
        1,
        1000,
        (150, 120, 0, 0, 0),
        None,
        100,
        500,
        235,
        "ScaleUpLimit",
    ),
    (
        hpa(RATE + "scaleUp with percent policy and previous scale up events"),
        E3,
        [],
        1,
        1000,
        (0, 0, 200, 120, 0),
        None,
        100,
        500,
        255,
        "ScaleUpLimit",
    ),
    (hpa(RATE + "scaleDown with default policy and previous events"), [], E3, 1, 1000, None, None, 10, 5, 5, "DesiredWithinRange"),
    (
        hpa(RATE + "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events"),
        [],
        E3,
        1,
        1000,
        None,
        (115, 120, 0, 0, 300),
        100,
        0,
        1,
        "TooFewReplicas",
    ),
    (
        hpa(RATE + "scaleDown with spec MinReplicas limitation with large pod policy and previous events"),
        [],
        E3,
        5,
        1000,
        None,
        (130, 120, 0, 0, 300),
        100,
        0,
        5,
        "TooFewReplicas",
    ),
    (
        hpa(RATE + "scaleDown with spec MinReplicas limitation with large percent policy and previous events"),
        [],
        E3,
        5,
        1000,
        None,
        (0, 0, 100, 120, 300),
        100,
        2,
        5,
        "TooFewReplicas",
    ),
    (
        hpa(RATE + "scaleDown with pod policy limitation and previous events"),
        [],
        E3,
        1,
        1000,
        None,
        (5, 120, 0, 0, 300),
        100,
        2,
        100,
        "ScaleDownLimit",
    ),
    (
        hpa(RATE + "scaleDown with percent policy limitation and previous events"),
        [],
        E6,
        1,
        1000,
        None,
        (0, 0, 50, 120, 300),
        100,
        0,
        56,
        "ScaleDownLimit",
    ),
    (
        hpa(RATE + "scaleDown with previous events preventing further scale down"),
        [],
        spread([10, 10, 10]),
        1,
        1000,
        None,
        (0, 0, 10, 120, 300),
        100,
        0,
        100,
        "ScaleDownLimit",
    ),
    (
        hpa(RATE + "scaleDown with with previous events still allowing more scale down", PARAM_BOUND),
        [],
        spread([10, 10, 10]),
        1,
        1000,
        None,
        (0, 0, 1000, 120, 300),
        10,
        5,
        5,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check 'outdated' flag for events for one behavior for up"),
        E4,
        [],
        1,
        1000,
        (1000, 60, 0, 0, 0),
        None,
        100,
        200,
        200,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check that events were not marked 'outdated' for two different policies in the behavior for up"),
        E4,
        [],
        1,
        1000,
        (1000, 120, 100, 60, 0),
        None,
        100,
        200,
        200,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check that events were marked 'outdated' for two different policies in the behavior for up"),
        E4,
        [],
        1,
        1000,
        (1000, 30, 100, 60, 0),
        None,
        100,
        200,
        200,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check 'outdated' flag for events for one behavior for down"),
        [],
        E4,
        1,
        1000,
        None,
        (1000, 60, 0, 0, 300),
        100,
        5,
        5,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check that events were not marked 'outdated' for two different policies in the behavior for down"),
        [],
        E4,
        1,
        1000,
        None,
        (1000, 120, 100, 60, 300),
        100,
        5,
        5,
        "DesiredWithinRange",
    ),
    (
        hpa(RATE + "check that events were marked 'outdated' for two different policies in the behavior for down"),
        [],
        E4,
        1,
        1000,
        None,
        (1000, 30, 100, 60, 300),
        100,
        5,
        5,
        "DesiredWithinRange",
    ),
]
RATES += [
    (hpa(f"TestConvertDesiredReplicasWithRules/{name}", LEGACY), [], [], 1, 10, None, None, 1, 1, 1, "")
    for name in (
        "prenormalized desired replicas within range",
        "prenormalized desired replicas < minReplicas",
        "prenormalized desired zeroed replicas within range",
        "maxReplicas is the limit because maxReplicas < scaleUpLimit",
        "scaleUpLimit is the limit because scaleUpLimit < maxReplicas",
    )
]


@pytest.mark.parametrize("source, up_events, down_events, low, high, up, down, current, desired, expected, condition", table(RATES))
def test_scaling_with_rules(source, up_events, down_events, low, high, up, down, current, desired, expected, condition):
    memory = HPAMemory()
    memory.up_events, memory.down_events = list(up_events), list(down_events)
    assert memory.limit_rate(behavior(up, down), 0.0, current, desired, low, high) == (expected, condition)


# ---- calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors (selectPolicy Min) ---------------
# (source, direction, current, expected limit): Pods 2 / 60 s and Percent 50 / 60 s, no events
SELECT_MIN = [
    (hpa("TestCalculateScaleUpLimitWithScalingRules"), "up", 1, 2),
    (hpa("TestCalculateScaleDownLimitWithBehaviors"), "down", 5, 3),
]


@pytest.mark.parametrize("source, direction, current, expected", table(SELECT_MIN))
def test_select_policy_min(source, direction, current, expected):
    rules = {f"scale_{direction}_{k}": v for k, v in (("pods", 2), ("pods_period", 60), ("percent", 50), ("percent_period", 60))}
    params = HPAParams(**rules, **{f"scale_{direction}_select": "Min"})
    assert HPAMemory().limit(params, direction, 0.0, current) == expected


# ---- stabilizeRecommendationWithBehaviors --------------------------------------------------------------------------
# (source, recommendations (age s, replicas), current, desired, up window, down window, expected)
STABLE = "TestNormalizeDesiredReplicasWithBehavior/"
STABILISATIONS = [
    (hpa(STABLE + "empty recommendations for scaling down"), [], 100, 5, 0, 0, 5),
    (hpa(STABLE + "simple scale down stabilization"), [(120, 4), (60, 5)], 100, 3, 0, 180, 5),
    (hpa(STABLE + "simple scale up stabilization"), [(120, 4), (60, 5)], 1, 7, 300, 0, 4),
    (hpa(STABLE + "no scale down stabilization"), [(120, 1), (60, 2)], 100, 3, 300, 0, 3),
    (hpa(STABLE + "no scale up stabilization"), [(120, 4), (60, 5)], 1, 3, 0, 300, 3),
    (hpa(STABLE + "no scale down stabilization, reuse recommendation element"), [(600, 10), (540, 9)], 100, 3, 0, 0, 3),
    (hpa(STABLE + "no scale up stabilization, reuse recommendation element"), [(600, 10), (540, 9)], 1, 100, 0, 0, 100),
    (
        hpa(STABLE + "scale down stabilization, reuse one of obsolete recommendation element"),
        [(600, 10), (60, 4), (120, 5), (540, 9)],
        100,
        3,
        0,
        180,
        5,
    ),
    (
        hpa(STABLE + "scale up stabilization, reuse one of obsolete recommendation element"),
        [(6000, 10), (60, 6), (120, 5), (180, 9)],
        1,
        100,
        300,
        0,
        5,
    ),
]
STABILISATIONS += [
    (hpa(f"TestNormalizeDesiredReplicas/{name}", LEGACY), [], 1, 1, 0, 0, 1)
    for name in ("empty log", "stabilize", "no stabilize", "no stabilize - old recommendations", "stabilize - old recommendations")
]


@pytest.mark.parametrize("source, recommendations, current, desired, up_window, down_window, expected", table(STABILISATIONS))
def test_stabilisation_windows(source, recommendations, current, desired, up_window, down_window, expected):
    """The stabilised count; upstream's log layout (an obsolete slot reused in place) is not ported: we drop obsolete entries."""
    memory = HPAMemory()
    memory.recommendations = [(-age, replicas) for age, replicas in recommendations]
    params = HPAParams(scale_up_stabilization=float(up_window), scale_down_stabilization=float(down_window))
    assert memory.stabilise(params, 0.0, current, desired) == expected
    assert memory.recommendations[-1] == (0.0, desired)


# ---- storeScaleEvent / getReplicasChangePerPeriod -------------------------------------------------------------------
# (source, events before (age s, change), rules, change stored now, change within 60 s before, changes kept after)
STORE = "TestStoreScaleEvents/"
NO_BEHAVIOR = "an HPA without a behavior stores no scale events: the project always runs a behavior"
STORED = [
    (hpa(STORE + "empty entries with default behavior", NO_BEHAVIOR), [], None, 5, 0, []),
    (hpa(STORE + "empty entries with two-policy-behavior"), [], (10, 60, 100, 60, 0), 5, 0, [5]),
    (hpa(STORE + "one outdated entry to be kept untouched without behavior", NO_BEHAVIOR), [(61, 7)], None, 5, 0, [7]),
    (hpa(STORE + "one outdated entry to be replaced with behavior"), [(61, 7)], (10, 60, 100, 60, 0), 5, 0, [5]),
    (hpa(STORE + "one actual entry to be not touched with behavior"), [(58, 7)], (10, 60, 100, 60, 0), 5, 7, [7, 5]),
    (hpa(STORE + "two entries, one of them to be replaced"), [(61, 7), (59, 6)], (10, 60, 0, 0, 0), 5, 6, [5, 6]),
    (
        hpa(STORE + "replace one entry, use policies with different periods"),
        [(29, 8), (59, 6), (61, 7), (61, 9)],
        (10, 60, 100, 30, 0),
        5,
        14,
        [8, 6, 5],
    ),
    (hpa(STORE + "two entries, both actual"), [(58, 7), (59, 6)], (10, 120, 100, 30, 0), 5, 13, [7, 6, 5]),
]


@pytest.mark.parametrize("source, before, rules, change, within_60s, kept", table(STORED))
def test_store_scale_events(source, before, rules, change, within_60s, kept):
    """Events older than the longest period are forgotten (upstream marks one outdated and reuses its slot): the
    events that can still count are the same, in both directions."""
    params = behavior(rules, rules)
    for direction, after in (("up", 10 + change), ("down", 10 - change)):
        memory = HPAMemory()
        events = memory.up_events if direction == "up" else memory.down_events
        events.extend((-age, c) for age, c in before)
        assert HPAMemory.change(events, 0.0, 60) == within_60s
        memory.record(params, 0.0, 10, after)
        assert sorted(c for _, c in events) == sorted(kept)


# ---- whole syncs ------------------------------------------------------------------------------------------------------
# (source, min, max, ready loads, unready, deleting, target %, recommendation log, up rules, down rules, expected)
# The log: "initial" is the controller's own first sync (recordInitialRecommendation adds the current count);
# "empty" is upstream's harness setting an empty log first; a list is (age s, replicas).
SYNC_CUSTOM = "custom, object and external metrics: the project's HPA has one metric, the workers' cpu utilisation"
SEVERAL = "several metrics (and one failing or invalid): the project's HPA has one metric"
CONTAINER = "a per-container resource metric: a worker is one container"
SPEC = "spec replicas apart from the pods that exist (surge, pods not yet created): our count is the workers that exist"
SYNCS = [
    (hpa("TestScaleUp"), 2, 6, (0.3, 0.5, 0.7), 0, 0, 30, "initial", None, None, 5),
    (hpa("TestScaleUpUnreadyLessScale"), 2, 6, (0.5, 0.7), 1, 0, 30, "initial", None, None, 4),
    (hpa("TestScaleUpHotCpuLessScale"), 2, 6, (0.5, 0.7), 1, 0, 30, "initial", None, None, 4),
    (hpa("TestScaleUpUnreadyNoScale"), 2, 6, (0.4,), 2, 0, 30, "initial", None, None, 3),
    (hpa("TestScaleUpHotCpuNoScale"), 2, 6, (0.4,), 2, 0, 30, "initial", None, None, 3),
    (hpa("TestScaleUpIgnoresFailedPods"), 2, 6, (0.5, 0.7), 0, 0, 30, "initial", None, None, 4),
    (hpa("TestScaleUpIgnoresDeletionPods"), 2, 6, (0.5, 0.7), 0, 2, 30, "initial", None, None, 4),
    (hpa("TestScaleUpDeployment"), 2, 6, (0.3, 0.5, 0.7), 0, 0, 30, "initial", None, None, 5),
    (hpa("TestScaleUpReplicaSet"), 2, 6, (0.3, 0.5, 0.7), 0, 0, 30, "initial", None, None, 5),
    (hpa("TestScaleDown"), 2, 6, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 50, "empty", None, None, 3),
    (hpa("TestScaleDownWithScalingRules"), 2, 6, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 50, "empty", (0, 0, 100, 15, 30), None, 3),
    (hpa("TestScaleDownStabilizeInitialSize"), 2, 6, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 50, "initial", None, None, 5),
    (hpa("TestScaleDownIncludeUnreadyPods"), 2, 6, (0.1, 0.3, 0.5), 2, 0, 50, "empty", None, None, 2),
    (hpa("TestScaleDownIgnoreHotCpuPods"), 2, 6, (0.1, 0.3, 0.5), 2, 0, 50, "empty", None, None, 2),
    (hpa("TestScaleDownIgnoresFailedPods"), 2, 6, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 0, 50, "empty", None, None, 3),
    (hpa("TestScaleDownIgnoresDeletionPods"), 2, 6, (0.1, 0.3, 0.5, 0.25, 0.25), 0, 2, 50, "empty", None, None, 3),
    # requests 0.9 / 1.0 / 1.1 cpu: loads are usage / request per pod
    (hpa("TestTolerance"), 1, 5, (1.01 / 0.9, 1.03, 1.02 / 1.1), 0, 0, 100, "initial", None, None, 3),
    (hpa("TestMinReplicas"), 2, 5, (0.01 / 0.9, 0.095, 0.01 / 1.1), 0, 0, 90, "empty", None, None, 2),
    (hpa("TestMinReplicasDesiredZero"), 2, 5, (0.0, 0.0, 0.0), 0, 0, 90, "empty", None, None, 2),
    # no pod exists: the spec's count is pods on their way (pending workers); out of [min, max] before any metric
    (hpa("TestTooFewReplicas"), 3, 5, (), 2, 0, 90, "initial", None, None, 3),
    (hpa("TestTooManyReplicas"), 3, 5, (), 10, 0, 90, "initial", None, None, 5),
    (hpa("TestMaxReplicas"), 2, 5, (8.0 / 0.9, 9.5, 1.0 / 1.1), 0, 0, 90, "initial", None, None, 5),
    (hpa("TestSuperfluousMetrics"), 2, 6, (4.0, 9.5, 3.0, 7.0), 0, 0, 100, "initial", None, None, 6),
    (hpa("TestEventCreated"), 1, 5, (1.0,), 0, 0, 50, "initial", None, None, 2),
    (hpa("TestEventNotCreated"), 1, 5, (0.5, 0.5), 0, 0, 50, "initial", None, None, 2),
    (hpa("TestUpscaleCap"), 1, 100, (1.0, 2.0, 3.0), 0, 0, 10, "initial", (0, 0, 700, 60, 0), None, 24),
    (hpa("TestUpscaleCapGreaterThanMaxReplicas"), 1, 20, (1.0, 2.0, 3.0), 0, 0, 10, "initial", (0, 0, 700, 60, 0), None, 20),
    # spec 4, three pods at 50 % of 100m, target 100: 2 wanted, the log's 4 of a minute ago holds (the 4th pod: pending)
    (hpa("TestStabilizeDownscale"), 1, 5, (0.5, 0.5, 0.5), 1, 0, 100, [(600, 10), (60, 4)], None, None, 4),
    (hpa("TestScaleUpRCImmediately"), 2, 6, (0.0,), 0, 0, 50, "initial", None, None, 2),
    (hpa("TestScaleDownRCImmediately"), 2, 5, (), 6, 0, 50, "initial", None, None, 5),
    (hpa("TestEmptyMetrics"), 2, 6, (), 4, 0, 100, "initial", None, None, None),
    (
        hpa("TestZeroMinReplicasDesiredZero", "minReplicas 0 (the HPAScaleToZero alpha gate): min_replicas is at least 1"),
        1,
        5,
        (),
        0,
        0,
        90,
        "empty",
        None,
        None,
        0,
    ),
    (
        hpa("TestZeroReplicas", "'scaling disabled' at spec 0: zero workers (after crashes) come back to min, as a ReplicaSet's would"),
        3,
        5,
        (),
        0,
        0,
        90,
        "initial",
        None,
        None,
        0,
    ),
    (
        hpa("TestMissingMetrics", "a ready worker without a metric cannot be observed here; the rule is on the calculator table"),
        2,
        6,
        (),
        0,
        0,
        100,
        "empty",
        None,
        None,
        3,
    ),
    (hpa("TestMissingReports", SPEC), 1, 5, (), 0, 0, 50, "empty", None, None, 2),
    (hpa("TestMoreReplicasThanSpecNoScale", SPEC), 1, 8, (), 0, 0, 50, "initial", None, None, 4),
    (
        hpa("TestEmptyCPURequest", "a pod without a cpu request: every worker's request is its VM"),
        1,
        5,
        (),
        0,
        0,
        100,
        "initial",
        None,
        None,
        1,
    ),
    (
        hpa("TestComputedToleranceAlgImplementation", "pods with unequal cpu requests: utilisation is the mean of per-worker loads"),
        0,
        1000,
        (),
        0,
        0,
        56,
        "empty",
        None,
        None,
        9,
    ),
    (hpa("TestAvoidUnnecessaryUpdates", "status updates only, and spec 2 against 3 pods"), 2, 6, (), 0, 0, 30, "empty", None, None, 2),
    (hpa("TestScaleUpContainer", CONTAINER), 2, 6, (), 0, 0, 30, "initial", None, None, 5),
    (hpa("TestScaleDownContainerResource", CONTAINER), 2, 6, (), 0, 0, 50, "empty", None, None, 3),
]
SYNCS += [
    (hpa(name, SYNC_CUSTOM), 1, 1, (), 0, 0, 1, "initial", None, None, 0)
    for name in (
        "TestScaleUpCM",
        "TestScaleUpCMUnreadyAndHotCpuNoLessScale",
        "TestScaleUpCMUnreadyandCpuHot",
        "TestScaleUpHotCpuNoScaleWouldScaleDown",
        "TestScaleUpCMObject",
        "TestScaleUpFromZeroCMObject",
        "TestScaleUpFromZeroIgnoresToleranceCMObject",
        "TestScaleUpPerPodCMObject",
        "TestScaleUpCMExternal",
        "TestScaleDownCM",
        "TestScaleDownCMObject",
        "TestScaleDownToZeroCMObject",
        "TestScaleDownPerPodCMObject",
        "TestScaleDownCMExternal",
        "TestScaleDownToZeroCMExternal",
        "TestToleranceCM",
        "TestToleranceCMObject",
        "TestToleranceCMExternal",
        "TestTolerancePerPodCMObject",
        "TestNoBackoffUpscaleCM",
        "TestNoBackoffUpscaleCMNoBackoffCpu",
    )
]
SYNCS += [
    (hpa(name, SEVERAL), 1, 1, (), 0, 0, 1, "initial", None, None, 0)
    for name in (
        "TestScaleUpOneMetricInvalid",
        "TestScaleUpFromZeroOneMetricInvalid",
        "TestScaleUpBothMetricsEmpty",
        "TestScaleDownOneMetricInvalid",
        "TestScaleDownOneMetricEmpty",
        "TestScaleUpOneMetricEmpty",
        "TestNoScaleDownOneMetricInvalid",
        "TestNoScaleDownOneMetricEmpty",
    )
]


@pytest.mark.parametrize("source, low, high, loads, unready, deleting, target, log, up, down, expected", table(SYNCS))
def test_sync(source, low, high, loads, unready, deleting, target, log, up, down, expected):
    policy = HPAPolicy(behavior(up, down, min_replicas=low, max_replicas=high, target_utilization=target))
    if log != "initial":
        policy.memory._initialised = True  # upstream's harness: the log is set (empty or given) before the sync
        policy.memory.recommendations = [] if log == "empty" else [(-age, r) for age, r in log]
    verdict = policy.decide(hpa_observation(0.0, loads, unready=unready, draining=deleting))
    assert verdict.desired == expected
