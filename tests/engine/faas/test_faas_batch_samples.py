"""Samples taken in batches (every function per request, no utilisation rows) are the rows one sample at a time gives.

The batch path (engine/faas/batchsample.py) computes a stretch's samples from the request rows and a log of replica
states; the per-sample path reads the live replicas. Utilisation rows switch the batch path off, so the same run with
and without them must write the same ``function_samples`` rows, value for value, through cold starts, rejections at
the instance limit, idle expiry, a provisioned minimum, a changed sample interval, a node drained and chunked time.
"""

from __future__ import annotations

import numpy as np
import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.core.recorder import frame_digest
from engine.faas.batchsample import group_percentiles, lifetimes


def session(utilization: bool, chunks: tuple[float, ...]) -> Simulation:
    fns = {
        "fn1": function(function="a", scaler="per_request", concurrency=1, max_replicas=4, idle_timeout=30.0, rate=3.0),
        "fn2": function(function="b", scaler="per_request", concurrency=2, min_replicas=1, idle_timeout=120.0, rate=0.05),
    }
    sim = Simulation(scenario(fns, duration=2400.0, seed=4, faas={"record_utilization": utilization}))
    for t in chunks:
        sim.advance(t)
        if t == 700.0:
            sim.set_params({"run.sample_interval": 3.0, "fn1.max_replicas": 12})
        if t == 1500.0:
            sim.inject("node_drain")
    sim.run()
    return sim


@pytest.mark.parametrize("chunks", [(700.0, 1500.0), (123.4, 700.0, 701.0, 1500.0, 2000.0)])
def test_batch_samples_equal_one_at_a_time(chunks):
    batch, single = session(False, chunks), session(True, chunks)
    a, b = batch.frame("function_samples"), single.frame("function_samples")
    assert len(a) > 1000 and a.rejected.max() > 0 and a.cold_starts.sum() > 10
    assert (batch.frame("replica_lifecycle").cause == "expired").sum() > 5
    assert frame_digest(a) == frame_digest(b)
    assert batch.summary()["functions"] == single.summary()["functions"]


def test_group_percentiles_are_numpys_per_group():
    rng = np.random.default_rng(5)
    for trial in range(200):
        k, n = int(rng.integers(1, 40)), int(rng.integers(0, 150))
        groups = rng.integers(0, k, n)
        if trial % 3:
            groups = np.sort(groups)  # the batch's case: rows in sample order
        values = np.round(rng.exponential(2.0, n), int(rng.integers(0, 3)))  # ties too
        got = group_percentiles(values, groups, k)
        for j in range(k):
            mine = values[groups == j]
            want = np.percentile(mine, [50, 95, 99]) if len(mine) else np.full(3, np.nan)
            assert np.array_equal(np.array([g[j] for g in got]), want, equal_nan=True)


def test_lifetimes_are_pythons_sums_of_the_entry_in_force():
    rng = np.random.default_rng(6)
    times = np.cumsum(rng.exponential(5.0, 300))
    log = []
    for t in np.sort(rng.uniform(0.0, times[-1], 40)).tolist():
        placed = np.sort(rng.uniform(0.0, t, int(rng.integers(0, 5)))).tolist()
        log.append((t, 0, 0, 0, 0, float(rng.uniform(0.0, 1e4)), placed))
    log[0] = (0.0, *log[0][1:])
    at = np.searchsorted([e[0] for e in log], times, side="right") - 1
    want = [log[j][5] + sum([t - p for p in log[j][6]]) for j, t in zip(at.tolist(), times.tolist(), strict=True)]
    assert lifetimes(log, at, times).tolist() == want


def test_replicas_read_after_batches_stop_are_those_kept_all_along():
    """In batches the replicas keep no rows of their own; utilisation switched on mid-run reads them rebuilt from the
    request rows, and gives the rows of a run that kept them from the start."""

    def run(from_start: bool) -> Simulation:
        fn = function(function="a", scaler="per_request", concurrency=1, max_replicas=6, idle_timeout=40.0, rate=2.0)
        sim = Simulation(scenario({"fn1": fn}, duration=900.0, seed=7, faas={"record_utilization": from_start}))
        sim.advance(400.0)
        sim.inject("node_drain")
        sim.advance(500.0)
        if not from_start:
            sim.set_params({"faas.record_utilization": True})
        sim.run()
        return sim

    switched, kept = run(False), run(True)
    a, b = switched.frame("utilization"), kept.frame("utilization")
    a, b = a[a.time > 500.0].reset_index(drop=True), b[b.time > 500.0].reset_index(drop=True)
    assert len(a) > 100 and a.busy.sum() > 0
    assert frame_digest(a) == frame_digest(b)
    assert frame_digest(switched.frame("function_samples")) == frame_digest(kept.frame("function_samples"))


def test_owed_samples_read_any_time_are_the_rows_written_at_each_catch_up(monkeypatch):
    """Batch samples are owed until the table is read. Read after every chunk of time (written in small stretches), read
    once at the end (one stretch), read twice, and written at every catch-up (``OWED`` at 0): the same rows, and the
    same summary whether or not they were read before it."""
    import engine.faas.batchsample as batchsample

    chunks = (123.4, 700.0, 701.0, 1500.0, 2000.0)

    def run(read_each: bool, owed: int) -> tuple[Simulation, list]:
        monkeypatch.setattr(batchsample, "OWED", owed)
        fns = {
            "fn1": function(function="a", scaler="per_request", concurrency=1, max_replicas=4, idle_timeout=30.0, rate=3.0),
            "fn2": function(function="b", scaler="per_request", concurrency=2, min_replicas=1, idle_timeout=120.0, rate=0.05),
        }
        sim = Simulation(scenario(fns, duration=2400.0, seed=4, faas={"record_utilization": False}))
        seen, summaries = [], []
        for t in chunks:
            sim.advance(t)
            summaries.append(sim.summary())
            if read_each:
                seen.append(sim.count("function_samples"))
            if t == 700.0:
                sim.set_params({"run.sample_interval": 3.0})
            if t == 1500.0:
                sim.set_params({"fn1.rate": 0.1})  # fewer instances by the next summary than at their peak
        sim.run()
        return sim, summaries

    lazy, lazy_summaries = run(False, 1 << 20)
    assert lazy.platform._batch.owed_count > 500  # nothing written yet: the run never read the table
    assert lazy.recorder.raw("function_samples")["time"]  # raw() writes them
    lazy_again, _ = run(False, 1 << 20)
    each, each_summaries = run(True, 1 << 20)
    eager, eager_summaries = run(False, 0)
    assert eager.platform._batch.owed_count == 0
    first = lazy_again.frame("function_samples")
    assert len(first) > 1000 and first.replicas_running.max() > 1
    assert frame_digest(first) == frame_digest(lazy_again.frame("function_samples"))  # read twice
    for other in (lazy, each, eager):
        assert frame_digest(other.frame("function_samples")) == frame_digest(first)
    # replicas_max reads the owed samples without writing them: the most running any sample before the summary saw
    assert lazy_summaries == each_summaries == eager_summaries
    rows, peaks = eager.frame("function_samples"), 0
    for t, summary in zip(chunks, lazy_summaries, strict=True):
        for name, fn in summary["functions"].items():
            seen = rows[(rows.function == name) & (rows.time < t)].replicas_running.max()
            assert fn["replicas_max"] == max(seen, fn["replicas_now"])
            peaks += seen > fn["replicas_now"]
    assert peaks
    assert lazy.summary() == each.summary() == eager.summary()
    lazy_again.advance(2600.0)  # more run after a read: the rows go on as in one read at the end
    once, _ = run(False, 1 << 20)
    once.advance(2600.0)
    assert frame_digest(lazy_again.frame("function_samples")) == frame_digest(once.frame("function_samples"))
