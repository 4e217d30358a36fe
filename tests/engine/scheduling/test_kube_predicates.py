"""The Kubernetes predicates: taints and tolerations, nodeSelector and required node affinity, the pod limit.

Each follows kube-scheduler's rules; on a synthesized cluster (no taints, selectors or limits) each passes every
node, which is what keeps Skippy mode identical to edgerun-skippy-core.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.build import build_cluster
from engine.cluster.constraints import NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration, taint_groups, untolerated
from engine.cluster.model import ARCH, REGION, Cluster, Container, NodeSpec, Pod
from engine.cluster.params import ClusterParams
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import catalogue_registry
from engine.scheduling import Scheduler, SchedulerParams
from engine.scheduling.node_affinity import NodeAffinity
from engine.scheduling.predicates import PodCapacity, default_predicates
from engine.scheduling.taint_toleration import TaintToleration

GPU = Taint("nvidia.com/gpu", "present", "NoSchedule")
EVICT = Taint("node.kubernetes.io/unreachable", "", "NoExecute")
SOFT = Taint("spot", "true", "PreferNoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU, True),
        (Toleration("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), GPU, False),  # value differs
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), GPU, True),
        (Toleration("nvidia.com/gpu", "Exists"), GPU, True),  # empty effect: every effect
        (Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), GPU, False),  # effect differs
        (Toleration("other", "Exists"), GPU, False),  # key differs
        (Toleration("", "Exists"), GPU, True),  # empty key with Exists: everything
        (Toleration("", "Exists"), EVICT, True),
        (Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"), EVICT, True),
        (Toleration("node.kubernetes.io/unreachable", "Equal", "", "NoExecute"), EVICT, True),  # equal empty values
    ],
)
def test_toleration_matches_taints_as_kubernetes_does(toleration, taint, tolerated):
    assert toleration.tolerates(taint) is tolerated


def test_only_hard_taints_count_and_are_grouped():
    assert untolerated([GPU, SOFT, EVICT], [Toleration("nvidia.com/gpu", "Exists")]) == [EVICT]
    assert untolerated([SOFT], []) == []  # PreferNoSchedule only scores in Kubernetes
    groups = taint_groups([(), (GPU,), (SOFT,), (GPU,), (GPU, EVICT)])
    assert [(t, n.tolist()) for t, n in groups] == [((GPU,), [1, 3]), ((GPU, EVICT), [4])]


def cluster(taints: list[tuple[Taint, ...]] | None = None, labels: list[dict] | None = None, max_pods: list[int] | None = None) -> Cluster:
    n = len(taints or labels or max_pods or [])
    specs = [
        NodeSpec(
            f"node-{i}",
            4000,
            8 * 2**30,
            {ARCH: "amd64", **((labels or [{}] * n)[i])},
            taints=(taints or [()] * n)[i],
            max_pods=(max_pods or [0] * n)[i],
        )
        for i in range(n)
    ]
    return Cluster(specs, catalogue_registry())


def pod(**kwargs) -> Pod:
    return Pod("p", (Container("scalelab/worker:1.0", 500, 2**28),), **kwargs)


def test_taint_toleration_filters_hard_taints_only():
    c = cluster([(), (GPU,), (SOFT,), (EVICT,), (GPU, EVICT)])
    predicate = TaintToleration()
    assert predicate.mask(c, pod()).tolist() == [True, False, True, False, False]
    tolerant = pod(tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),))
    assert predicate.mask(c, tolerant).tolist() == [True, True, True, False, False]
    everything = pod(tolerations=(Toleration("", "Exists"),))
    assert predicate.mask(c, everything).tolist() == [True] * 5
    assert predicate.mask(cluster([(), (SOFT,)]), pod()) is None  # no hard taint anywhere: passes every node


def requirement(key, operator, *values, field=False):
    return NodeSelectorRequirement(key, operator, tuple(values), field=field)


LABELS = [
    {REGION: "eu", "disk": "ssd", "cores": "8"},
    {REGION: "us", "disk": "hdd", "cores": "16"},
    {REGION: "eu", "cores": "many"},
    {REGION: "ap"},
]


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        (requirement(REGION, "In", "eu", "ap"), [True, False, True, True]),
        (requirement("disk", "NotIn", "hdd"), [True, False, True, True]),  # NotIn also holds without the label
        (requirement("disk", "Exists"), [True, True, False, False]),
        (requirement("disk", "DoesNotExist"), [False, False, True, True]),
        (requirement("cores", "Gt", "10"), [False, True, False, False]),  # "many" is no integer: fails
        (requirement("cores", "Lt", "10"), [True, False, False, False]),
        (requirement("metadata.name", "In", "node-1", "node-3", field=True), [False, True, False, True]),
        (requirement("metadata.name", "NotIn", "node-1", field=True), [True, False, True, True]),
    ],
)
def test_node_affinity_operators(req, expected):
    p = pod(node_affinity=(NodeSelectorTerm((req,)),))
    assert NodeAffinity().mask(cluster(labels=LABELS), p).tolist() == expected


def test_node_selector_and_terms():
    c = cluster(labels=LABELS)
    predicate = NodeAffinity()
    assert predicate.mask(c, pod()) is None
    assert predicate.mask(c, pod(node_selector={REGION: "eu"})).tolist() == [True, False, True, False]
    assert predicate.mask(c, pod(node_selector={REGION: "eu", "disk": "ssd"})).tolist() == [True, False, False, False]
    assert predicate.mask(c, pod(node_selector={"gpu": "yes"})).tolist() == [False] * 4  # an unknown label matches nothing
    terms = (
        NodeSelectorTerm((requirement(REGION, "In", "us"),)),
        NodeSelectorTerm((requirement("disk", "DoesNotExist"), requirement(REGION, "In", "ap"))),
    )
    assert predicate.mask(c, pod(node_affinity=terms)).tolist() == [False, True, False, True]  # terms are ORed, requirements ANDed
    both = pod(node_selector={REGION: "us"}, node_affinity=terms)
    assert predicate.mask(c, both).tolist() == [False, True, False, False]  # nodeSelector and affinity must both hold
    assert predicate.mask(c, pod(node_affinity=(NodeSelectorTerm(()),))).tolist() == [False] * 4  # an empty term matches nothing


def test_pod_capacity_counts_pods_on_the_node():
    c = cluster(max_pods=[2, 0, 1])
    predicate = PodCapacity()
    assert predicate.mask(c, pod()).tolist() == [True, True, True]
    c.place(pod(), 0)
    c.place(pod(), 2)
    assert predicate.mask(c, pod()).tolist() == [True, True, False]
    c.place(pod(), 0)
    assert predicate.mask(c, pod()).tolist() == [False, True, False]
    assert predicate.mask(cluster(max_pods=[0, 0]), pod()) is None


def test_on_a_synthesized_cluster_the_kubernetes_predicates_pass_every_node():
    c = build_cluster(ClusterParams(topology="urban_sensing"), np.random.default_rng(1))
    kube = [p for p in default_predicates() if p.name in ("TaintToleration", "NodeAffinity", "PodCapacity")]
    assert len(kube) == 3
    for p in mixed_pods(c, 30, np.random.default_rng(2)):
        assert all(predicate.mask(c, p) is None for predicate in kube)


def test_the_scheduler_reports_the_first_failing_predicate():
    c = cluster([(), (GPU,), (EVICT,)])
    c.schedulable[2] = False
    sched = Scheduler(c, SchedulerParams())
    decision = sched.schedule(pod(node_selector={ARCH: "amd64"}))
    assert decision.node_name == "node-0"
    passes, reason = decision.reasons()
    assert passes.tolist() == [True, False, False]
    assert reason.tolist() == ["", "TaintToleration", "NodeUnschedulable"]  # kube-scheduler's filter order
    rows = decision.breakdown().drop_duplicates("node")
    assert rows["reason"].tolist() == ["", "TaintToleration", "NodeUnschedulable"]
    tolerant = pod(tolerations=(Toleration("", "Exists"),))
    assert Scheduler(c, SchedulerParams()).schedule(tolerant, bind=False).feasible == 2  # a cordon is not a taint to tolerate
