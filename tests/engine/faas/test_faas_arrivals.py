"""Plain Poisson arrivals drawn as gaps: the rate's count, a rate change in effect from its time, chunking-proof."""

from __future__ import annotations

from support_faas import function, scenario

from engine import Simulation


def session(chunks: tuple[float, ...]) -> Simulation:
    sim = Simulation(scenario({"fn1": function(function="f", rate=0.5, max_replicas=50)}, duration=400.0, seed=3))
    for t in chunks:
        sim.advance(t)
        if t == 203.0:
            sim.set_params({"fn1.rate": 40.0})
    sim.run()
    return sim


def test_rate_change_applies_from_its_time_and_chunks_do_not_matter():
    whole, chunked = session((203.0,)), session((57.3, 203.0, 204.5, 333.3))
    a = whole.frame("invocations")
    assert a.equals(chunked.frame("invocations"))
    arrivals = a.arrival
    assert 60 <= (arrivals < 203.0).sum() <= 150  # 0.5/s for 203 s: ~101
    assert 150 <= ((arrivals >= 203.0) & (arrivals < 210.0)).sum() <= 420  # 40/s from 203 s on, not from 210 s: ~280
    assert 7000 <= (arrivals >= 203.0).sum() <= 8800  # ~7,880
