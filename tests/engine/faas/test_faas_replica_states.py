"""What the request flow keeps instead of recounting: replica counts per state, execution times made into floats a
chunk at a time, and the placements table's row count read through a counter."""

from __future__ import annotations

from collections import Counter

import numpy as np
from support_faas import function, scenario

from engine import Simulation
from engine.core.recorder import Recorder, table
from engine.faas.flow import RequestFlow
from engine.faas.runtime import BATCH, STATES, Replica


def recount(rt) -> dict[str, int]:
    seen = Counter(r.state for r in rt.replicas.values())
    return {s: seen.get(s, 0) for s in STATES if s != "removed"}


def test_counts_per_state_follow_every_lifecycle_change(monkeypatch):
    """Per request and scaled functions, a pending replica (a cluster too small for the demand), a drained node, a
    scale to zero and back, kube mode: after every lifecycle row, the counts kept are a recount of the replicas."""
    checked = Counter()
    life_row = RequestFlow._life_row

    def checking(self, t, r, state, cause, log=True):
        life_row(self, t, r, state, cause, log)
        for rt in self.functions:
            kept = {s: n for s, n in rt.count.items() if s != "removed"}
            assert kept == recount(rt), (t, r.id, state, cause)
        checked[state] += 1

    monkeypatch.setattr(RequestFlow, "_life_row", checking)
    fns = {
        "fn1": function(function="a", scaler="per_request", concurrency=1, max_replicas=30, idle_timeout=20.0, rate=4.0),
        "fn2": function(function="b", scaler="scale_to_zero", idle_timeout=60.0, rate=2.0, steps=[[0, 1], [200, 0], [400, 1]]),
        "fn3": function(function="c", scaler="average_rps", min_replicas=2, max_replicas=40, cpu_millis=3000, rate=30.0),
    }
    sim = Simulation(scenario(fns, duration=900.0, seed=3, cluster={"topology": "cloud_regions", "nodes": 4, "regions": 1}))
    sim.advance(300.0)
    sim.inject("node_drain")
    sim.advance(500.0)
    sim.set_params({"scheduler.mode": "kube"})
    sim.run()
    assert {"pending", "starting", "running", "draining", "removed"} <= set(checked)
    for rt in sim.platform.flow.functions:
        pending, starting, running, draining, placed = rt.states()
        want = recount(rt)
        assert (pending, starting, running, draining) == (
            want["conceived"] + want["pending"],
            want["starting"],
            want["running"],
            want["draining"],
        )
        assert placed == [r.placed_at for r in rt.replicas.values() if r.placed_at is not None]


def test_execution_times_are_the_batches_drawn_in_chunks():
    """A replica's execution times are its simulator's batches of BATCH, in order, the very floats ``tolist()`` gives."""
    sim = Simulation(scenario({"fn1": function(function="a", simulator="measured", images=["faas-workloads/resnet-inference-cpu"])}))
    rt = sim.platform.flow.functions[0]
    r = Replica(0, rt, rt.spec.images[0], 0.0, np.random.default_rng([5, 0]))
    r.device = "nuc"
    seen = []
    for _ in range(3 * BATCH + 7):
        if r.ei >= r.en:
            r.refill()
            assert r.en == BATCH
        seen.append(r.eb[r.ei])
        r.ei += 1
    rng = np.random.default_rng([5, 0])
    want = np.concatenate([rt.sim.execution("nuc", rt.spec.images[0], BATCH, rng) for _ in range(4)])
    assert seen == want[: len(seen)].tolist()
    assert all(type(x) is float for x in seen)


def test_a_counter_counts_as_count_does():
    rec = Recorder([table("t", "rows", [("x", "int64", "a value")])])
    count = rec.counter("t")
    add = rec.appender("t")
    assert count() == rec.count("t") == 0
    for i in range(5):
        add((i,))
        assert count() == rec.count("t") == i + 1
    rec.extend("t", {"x": np.arange(3)})
    assert count() == rec.count("t") == 8
