"""The function platform's scale to zero under a keep-alive policy: fixed is today's idler, hybrid learns and pre-warms."""

from __future__ import annotations

import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.autoscaling.functions import FunctionObservation, IdleScaler
from engine.autoscaling.keepalive_idler import KeepAliveIdleScaler
from engine.faas.params import FunctionParams

EVERY_10_MIN = {"arrival": "constant", "rate": 1.0 / 600.0}  # one request each 600 s


def _run(keep_alive: str, duration: float = 4 * 3600.0, **sections) -> Simulation:
    spec = function(function="f", scaler="scale_to_zero", idle_timeout=300.0, keep_alive=keep_alive, keep_alive_range=60, **EVERY_10_MIN)
    sim = Simulation(scenario({"fn1": spec}, duration=duration, **sections))
    sim.run()
    return sim


def test_fixed_is_todays_idler_verdict_for_verdict() -> None:
    fn = FunctionParams(idle_timeout=120.0)
    wrapped, plain = KeepAliveIdleScaler(fn), IdleScaler(fn)
    for now, replicas, last, arrivals in [(30, 1, 10.0, 1), (60, 1, 50.0, 2), (200, 1, 50.0, 2), (230, 0, 50.0, 2), (260, 0, 255.0, 3)]:
        obs = FunctionObservation(now=now, pending=replicas, last_request=last, arrivals=arrivals)
        assert wrapped.decide(obs) == plain.decide(obs)


def test_idle_times_are_learnt_from_rounds() -> None:
    scaler = KeepAliveIdleScaler(FunctionParams(keep_alive="hybrid", keep_alive_range=60))
    scaler.decide(FunctionObservation(now=30.0, last_request=5.0, arrivals=1))
    scaler.decide(FunctionObservation(now=630.0, last_request=605.0, arrivals=2))  # one new request: its arrival exactly
    scaler.decide(FunctionObservation(now=1230.0, last_request=1220.0, arrivals=5))  # three: the first in (630, 1220], mid 925
    assert scaler.policy.bins[10] == 1 and scaler.policy.bins[int((925.0 - 605.0) / 60)] == 1 and scaler.policy.in_range == 2


def test_hybrid_prewarms_a_regular_function_and_cuts_cold_starts() -> None:
    fixed, hybrid = _run("fixed"), _run("hybrid")
    cold = {name: int(sim.summary()["cold_starts"]) for name, sim in (("fixed", fixed), ("hybrid", hybrid))}
    # fixed: zero 300 s after each request, so every request (one each 10 min) starts cold
    assert cold["fixed"] >= 20
    # hybrid: the fallback (the 60 min range) keeps it warm while it learns, then it pre-warms before each request
    assert cold["hybrid"] <= 2, cold
    rows = hybrid.frame("scale")
    reasons = rows[rows.policy == "scale_to_zero"].reason
    assert reasons.str.startswith("pre-warm").sum() >= 5 and reasons.str.startswith("unloaded until the pre-warm").sum() >= 5


def _first_prewarm(sim: Simulation) -> float:
    rows = sim.frame("scale")
    return float(rows[rows.reason.str.startswith("pre-warm")].time.min())


def test_the_scenarios_keepalive_hybrid_section_tunes_the_policy() -> None:
    default = _run("hybrid", duration=2.5 * 3600.0)
    assert "keepalive_hybrid" not in default.sections  # a section only when the scenario names it
    eager = _run("hybrid", duration=2.5 * 3600.0, keepalive_hybrid={"min_samples": 3})
    assert eager.sections["keepalive_hybrid"].min_samples == 3
    # 3 idle times learnt instead of 10: the first pre-warm comes 7 requests (70 min) earlier
    assert _first_prewarm(default) - _first_prewarm(eager) == pytest.approx(7 * 600.0, abs=60.0)
