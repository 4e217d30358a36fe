"""Samples taken in batches (every function per request, no utilisation rows) are the rows one sample at a time gives.

The batch path (engine/faas/batchsample.py) computes a stretch's samples from the request rows and a log of replica
states; the per-sample path reads the live replicas. Utilisation rows switch the batch path off, so the same run with
and without them must write the same ``function_samples`` rows, value for value, through cold starts, rejections at
the instance limit, idle expiry, a provisioned minimum, a changed sample interval, a node drained and chunked time.
"""

from __future__ import annotations

import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.core.recorder import frame_digest


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
