"""The compiled twin of the ready replicas' loops (engine/faas/_ready.pyx) gives exactly what the Python reference does.

* the round-robin dispatch loop (:func:`engine.faas.ready_loop.round_robin_loop`): the same columns, replica state
  and return values on random arrivals, called in chunks;
* a function's request columns as arrays (:func:`engine.faas.runtime.tail_arrays`): the same bytes;
* a sample's response percentiles (:func:`engine.faas.utilrows.response_percentiles`): the same bits;
* a scaler round's counts (:func:`engine.faas.observations.replica_counts`);
* a replica's busy seconds and unfinished requests (:meth:`Replica.busy_seconds`, :meth:`Replica.unfinished`): the
  same bits on random request rows and windows, short and long (numpy's pairwise sum above 128 values);
* whole runs (edge-1000's shape, shortened; a functions scenario with a parameter change and a node drain) with
  ``SCALELAB_FAAS_LOOP=python`` and ``=compiled``: every table and the summary equal.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.core.compiled import compiled_module
from engine.faas.dispatch import FAAS_LOOP_ENV
from engine.faas.observations import replica_counts
from engine.faas.ready_loop import FAAS_READY_MODULE, round_robin_loop
from engine.faas.runtime import Replica, tail_arrays
from engine.faas.utilrows import response_percentiles

twin = compiled_module(FAAS_READY_MODULE)
needs_compiled = pytest.mark.skipif(
    twin is None and os.environ.get("CI") != "true", reason="the compiled ready loop is not built (make setup builds it)"
)


class _Spec:
    concurrency = 3


class _Sim:
    @staticmethod
    def execution(device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.lognormal(-1.0, 0.8, n)


class _Runtime:
    per_request = False
    spec = _Spec()
    sim = _Sim()


def _replicas(k: int) -> list[Replica]:
    out = []
    for i in range(k):
        r = Replica(i, _Runtime, "img", 0.0, np.random.default_rng([7, i]))  # type: ignore[arg-type]
        r.heap = [0.25 * i] * r.threads
        r.inv_speed = 1.0 + 0.1 * i
        r.transfer = 0.01 * i
        out.append(r)
    return out


def _state(reps: list[Replica]) -> list:
    return [(r.heap, r.starts, r.ends, r.max_exec, r.last_end, r.ei, r.en) for r in reps]


@needs_compiled
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_round_robin_twin_dispatches_as_the_reference(seed):
    rng = np.random.default_rng(seed)
    buf = np.cumsum(rng.exponential(0.02, 3000)).tolist()
    buf[100:103] = [buf[100]] * 3  # ties
    results = []
    for loop in (round_robin_loop, twin.round_robin_loop):
        reps, cols = _replicas(5), ([], [], [], [])
        bi, rr, returned = 0, 3, []
        for h in [*np.sort(rng.uniform(0.0, buf[-1], 40)).tolist(), buf[-1] + 1.0]:
            bi, rr, e = loop(buf, bi, h, reps, rr, *cols)
            returned.append((bi, rr, e))
        results.append((returned, cols, _state(reps)))
        rng = np.random.default_rng(seed)  # the same chunking for the twin
        rng.exponential(0.02, 3000)
    assert results[0] == results[1]
    assert results[0][0][-1][0] == len(buf)


def _rows(rng: np.random.Generator, n: int) -> Replica:
    r = _replicas(1)[0]
    starts = np.sort(rng.uniform(0.0, 100.0, n))
    execs = rng.lognormal(-1.0, 1.0, n)
    execs[::17] = 0.0  # zero-length requests
    r.starts, r.ends = starts.tolist(), (starts + execs).tolist()
    r.max_exec = float(execs.max()) if n else 0.0
    r.last_end = max(r.ends, default=0.0)
    return r


@needs_compiled
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100, 128, 129, 300, 1000, 5000, 20000])
def test_the_measure_twins_give_the_methods_bits(n):
    rng = np.random.default_rng(n)
    r = _rows(rng, n)
    windows = [(t - w, t) for t in rng.uniform(0.0, 110.0, 60).tolist() for w in (0.5, 5.0, 30.0, 200.0)]
    windows += [(r.starts[3], r.ends[3])] if n > 3 else []
    for t0, t1 in windows:
        assert math.copysign(1.0, twin.busy_seconds(r, t0, t1)) == math.copysign(1.0, r.busy_seconds(t0, t1))
        assert twin.busy_seconds(r, t0, t1) == r.busy_seconds(t0, t1)
        assert twin.unfinished(r, t1) == r.unfinished(t1)


@needs_compiled
def test_the_round_counts_twin_counts_as_the_methods():
    """A scaler round's counts (in service and queued per ready replica, queued on every live one) at times before,
    within and after the rows, ties at a start or an end included."""
    rng = np.random.default_rng(17)
    reps = [_rows(rng, n) for n in (0, 1, 8, 200, 3000)]
    times = [-1.0, 0.0, *rng.uniform(0.0, 110.0, 50).tolist(), reps[3].starts[5], reps[3].ends[7], 1e9]
    for t in times:
        assert twin.replica_counts(reps[1:], reps, t) == replica_counts(reps[1:], reps, t)
        assert twin.replica_counts([], iter(reps), t) == replica_counts([], iter(reps), t)


@needs_compiled
def test_the_pairwise_sum_is_numpys_for_long_windows():
    """Above 128 values the method sums with numpy: the twin's own pairwise sum gives the same bits."""
    rng = np.random.default_rng(5)
    for n in (129, 136, 255, 1000, 4096):
        r = _replicas(1)[0]
        r.starts = [0.0] * n
        r.ends = rng.lognormal(0.0, 3.0, n).tolist()
        r.max_exec, r.last_end = max(r.ends), max(r.ends)
        expected = float(np.sum(np.asarray(r.ends)))
        assert twin.busy_seconds(r, 0.0, 1e300) == expected == r.busy_seconds(0.0, 1e300)


@needs_compiled
@pytest.mark.parametrize("n", [0, 1, 2, 3, 50, 200, 256, 257, 258, 600, 5000])
def test_the_percentile_twin_gives_the_references_bits(n):
    """A sample's response p50/p95/p99 (the reference sorts in Python up to 256 rows, with numpy above): rejected rows
    (negative codes, NaN start and execution) left out, from every tail offset, ties included."""
    rng = np.random.default_rng(n + 11)
    rep = rng.integers(-3, 30, n).tolist()
    arr = np.cumsum(rng.exponential(0.02, n)).tolist()
    start = [a + w for a, w in zip(arr, rng.exponential(0.05, n).tolist(), strict=True)]
    exe = rng.lognormal(-1.0, 0.8, n).tolist()
    for i in range(0, n, 7):  # equal responses
        start[i], exe[i], arr[i] = 1.0, 0.5, 0.25
    for i in range(n):
        if rep[i] < 0:
            start[i] = exe[i] = math.nan
    for lo in sorted({0, 1, n // 3, n // 2, max(n - 2, 0), n, n + 1}):
        expected = response_percentiles(rep, arr, start, exe, lo)
        got = twin.response_percentiles(rep, arr, start, exe, lo)
        assert str(got) == str(expected) and type(got) is tuple and all(type(x) is float for x in got)


@needs_compiled
@pytest.mark.parametrize("n", [0, 1, 9, 4096])
def test_the_tail_arrays_twin_gives_numpys_arrays(n):
    """The request columns as arrays (every flush): the same dtypes and bytes as ``np.asarray`` (NaN, -0.0, an int in
    a float column, the int32 bounds), and a replica id beyond int32 fails as numpy's conversion does."""
    rng = np.random.default_rng(n)
    rep = rng.integers(-3, 2**31 - 1, n).tolist()
    arr, start, exe = (rng.normal(size=n).tolist() for _ in range(3))
    if n > 2:
        rep[:2] = [2**31 - 1, -(2**31)]
        arr[0], start[1], exe[2] = 5, math.nan, -0.0
    expected, got = tail_arrays(rep, arr, start, exe), twin.tail_arrays(rep, arr, start, exe)
    for x, y in zip(expected, got, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    if n:
        with pytest.raises(OverflowError):
            twin.tail_arrays([2**31] + rep[1:], arr, start, exe)


def _edge_like() -> object:
    fns = {
        "fn1": function(function="a", scaler="hpa", rate=20.0, min_replicas=2, max_replicas=8, simulator="measured"),
        "fn2": function(
            function="b", scaler="kpa", rate=15.0, simulator="measured", burst_factor=3.0, burst_every=200.0, burst_duration=40.0
        ),
        "fn3": function(function="c", scaler="keda", rate=5.0, concurrency=2, target_keda_queue=4.0),
    }
    return scenario(fns, duration=900.0, seed=3)


CASES = {
    "autoscaled": (_edge_like, (150.0, 400.0), {150.0: {"fn3.concurrency": 1}, 400.0: {"fn2.load_balancer": "least_outstanding"}}),
    "linear-then-back": (
        _edge_like,
        (200.0, 500.0),
        {200.0: {"faas.concurrency_model": "linear"}, 500.0: {"faas.concurrency_model": "faas_sim"}},
    ),
}


def _run(loop: str, case: str, monkeypatch) -> Simulation:
    build, chunks, changes = CASES[case]
    monkeypatch.setenv(FAAS_LOOP_ENV, loop)
    sim = Simulation(build())
    assert sim.platform.flow.compiled_ready is (loop == "compiled")
    for t in chunks:
        sim.advance(t)
        sim.summary()
        sim.frame("utilization")
        sim.set_params(changes[t])
        if t == chunks[-1]:
            sim.inject("node_drain")
    sim.run()
    return sim


@needs_compiled
@pytest.mark.parametrize("case", list(CASES))
def test_whole_runs_give_the_tables_of_the_python_loops(case, monkeypatch):
    python = _run("python", case, monkeypatch)
    compiled = _run("compiled", case, monkeypatch)
    assert python.tables == compiled.tables
    assert len(python.frame("invocations")) > 5000 and len(python.frame("utilization")) > 100
    for table in python.tables:
        pd.testing.assert_frame_equal(python.frame(table), compiled.frame(table), obj=table, check_exact=True)
    assert str(python.summary()) == str(compiled.summary())


def test_the_ready_twin_is_built_in_ci():
    if os.environ.get("CI") != "true":
        pytest.skip("only checked in CI (CI=true)")
    assert twin is not None, "engine/faas/_ready.pyx is not built (or stale): make setup must build it"
