"""The node autoscaler's rules as tables: scan by scan on a real cluster and scheduler, without simpy."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.model import ARCH, Cluster, Container, ContainerRegistry, GiB, NodeSpec, Pod
from engine.nodescaling.autoscaler import NodeAutoscaler
from engine.nodescaling.groups import ABSENT, BOOTING, DRAINING, READY, Fleet, draw_boot, group_node_specs
from engine.nodescaling.params import NodeAutoscalerParams, NodeGroupParams
from engine.nodescaling.simulate import Constraints
from engine.scheduling import Scheduler, SchedulerParams

IMAGE = "img:1"
SMALL = {"group": "small", "cpu_millis": 2000, "memory_mib": 4096, "price_per_hour": 0.1, "priority": 1, "max_size": 10}
LARGE = {"group": "large", "cpu_millis": 8000, "memory_mib": 16384, "price_per_hour": 0.25, "priority": 5, "max_size": 10}
GPU = {"group": "gpu", "cpu_millis": 8000, "memory_mib": 32768, "gpus": 1, "price_per_hour": 1.0, "priority": 10, "max_size": 10}


def pod(name: str, cpu: int = 1500, memory_gib: float = 1.0) -> Pod:
    return Pod(name, (Container(IMAGE, cpu, int(memory_gib * GiB)),))


class World:
    """A base node, the groups' nodes, a scheduler, and the autoscaler over them."""

    def __init__(self, groups: list[dict], seed: int = 0, base_cpu: int = 1000, base_memory: int = 2 * GiB, **params):
        self.groups = [NodeGroupParams(**g) for g in groups]
        base = [NodeSpec("base-0", base_cpu, base_memory, {ARCH: "amd64"})]
        self.cluster = Cluster(base + group_node_specs(self.groups), ContainerRegistry({IMAGE: {"amd64": 0}}))
        self.fleet = Fleet(self.groups, self.cluster, 1, seed=1)
        self.fleet.start()
        self.scheduler = Scheduler(self.cluster, SchedulerParams(mode="kube"))
        self.params = NodeAutoscalerParams(**params)
        self.autoscaler = NodeAutoscaler(
            self.params, self.fleet, self.cluster, Constraints(self.cluster, self.scheduler.predicates()), np.random.default_rng(seed)
        )
        self.bound: dict[int, list[Pod]] = {}

    def node(self, name: str) -> int:
        return self.cluster.index[name]

    def bind(self, p: Pod, name: str) -> None:
        self.cluster.place(p, self.node(name))
        self.bound.setdefault(self.node(name), []).append(p)

    def scan(self, now: float, pending=()):
        return self.autoscaler.scan(now, list(pending), self.bound)

    def join_all(self, now: float) -> None:
        for node in np.flatnonzero(self.fleet.state == BOOTING).tolist():
            self.fleet.join(node, now)

    def sizes(self) -> dict[str, int]:
        return {g.group: self.fleet.size(i) for i, g in enumerate(self.groups)}


# -- scale-up --------------------------------------------------------------------------------------------

# three pending pods of 1.5 cpu / 1 GiB: small needs 3 nodes (least idle), large 1 (cheapest per pod), gpu 1 (top priority)
EXPANDER_CHOICES = [
    ("least-waste", "small", 3),
    ("price", "large", 1),
    ("priority", "gpu", 1),
]


@pytest.mark.parametrize(("expander", "group", "count"), EXPANDER_CHOICES)
def test_each_expander_picks_its_group_for_the_pending_pods(expander, group, count):
    w = World([SMALL, LARGE, GPU], expander=expander)
    decisions = w.scan(10.0, [pod(f"p{i}") for i in range(3)])
    assert [(d.rule, d.group, d.count) for d in decisions] == [("scale_up", group, count)]
    assert w.sizes()[group] == count and int(np.count_nonzero(w.fleet.state == BOOTING)) == count
    assert "3 pending pods" in decisions[0].why and f"expander {expander} chose {group}" in decisions[0].why


def test_random_and_most_pods_pick_among_ties_by_the_seed():
    picks = {}
    for seed in range(30):
        w = World([SMALL, LARGE, GPU], seed=seed, expander="random")
        picks[seed] = w.scan(10.0, [pod("p")])[0].group
        again = World([SMALL, LARGE, GPU], seed=seed, expander="random")
        assert again.scan(10.0, [pod("p")])[0].group == picks[seed]  # the same seed, the same choice
    assert set(picks.values()) == {"small", "large", "gpu"}
    tied = World([SMALL, LARGE, GPU], seed=3, expander="most-pods").scan(10.0, [pod("p")])[0]
    assert "3 tied" in tied.why


def test_a_pod_only_a_gpu_node_takes_grows_the_gpu_group_whatever_the_expander():
    gpu_pod = Pod("g", (Container(IMAGE, 1000, GiB),), gpus=1)
    for expander in ("least-waste", "price", "random"):
        w = World([SMALL, LARGE, GPU], expander=expander)
        assert [(d.group, d.count) for d in w.scan(10.0, [gpu_pod])] == [("gpu", 1)]


def test_nodes_already_booting_take_the_pending_pods_before_another_scale_up():
    w = World([SMALL], expander="least-waste")
    pending = [pod(f"p{i}") for i in range(3)]
    assert w.scan(10.0, pending)[0].count == 3
    assert w.scan(20.0, pending) == []  # the 3 booting nodes will take them
    assert [d.count for d in w.scan(30.0, [*pending, pod("p3")])] == [1]  # one more pod: one more node
    assert w.sizes() == {"small": 4}


# (max_size, pending pods) -> nodes launched over three scans; never above max_size
MAX_TABLE = [(2, 3, 2), (3, 3, 3), (0, 2, 0), (5, 12, 5)]


@pytest.mark.parametrize(("max_size", "pods", "launched"), MAX_TABLE)
def test_scale_up_never_goes_above_max_size(max_size, pods, launched):
    w = World([{**SMALL, "max_size": max_size}], expander="least-waste")
    pending = [pod(f"p{i}") for i in range(pods)]
    rules = []
    for t in (10.0, 20.0, 30.0):
        rules += [d.rule for d in w.scan(t, pending)]
        assert w.sizes()["small"] <= max_size
    assert w.sizes()["small"] == launched
    if launched < pods:
        assert "no_scale_up" in rules  # the pods that fit no group's new node are said so, once
        assert rules.count("no_scale_up") == 1


def test_max_nodes_total_caps_all_groups_together():
    w = World([SMALL, LARGE], expander="least-waste", max_nodes_total=2)
    w.scan(10.0, [pod(f"p{i}", cpu=3000) for i in range(5)])  # only large nodes take them: 3 needed, 2 allowed
    assert sum(w.sizes().values()) == 2


def test_boot_times_follow_the_stated_distribution_from_the_seeded_stream():
    g = NodeGroupParams(boot_distribution="lognormal", boot_seconds=100.0, boot_spread=0.3)
    draws = np.array([draw_boot(g, np.random.default_rng([7, i])) for i in range(4000)])
    assert abs(draws.mean() - 100.0) < 3.0 and draws.min() > 0
    fixed = NodeGroupParams(boot_distribution="fixed", boot_seconds=42.0)
    assert draw_boot(fixed, np.random.default_rng(1)) == 42.0
    uniform = [
        draw_boot(NodeGroupParams(boot_distribution="uniform", boot_seconds=60.0, boot_spread=10.0), np.random.default_rng(i))
        for i in range(200)
    ]
    assert 50.0 <= min(uniform) and max(uniform) <= 70.0


# -- scale-down ------------------------------------------------------------------------------------------

# scan times -> the scan at which the empty node goes (unneeded time 600 s, no delay after add)
UNNEEDED_TABLE = [((0.0, 300.0, 590.0, 600.0), 600.0), ((0.0, 599.0, 650.0), 650.0), ((100.0, 650.0, 700.0), 700.0), ((0.0, 590.0), None)]


@pytest.mark.parametrize(("scans", "removed_at"), UNNEEDED_TABLE)
def test_scale_down_only_after_the_unneeded_time(scans, removed_at):
    w = World([{**SMALL, "initial_size": 2, "min_size": 0}], delay_after_add=0.0, unneeded_time=600.0)
    w.bind(pod("keep", cpu=1800), "small-0")  # 90 % requested: needed
    removed = None
    for t in scans:
        for d in w.scan(t):
            assert d.rule == "scale_down_empty" and d.nodes == (1,) and removed is None
            removed = t
    assert removed == removed_at
    assert w.fleet.state[0] == READY  # the busy node stays
    assert w.fleet.state[1] == (DRAINING if removed_at is not None else READY)


# node requested share, threshold -> unneeded?
THRESHOLD_TABLE = [(0.25, 0.5, True), (0.5, 0.5, False), (0.75, 0.5, False), (0.75, 0.8, True)]


@pytest.mark.parametrize(("share", "threshold", "removed"), THRESHOLD_TABLE)
def test_the_utilization_threshold_decides_what_is_unneeded(share, threshold, removed):
    # the base node has room for a's pod
    w = World(
        [{**LARGE, "initial_size": 2}],
        delay_after_add=0.0,
        unneeded_time=0.0,
        utilization_threshold=threshold,
        base_cpu=8000,
        base_memory=8 * GiB,
    )
    w.bind(pod("a", cpu=int(8000 * share), memory_gib=1), "large-0")
    w.bind(pod("big", cpu=7000, memory_gib=15), "large-1")  # large-1 is needed; a's pod fits on large-1? no: 1000m left
    w.bind(pod("filler", cpu=0, memory_gib=0.01), "base-0")
    rules = [(d.rule, d.nodes) for d in w.scan(0.0)]
    assert (("scale_down", (0,)) in rules) == removed


def test_a_node_whose_pods_fit_nowhere_else_is_kept():
    w = World([{**SMALL, "initial_size": 2}], delay_after_add=0.0, unneeded_time=0.0, base_cpu=100)
    w.bind(pod("a", cpu=600), "small-0")  # 30 %: under the threshold, but...
    w.bind(pod("b", cpu=1500), "small-1")  # ...small-1 has 500m left and the base node 100m
    assert w.scan(0.0) == [] and w.scan(1000.0) == []
    assert np.isnan(w.fleet.unneeded_since[0])


# (min_size, initial_size) -> nodes left after many scans of empty nodes
MIN_TABLE = [(1, 3, 1), (2, 2, 2), (0, 3, 0), (3, 5, 3)]


@pytest.mark.parametrize(("min_size", "initial", "left"), MIN_TABLE)
def test_scale_down_never_goes_below_min_size(min_size, initial, left):
    w = World([{**SMALL, "min_size": min_size, "initial_size": initial}], delay_after_add=0.0, unneeded_time=0.0, max_empty_bulk_delete=1)
    for t in range(0, 100, 10):
        w.scan(float(t))
        assert w.sizes()["small"] >= min_size
        for node in np.flatnonzero(w.fleet.state == DRAINING).tolist():
            w.fleet.remove(node, float(t))
    assert w.sizes()["small"] == left and int(np.count_nonzero(w.fleet.state == ABSENT)) == SMALL["max_size"] - left


def test_no_scale_down_during_the_delay_after_a_scale_up():
    w = World([{**SMALL, "initial_size": 1}], delay_after_add=300.0, unneeded_time=0.0, expander="least-waste")
    w.scan(0.0, [pod("p")])  # scale-up at 0
    w.join_all(60.0)
    assert [d.rule for d in w.scan(100.0)] == []  # both empty, both unneeded, but within the delay
    assert not np.isnan(w.fleet.unneeded_since[0])  # unneeded is tracked meanwhile
    assert sorted(d.rule for d in w.scan(300.0)) == ["scale_down_empty", "scale_down_empty"]


def test_non_empty_nodes_are_drained_one_at_a_time():
    w = World([{**SMALL, "initial_size": 3}], delay_after_add=0.0, unneeded_time=0.0, max_drain_parallelism=1, base_cpu=8000)
    for name in ("small-0", "small-1", "small-2"):
        w.bind(pod(f"on-{name}", cpu=200), name)
    first = w.scan(0.0)
    assert [d.rule for d in first] == ["scale_down"]
    assert w.scan(10.0) == []  # the first drain still holds its pod
    w.cluster.remove(w.bound.pop(w.fleet.positions(first[0].nodes)[0])[0], int(w.fleet.positions(first[0].nodes)[0]))
    w.fleet.remove(first[0].nodes[0], 20.0)
    assert [d.rule for d in w.scan(30.0)] == ["scale_down"]


# -- consolidation ---------------------------------------------------------------------------------------


def test_consolidation_deletes_a_node_whose_pods_fit_elsewhere_after_consolidate_after():
    w = World([{**LARGE, "initial_size": 2}], mode="consolidation", consolidate_after=60.0)
    w.bind(pod("a", cpu=1000), "large-0")
    w.bind(pod("b", cpu=1000), "large-1")
    assert w.scan(30.0) == []  # the pods' arrival is seen at this scan...
    assert w.scan(60.0) == []  # ...so the nodes are quiet for 30 s only
    decisions = w.scan(90.0)
    assert [(d.rule, d.count) for d in decisions] == [("consolidate_delete", 1)]
    assert int(np.count_nonzero(w.fleet.state == DRAINING)) == 1


def test_consolidation_deletes_empty_nodes_and_replaces_an_expensive_one_with_a_cheaper_one():
    w = World([{**LARGE, "initial_size": 2}, SMALL], mode="consolidation", consolidate_after=0.0)
    w.bind(pod("a", cpu=1500), "large-0")  # fits a small node (0.1/h) instead of a large one (0.25/h)
    assert [d.rule for d in w.scan(0.0)] == ["consolidate_empty"]  # large-1 is empty
    w.fleet.remove(1, 0.0)
    replace = w.scan(10.0)
    assert [(d.rule, d.group) for d in replace] == [("consolidate_replace", "small")]
    assert w.fleet.state[0] == READY  # the old node waits for its replacement
    assert w.scan(20.0) == []
    w.join_all(30.0)
    drain = w.scan(40.0)
    assert [(d.rule, d.nodes) for d in drain] == [("consolidate_replace_drain", (0,))]


def test_consolidation_scales_up_with_the_cheapest_group():
    w = World([SMALL, LARGE, GPU], mode="consolidation", expander="priority")
    assert [d.group for d in w.scan(0.0, [pod(f"p{i}") for i in range(3)])] == ["large"]
