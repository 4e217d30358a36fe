"""Kube mode's Kubernetes-version profiles (engine/scheduling/kube_profiles.py), on clusters built from API objects."""

from __future__ import annotations

import pytest
from kube_objects import make_node, make_pod

from engine.cluster.importers.kube import parse_kube_node
from engine.cluster.importers.kube_snapshot import parse_kube_pod
from engine.core.params import ParamError
from engine.kube.options import describe, scheduler_params
from engine.kube.state import ClusterState
from engine.scheduling.kube_profiles import KUBE_PROFILES, mode_label

GiB = 2**30


def decide(nodes, pod, *settings):
    state = ClusterState(scheduler_params("kube", use_default=True, settings=settings))
    state.set_nodes([parse_kube_node("test", f"n{i}", n, arch_required=False) for i, n in enumerate(nodes)])
    record = parse_kube_pod("test", "pod", pod)
    state.set_pods([record])
    return state.decide(record)


def scores(decision) -> dict[str, dict[str, float]]:
    names = [decision.node_names[int(i)] for i in decision.nodes]
    return {p.name: dict(zip(names, (p.score * p.weight).tolist(), strict=True)) for p in decision.priorities if p.weight}


def test_v120_balanced_allocation_is_the_old_formula_and_zero_when_full():
    nodes = [make_node("a", cpu="4", memory="4Gi"), make_node("b", cpu="4", memory="16Gi"), make_node("c", cpu="2", memory="8Gi")]
    d = decide(nodes, make_pod("p", cpu="2", memory="1Gi"), "kube_version=v1.20")
    s = scores(d)["BalancedAllocation"]
    # a: cpu 2/4, mem 1/4 -> int((1 - 0.25) * 100); b: 0.5 vs 1/16 -> int(56.25); c: cpu 2/2 = 1 -> 0
    assert s == {"a": 75, "b": 56, "c": 0}
    current = scores(decide(nodes, make_pod("p", cpu="2", memory="1Gi")))[
        "BalancedResource"
    ]  # the seed pair: BalancedAllocation in kube mode
    # current (kubernetes PR #135573): the change in balance; empty nodes are balanced before (100), so
    # a: 50 + (50 + 87 - 100) // 2 = 68 (87: capped fractions, |f1 - f2| / 2); b: after 78 -> 64; c: full cpu is not 0, after 56 -> 53
    assert current == {"a": 68, "b": 64, "c": 53}


def test_v120_has_the_default_plugins_and_weights_of_kube_scheduler_1_20():
    d = decide([make_node("a"), make_node("b")], make_pod("p"), "kube_version=v1.20")
    assert [(p.name, p.weight) for p in d.priorities] == [
        ("BalancedAllocation", 1.0),
        ("ImageLocality", 1.0),
        ("LeastAllocated", 1.0),
        ("TaintToleration", 1.0),
    ]
    assert dict(KUBE_PROFILES["v1.20"].constant)["NodePreferAvoidPods"] == 10000
    # the weight parameters do not apply under the profile
    same = decide([make_node("a"), make_node("b")], make_pod("p"), "kube_version=v1.20", "weight_least_allocated=7")
    assert [p.weight for p in same.priorities] == [1.0] * 4
    assert "kube_version v1.20, weights BalancedAllocation 1, ImageLocality 1, LeastAllocated 1, TaintToleration 1" in describe(
        scheduler_params("kube", settings=["kube_version=v1.20"])
    )


def test_prefer_no_schedule_taints_score_and_tolerations_cancel_them():
    nodes = [
        make_node("a", taints=[("spot", "true", "PreferNoSchedule")]),
        make_node("b"),
        make_node("c", taints=[("spot", "true", "PreferNoSchedule"), ("old", "", "PreferNoSchedule")]),
    ]
    s = scores(decide(nodes, make_pod("p"), "kube_version=v1.20"))["TaintToleration"]
    assert s == {"a": 50, "b": 100, "c": 0}  # 1 and 2 intolerable of at most 2, reversed
    tolerant = make_pod("p", tolerations=[{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert scores(decide(nodes, tolerant, "kube_version=v1.20"))["TaintToleration"] == {"a": 100, "b": 100, "c": 0}
    assert decide(nodes, make_pod("p"), "kube_version=v1.20").node_name == "b"


def test_the_profile_is_a_bounded_parameter_and_recorded_as_the_mode():
    with pytest.raises(ParamError, match="kube_version"):
        scheduler_params("kube", settings=["kube_version=v1.99"])
    assert mode_label("kube", "v1.20") == "kube-v1.20"
    assert mode_label("kube", "current") == "kube" and mode_label("skippy", "v1.20") == "skippy"


def test_a_node_without_an_architecture_is_scheduled_on():
    bare = make_node("bare", cpu="8", memory="16Gi")
    for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
        bare["metadata"]["labels"].pop(key)
    bare["status"]["nodeInfo"].pop("architecture")
    assert decide([make_node("small", cpu="1", memory="2Gi"), bare], make_pod("p", cpu="2")).node_name == "bare"
