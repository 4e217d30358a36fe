"""The fused Skippy step (engine/scheduling/skippy_step.py) against the general path it stands in for.

Two schedulers on identical clusters: one with the default configuration (which takes the fused step) and one handed
the same default predicates explicitly (which makes it take the general path, predicate by predicate and priority by
priority). Every decision -- node, score, feasible count, images to pull, next scan start, the scored nodes' totals
and each priority's raw values and scores, the breakdown rows -- must be the same, on random clusters and pods
(hypothesis), with pods removed, nodes cordoned and pods the Kubernetes predicates act on along the way. The fused
step runs both ways, as the numpy step (``SCALELAB_SKIPPY_STEP=python``) and as its compiled twin
(engine/scheduling/_skippy_step.pyx, ``=compiled``); in CI (``CI=true``) the compiled twin must be built.
"""

from __future__ import annotations

import os
from collections import Counter
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cluster.model import ARCH, GPU_MODEL, REGION, Container, MiB, Pod
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import cloud_regions
from engine.core.compiled import compiled_module
from engine.scheduling import Scheduler, SchedulerParams
from engine.scheduling.base import skippy_min_max
from engine.scheduling.image_locality import latency_scores, pod_seconds
from engine.scheduling.predicates import default_predicates
from engine.scheduling.shape_columns import SMALL
from engine.scheduling.skippy_step import KEPT_MODULE, STEP_ENV, STEP_MODULE, SkippyStep

BUILT = compiled_module(STEP_MODULE) is not None and compiled_module(KEPT_MODULE) is not None
#: the fused step's two ways; the compiled one is skipped where it is not built, except in CI (where it must be)
STEPS = ["python", pytest.param("compiled", marks=pytest.mark.skipif(not BUILT and os.environ.get("CI") != "true", reason="not built"))]


@contextmanager
def step_way(way: str):
    """``SCALELAB_SKIPPY_STEP`` set to ``way`` while schedulers are made (a step reads it once, when it is made)."""
    before = os.environ.get(STEP_ENV)
    os.environ[STEP_ENV] = way
    try:
        yield
    finally:
        if before is None:
            del os.environ[STEP_ENV]
        else:
            os.environ[STEP_ENV] = before


def cluster_of(n: int, seed: int, storage: bool, edge: float, cached: float):
    rng = np.random.default_rng(seed)
    cluster = cloud_regions(n, max(1, min(10, n // 4)), rng, storage=storage, edge_fraction=edge)
    for row, s in enumerate(cluster.storage_nodes):
        cluster.storage.make_bucket(f"data-{row}", int(s))
        cluster.storage.put(f"data-{row}", "item", int(rng.integers(1, 1000)) * 2**20)
    for i in np.flatnonzero(rng.random(cluster.n) < cached):
        cluster.cache_image(cluster.registry.names[int(rng.integers(len(cluster.registry)))], int(i))
    return cluster


def same_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


def assert_same(fused, general) -> None:
    assert (fused.node_name, fused.feasible, fused.score, fused.needed_images, fused.start_index, fused.devices) == (
        general.node_name,
        general.feasible,
        general.score,
        general.needed_images,
        general.start_index,
        general.devices,
    )
    assert np.array_equal(fused.nodes, general.nodes) and np.array_equal(fused.total, general.total)
    assert [(p.name, p.weight) for p in fused.priorities] == [(p.name, p.weight) for p in general.priorities]
    for a, b in zip(fused.priorities, general.priorities, strict=True):
        assert np.array_equal(a.raw, b.raw) and np.array_equal(a.score, b.score), a.name
    assert [name for name, _ in fused.predicate_masks] == [name for name, _ in general.predicate_masks]
    for (_, a), (_, b) in zip(fused.predicate_masks, general.predicate_masks, strict=True):
        assert np.array_equal(a, b)
    rows, expected = fused.breakdown_columns(), general.breakdown_columns()
    assert rows.keys() == expected.keys()
    assert all(same_arrays(rows[k], expected[k]) for k in rows), [k for k in rows if not same_arrays(rows[k], expected[k])]


def skippy_balance_now(cluster, pod) -> np.ndarray:
    """Skippy's BalancedResource at every node, computed whole from the free resources (0 free counted as 1)."""
    cpu = pod.cpu_millis / np.where(cluster.cpu_free == 0, 1, cluster.cpu_free).astype(float)
    memory = pod.memory / np.where(cluster.memory_free == 0, 1, cluster.memory_free).astype(float)
    score = np.trunc((1.0 - np.abs(cpu - memory)) * 10.0)
    return np.where(np.maximum(cpu, memory) >= 1, 0.0, score)


def run_pair(n: int, seed: int, storage: bool, edge: float, cached: float, avoid: bool, pods: int, way: str = "python") -> tuple[int, int]:
    """Schedule the same pods with both paths, the fused step run ``way``; returns how many decisions the fused step
    made and how many of them its compiled twin made."""
    fused_cluster, general_cluster = (cluster_of(n, seed, storage, edge, cached) for _ in range(2))
    params = SchedulerParams(avoid_storage_nodes=avoid)
    with step_way(way):
        fused = Scheduler(fused_cluster, params)
        general = Scheduler(general_cluster, params, predicates=default_predicates(avoid))
        assert fused.skippy_step() is not None and general.skippy_step() is None
    step = fused.skippy_step()
    assert (step.kernel is not None) == (way == "compiled")
    taken = compiled = 0
    decide = step.decide

    def counted(*args):
        nonlocal taken
        result = decide(*args)
        taken += result is not None
        return result

    step.decide = counted
    if step.kernel is not None:
        kernel_step = step._compiled

        def counted_kernel(*args):
            nonlocal compiled
            result = kernel_step(*args)
            compiled += result is not None
            return result

        step._compiled = counted_kernel
        step.kernel = CountedKernel(step.kernel)
        step.kept = CountedKernel(step.kept, step.kernel.calls)
    rng = np.random.default_rng(seed + 1)
    placed = []
    for k, pod in enumerate(mixed_pods(fused_cluster, pods, rng)):
        if k % 11 == 10:  # a pod the Kubernetes predicates act on: the general path, in both
            pod = Pod(pod.name, pod.containers, pod.labels, node_selector={REGION: "region-0"})
        elif k % 13 == 12:
            pod = Pod(pod.name, pod.containers, pod.labels, gpus=1, gpu_models=("T4",))
        elif k % 17 == 16:
            pod = Pod(pod.name, pod.containers, pod.labels, gpus=0.5)  # a GPU share: the fused step's fit checks devices
        balance = skippy_balance_now(fused_cluster, pod)  # from scratch, before the bind: the kept columns must agree
        a, b = fused.schedule(pod), general.schedule(pod)
        assert_same(a, b)
        if a.node is not None:
            assert np.array_equal(a.priorities[0].raw, balance[a.nodes])
        assert fused.start_index == general.start_index
        if a.node is not None:
            placed.append((pod, a.node, a.devices))
        if k % 5 == 4 and placed:  # unbind an earlier pod from both
            pod_, node, devices = placed.pop(int(rng.integers(len(placed))))
            fused_cluster.remove(pod_, node, devices)
            general_cluster.remove(pod_, node, devices)
        if k % 23 == 22:  # cordon a node, or lift a cordon
            node = int(rng.integers(n))
            value = not fused_cluster.schedulable[node]
            fused_cluster.schedulable[node] = general_cluster.schedulable[node] = value
    if n >= SMALL and step.kernel is not None:  # kept columns: the compiled filter, then the sum and the first best
        calls = step.kernel.calls
        assert calls["decide"] == 0 and calls["shape_column"] > 0, calls
        assert calls["first_best"] > 0.9 * calls["feasible_nodes"], calls  # None only for a NaN total (numpy picks)
        compiled = calls["feasible_nodes"]
    return taken, compiled


class CountedKernel:
    """The compiled module with its calls counted by name (``calls``: how many returned something other than None)."""

    def __init__(self, kernel, calls: Counter | None = None):
        self.kernel, self.calls = kernel, Counter() if calls is None else calls

    def __getattr__(self, name):
        function = getattr(self.kernel, name)

        def counted(*args):
            result = function(*args)
            self.calls[name] += result is not None or name == "shape_column"
            return result

        return counted


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 160),
    seed=st.integers(0, 2**16),
    storage=st.booleans(),
    edge=st.sampled_from([0.0, 0.3, 1.0]),
    cached=st.sampled_from([0.0, 0.1, 0.6]),
    avoid=st.booleans(),
)
def test_fused_step_decides_as_the_general_path(n, seed, storage, edge, cached, avoid):
    taken, _ = run_pair(n, seed, storage, edge, cached, avoid, pods=60)
    assert taken > 30


@pytest.mark.skipif(not BUILT and os.environ.get("CI") != "true", reason="the compiled Skippy step is not built (make setup builds it)")
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 160),
    seed=st.integers(0, 2**16),
    storage=st.booleans(),
    edge=st.sampled_from([0.0, 0.3, 1.0]),
    cached=st.sampled_from([0.0, 0.1, 0.6]),
    avoid=st.booleans(),
)
def test_compiled_step_decides_as_the_general_path(n, seed, storage, edge, cached, avoid):
    """The compiled twin against the general path (the numpy step is checked against it above): every decision of the
    fused step on these small clusters is the compiled one's."""
    taken, compiled = run_pair(n, seed, storage, edge, cached, avoid, pods=60, way="compiled")
    assert taken > 30 and compiled == taken


@pytest.mark.parametrize("way", STEPS)
@pytest.mark.parametrize("n", [1000, 5000])
def test_fused_step_on_large_clusters_with_kept_columns(n, way):
    """5,000 nodes: the per-shape columns of the fit and BalancedResource are kept and patched between pods (the
    compiled twin makes a new shape's columns in one pass, then filters, sums and picks over the kept columns)."""
    taken, compiled = run_pair(n, n, storage=True, edge=0.2, cached=0.05, avoid=True, pods=150, way=way)
    assert taken > 100
    if way == "compiled":
        assert compiled == taken


@pytest.mark.parametrize("way", STEPS)
def test_data_items_stored_after_the_scheduler_is_built(way):
    """The scheduler makes every stored item's columns when it is built (:meth:`SkippyStep.prepare`); items stored
    later, and an item stored again with another size, are made at their first use: the same decisions either way."""
    clusters = [cluster_of(300, 7, True, 0.2, 0.1) for _ in range(2)]
    params = SchedulerParams()
    with step_way(way):
        fused = Scheduler(clusters[0], params)
        general = Scheduler(clusters[1], params, predicates=default_predicates(True))
    for cluster in clusters:
        for row in range(len(cluster.storage_nodes)):
            cluster.storage.put(f"data-{row}", "late", (row + 3) * 2**20)
        cluster.storage.put("data-0", "item", 777 * 2**20)
    rng = np.random.default_rng(8)
    pods = mixed_pods(clusters[0], 80, rng)
    assert any("late" in value for pod in pods for value in pod.labels.values())
    for pod in pods:
        assert_same(fused.schedule(pod), general.schedule(pod))


@pytest.mark.parametrize("way", STEPS)
def test_kept_image_pair_rows_leave_held_decisions_as_they_were(way):
    """5,000 nodes: a pod of two images reads the row kept for that pair, patched where either image is pulled; a
    decision still held keeps the pull seconds of its moment (the patch writes a copy), and each is Skippy's."""
    cluster = cluster_of(5000, 11, True, 0.2, 0.0)
    with step_way(way):
        scheduler = Scheduler(cluster, SchedulerParams())
    names = cluster.registry.names
    held = []
    for k in range(24):
        images = (names[k % 2], names[2 + k % 3])
        pod = Pod(f"pair-{k}", tuple(Container(image, 250, 256 * MiB) for image in images), {})
        expected = pod_seconds(cluster, pod.images, slice(None), skippy=True)
        decision = scheduler.schedule(pod)
        held.append((decision, expected[decision.nodes]))
    assert sum(len(decision.needed_images) for decision, _ in held) >= 5  # pulls that patch the rows held decisions read
    for decision, expected in held:
        assert np.array_equal(decision.priorities[1].raw, expected)


def test_compiled_step_is_built_in_ci():
    """CI builds it from a clean clone (make test runs make setup): if it is missing there, say so."""
    if os.environ.get("CI") != "true":
        pytest.skip("only checked in CI (CI=true)")
    assert BUILT, "engine/scheduling/_skippy_step.pyx or _kept_step.pyx is not built (or stale): make setup must build them"


def test_the_step_way_is_chosen_by_the_environment():
    cluster = cluster_of(60, 3, True, 0.2, 0.1)
    with step_way("python"):
        assert Scheduler(cluster, SchedulerParams()).skippy_step().kernel is None
    with step_way("sideways"), pytest.raises(ValueError, match=STEP_ENV):
        Scheduler(cluster, SchedulerParams()).skippy_step()
    if BUILT:
        with step_way("compiled"):
            step = Scheduler(cluster, SchedulerParams()).skippy_step()
            assert step.kernel is not None and step.kept is not None


@pytest.mark.parametrize(
    "change",
    [
        {"weight_locality_type": 2.0},
        {"weight_image_locality": 0.5},
        {"weight_capability": 0.0},
        {"mode": "kube"},
        {"gpu_policy": "BestFit"},
        {"percentage_of_nodes_to_score": 50},
    ],
)
def test_any_other_configuration_takes_the_general_path(change):
    cluster = cluster_of(400, 1, True, 0.2, 0.1)
    assert Scheduler(cluster, SchedulerParams()).skippy_step() is not None
    assert Scheduler(cluster, SchedulerParams(**change)).skippy_step() is None
    assert Scheduler(cluster, SchedulerParams(), explain=True).skippy_step() is None
    scheduler = Scheduler(cluster, SchedulerParams())
    scheduler.params.weight_data_locality = 2.0  # a change of params after the first decision is seen
    assert scheduler.skippy_step() is None
    scheduler.params.weight_data_locality = 1.0
    assert isinstance(scheduler.skippy_step(), SkippyStep)


def test_gpu_model_pods_and_tainted_clusters_take_the_general_path():
    cluster = cluster_of(60, 2, True, 0.0, 0.0)
    step = Scheduler(cluster, SchedulerParams()).skippy_step()
    pod = mixed_pods(cluster, 1, np.random.default_rng(0))[0]
    assert step.decide(cluster, pod, 0) is not None
    assert step.decide(cluster, Pod(pod.name, pod.containers, gpus=1, gpu_models=(cluster.label_values[GPU_MODEL][0],)), 0) is None


@pytest.mark.skipif(not BUILT and os.environ.get("CI") != "true", reason="the compiled Skippy step is not built (make setup builds it)")
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), images=st.lists(st.integers(0, 5), min_size=1, max_size=8), cached=st.sampled_from([0.0, 0.3, 0.9]))
def test_compiled_pull_seconds_are_the_numpy_ones(seed, images, cached):
    """Pods of several images (their pull seconds are made per pod): the compiled ones against the numpy ones, with
    images lacking some nodes' arch (Skippy's first-arch fallback carried to the pod's later images) and an image of
    no arch at all."""
    cluster = cluster_of(40, seed, True, 0.3, cached)
    cluster.registry.add("scalelab/no-arch:1.0", {})
    names = [*cluster.registry.names]
    pod_images = tuple(names[i % len(names)] for i in images)
    step = compiled_module(STEP_MODULE)
    entries = [(cluster.image_cached[i], *cluster.image_size_table(i)) for i in map(cluster.image_index, pod_images)]
    got = step.pull_seconds(cluster.label_codes[ARCH], entries, cluster.registry_bandwidth, np.empty(cluster.n))
    assert np.array_equal(got, pod_seconds(cluster, pod_images, slice(None), skippy=True))


@pytest.mark.skipif(not BUILT and os.environ.get("CI") != "true", reason="the compiled Skippy step is not built (make setup builds it)")
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 70),
    kinds=st.integers(1, 6),
    nan=st.booleans(),
)
def test_compiled_kept_column_helpers_are_the_numpy_ones(seed, n, kinds, nan):
    """The compiled helpers of kept columns on large clusters against the numpy expressions they stand for, bit for bit
    (the sign of a zero included): an image tuple's pull seconds at listed nodes, a row's bounds over the passing
    nodes, a data pair's sum with its extreme nodes, min-max scores of seconds and of counts, pull-second scores over
    every node."""
    rng = np.random.default_rng(seed)
    kept, step = compiled_module(KEPT_MODULE), compiled_module(STEP_MODULE)
    cluster = cluster_of(max(n, 8), seed, True, 0.3, 0.3)
    pod_images = tuple(cluster.registry.names[int(i)] for i in rng.integers(len(cluster.registry), size=2))
    entries = [(cluster.image_cached[i], *cluster.image_size_table(i)) for i in map(cluster.image_index, pod_images)]
    nodes = rng.integers(cluster.n, size=5).tolist()
    row = np.full(cluster.n, -1.0)
    step.pull_seconds(cluster.label_codes[ARCH], entries, cluster.registry_bandwidth, row, nodes)
    expected = pod_seconds(cluster, pod_images, np.array(nodes), skippy=True)
    assert np.array_equal(row[nodes], expected) and np.count_nonzero(row == -1.0) == cluster.n - len(set(nodes))

    first, second = (np.trunc(rng.random(n) * kinds) * rng.choice([1.0, -1.0, 0.5]) for _ in range(2))
    if nan:
        first[int(rng.integers(n))] = np.nan
    passes = rng.random(n) < 0.7
    passes[int(rng.integers(n))] = True
    bounds = kept.row_bounds(first, passes)
    assert bounds is None if np.isnan(first[passes]).any() else bounds == (first[passes].min(), first[passes].max())
    summed = np.empty(n)
    found = kept.static_extremes(first, 4, second, summed)
    total = sum([first, second])
    assert np.array_equal(summed, total, equal_nan=True) and np.array_equal(np.signbit(summed), np.signbit(total))
    if np.isnan(total).any():
        assert found is None
    else:
        assert found == (np.flatnonzero(total == total.min())[:4].tolist(), np.flatnonzero(total == total.max())[:4].tolist())
        lo, hi = total.min(), total.max()
        for inverse in (True, False):
            if lo != hi:
                got, want = kept.min_max_scores(total, lo, hi, inverse, np.empty(n)), skippy_min_max(total, inverse, (lo, hi))
                assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
        counts = rng.integers(-1, kinds + 1, size=n)  # a capability set's counts (int64)
        if counts.min() != counts.max():
            for inverse in (True, False):
                got = kept.min_max_scores(counts, counts.min(), counts.max(), inverse, np.empty(n))
                want = skippy_min_max(counts, inverse, (counts.min(), counts.max()))
                assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
        seconds = np.abs(total)
        if seconds.max() > 0:
            got, want = (
                kept.latency_at(seconds, seconds.min(), seconds.max(), None, np.empty(n)),
                latency_scores(seconds, seconds.min(), seconds.max()),
            )
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.skipif(not BUILT, reason="not built")
def test_the_compiled_pass_writes_balanced_resource_at_every_node_when_asked():
    """``whole``: BalancedResource at every node, the failing ones too (a new shape's kept column), else 0 there."""
    cluster = cluster_of(300, 5, True, 0.2, 0.1)
    cluster.schedulable[::7] = False
    kernel = compiled_module(STEP_MODULE)
    pod = Pod("big", (Container("x", 3000, 3000 * MiB),))
    n = cluster.n
    for whole in (True, False):
        fits, passes, balance = np.empty(n, bool), np.empty(n, bool), np.full(n, np.nan)
        image = np.zeros(n)
        args = (cluster.cpu_free, cluster.memory_free, cluster.schedulable, None, None, pod.cpu_millis, pod.memory, image)
        kernel.decide(*args, None, None, None, 0, fits, passes, balance, whole)
        expected = skippy_balance_now(cluster, pod)
        assert 0 < passes.sum() < n
        assert np.array_equal(balance, expected if whole else np.where(passes, expected, 0.0))
