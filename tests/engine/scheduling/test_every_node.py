"""Scoring every feasible node in cluster order (Skippy mode at 100 %) against the scan-order path it replaces.

The scan path is what Skippy mode takes when only part of the nodes may be scored; with a 99 % sample on a cluster
where fewer nodes than that can take pods (one storage node per 80 nodes), it still scores every feasible node, so
both must give the same decisions, breakdowns and scan starts. 5,000 nodes also exercise the columns kept per pod
shape (:mod:`engine.scheduling.shape_columns`).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from engine.cluster.model import STORAGE
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import cloud_regions
from engine.scheduling import Scheduler, SchedulerParams, feasible_nodes_to_find
from engine.scheduling.base import ScoringContext
from engine.scheduling.image_locality import LatencyAwareImageLocality
from engine.scheduling.predicates import _fits
from engine.scheduling.priorities import PRIORITY_TABLE, all_priorities
from engine.scheduling.scan_order import first_best_from, last_in_scan
from engine.scheduling.service import frozen_decision
from engine.scheduling.shape_columns import EVERY_NODE, ShapeColumns


def cluster_and_pods(n: int, seed: int):
    rng = np.random.default_rng(seed)
    cluster = cloud_regions(n, max(10, n // 80), rng, storage=True, edge_fraction=0.2)
    for row, s in enumerate(cluster.storage_nodes):
        cluster.storage.make_bucket(f"data-{row}", int(s))
        cluster.storage.put(f"data-{row}", "item", int(rng.integers(1, 1000)) * 2**20)
    return cluster, mixed_pods(cluster, 150, rng)


@pytest.mark.parametrize("n", [300, 5000])
def test_every_node_scoring_decides_as_the_scan_does(n):
    weights = {"weight_locality_type": 2.5, "weight_image_locality": 0.7}
    (c1, pods), (c2, _) = cluster_and_pods(n, n), cluster_and_pods(n, n)
    whole = Scheduler(c1, SchedulerParams(**weights))
    scan = Scheduler(c2, SchedulerParams(percentage_of_nodes_to_score=99, **weights))
    sample = feasible_nodes_to_find(c1.n, 99, "skippy")
    rng = np.random.default_rng(n)
    placed = []
    for step, pod in enumerate(pods):
        a, b = whole.schedule(pod), scan.schedule(pod)
        assert a.feasible <= sample  # so the scan scored every feasible node as well
        assert (a.node_name, a.feasible, a.score, a.needed_images) == (b.node_name, b.feasible, b.score, b.needed_images)
        assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.total, b.total)
        for pa, pb in zip(a.priorities, b.priorities, strict=True):
            assert (pa.name, pa.weight) == (pb.name, pb.weight)
            assert np.array_equal(pa.raw, pb.raw) and np.array_equal(pa.score, pb.score), pa.name
        assert whole.start_index == scan.start_index
        if a.node is not None:
            placed.append((pod, a.node))
        if step % 5 == 4 and placed:
            pod_, node = placed.pop(int(rng.integers(len(placed))))
            c1.remove(pod_, node)
            c2.remove(pod_, node)
    assert len(placed) > 50


def test_kept_columns_follow_every_change_and_never_change_what_they_handed_out():
    cluster, pods = cluster_and_pods(5000, 3)
    columns = ShapeColumns(_fits, keep=4)
    rng = np.random.default_rng(3)
    handed = []
    placed = []
    for _ in range(300):
        pod = pods[int(rng.integers(len(pods)))]
        key = (pod.cpu_millis, pod.memory)
        column = columns.column(cluster, key)
        assert np.array_equal(column, _fits(cluster, key, EVERY_NODE))
        if rng.random() < 0.5:  # held: later updates write copies; dropped: the next update writes into it
            handed.append((column, column.copy()))
        del column
        if rng.random() < 0.3 and placed:
            cluster.remove(*placed.pop(int(rng.integers(len(placed)))))
        else:
            fits = np.flatnonzero(_fits(cluster, key, EVERY_NODE) & ~cluster.has_label(STORAGE))
            for node in rng.choice(fits, size=int(rng.integers(1, 40)), replace=False).tolist():
                cluster.place(pod, node)
                placed.append((pod, node))
    assert all(np.array_equal(column, before) for column, before in handed)


def test_winner_is_the_first_best_passing_node_of_the_walk():
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(1, 40))
        total = rng.integers(0, 4, n).astype(float)  # small integers: many ties
        passes = rng.random(n) < rng.random()
        if not passes.any():
            continue
        start = int(rng.integers(n))
        walk = [i for i in [*range(start, n), *range(start)] if passes[i]]
        best = max(total[i] for i in walk)
        before = total.copy()
        assert first_best_from(total, passes, start) == next(i for i in walk if total[i] == best)
        assert np.array_equal(total, before)  # failing maxima hidden while looking are put back
        assert last_in_scan(passes, start) == walk[-1]


def test_kept_pull_seconds_and_their_bounds_follow_every_pull():
    cluster, pods = cluster_and_pods(300, 11)
    priority = LatencyAwareImageLocality()
    rng = np.random.default_rng(11)
    handed = []  # (raw, scores, their copies) of some pods: what was handed out never changes while held
    for pod in pods:
        scored = rng.random(cluster.n) < rng.choice([0.02, 0.5, 1.0])
        if not scored.any():
            continue
        every = ScoringContext(cluster, pod, EVERY_NODE, "skippy", scored)
        gathered = ScoringContext(cluster, pod, np.flatnonzero(scored), "skippy")
        raw, expected = priority.raw(every), priority.raw(gathered)
        assert np.array_equal(raw[scored], expected)
        score = priority.normalize(every, raw)
        assert np.array_equal(score[scored], priority.normalize(gathered, expected))
        if rng.random() < 0.5:  # dropped ones are brought up to date in place
            handed.append((raw, score, raw.copy(), score.copy()))
        del raw, score
        for image in pod.images:
            cluster.cache_image(image, int(rng.integers(cluster.n)))
    assert all(np.array_equal(raw, a) and np.array_equal(score, b) for raw, score, a, b in handed)


def test_change_log_and_free_divisors_follow_binds():
    cluster, pods = cluster_and_pods(300, 2)
    mark = cluster.changes.mark
    cluster.place(pods[0], 4)
    cluster.place(pods[1], 7)
    assert cluster.changes.since(mark) == [4, 7]
    for step in range(8 * cluster.n + 2048):  # old entries are dropped: a reader that old recomputes whole
        cluster.remove(pods[0], 4) if step % 2 else cluster.place(pods[0], 4)
        if step % 97 == 0:
            cpu, memory = cluster.free_divisors()
            assert np.array_equal(cpu, np.where(cluster.cpu_free == 0, 1, cluster.cpu_free))
            assert np.array_equal(memory, np.where(cluster.memory_free == 0, 1, cluster.memory_free))
    assert cluster.changes.since(mark) is None


def test_explained_zero_weight_priorities_scored_later_give_the_breakdowns_of_their_moment():
    """Explain mode defers the zero-weight priorities that declare what they read (ImageLocality, BalancedAllocation,
    LeastAllocated): their scores, computed when a breakdown is read after many more binds and removals, are those the
    scan path computed at the decision, and the decisions are the same."""
    weights = SchedulerParams(weight_locality_type=2.5)
    (c1, pods), (c2, _) = cluster_and_pods(300, 7), cluster_and_pods(300, 7)
    builtins = [p for p in all_priorities() if p.key in PRIORITY_TABLE.builtins]
    whole = Scheduler(c1, weights, explain=True, priorities=builtins)
    eager = [copy.copy(p) for p in builtins]
    for p in eager:
        p.reads = None  # scored at the decision, by the scan
    scan = Scheduler(c2, weights, explain=True, priorities=eager)
    kept, now = [], []
    rng = np.random.default_rng(7)
    placed = []
    for step, pod in enumerate(pods):
        a, b = whole.schedule(pod), scan.schedule(pod)
        assert type(a.scores).__name__ == "EveryNodeScores" and type(b.scores).__name__ == "ScanScores"
        assert (a.node_name, a.feasible, a.score) == (b.node_name, b.feasible, b.score)
        kept.append(frozen_decision(a))
        now.append(b.breakdown_columns())
        if a.node is not None:
            placed.append((pod, a.node))
        if step % 3 == 2 and placed:
            pod_, node = placed.pop(int(rng.integers(len(placed))))
            c1.remove(pod_, node)
            c2.remove(pod_, node)
    names = {p.name for p in kept[0].priorities}
    assert {"ImageLocality", "BalancedAllocation", "LeastAllocated"} <= names
    for decision, expected in zip(kept, now, strict=True):
        got = decision.breakdown_columns()
        assert got.keys() == expected.keys()
        for column, values in expected.items():
            if values.dtype.kind == "f":
                assert np.array_equal(got[column], values, equal_nan=True), column
            else:
                assert got[column].tolist() == values.tolist(), column
