"""A scaler round measures only what its scaler reads (``reads``): every table is the one a round measuring
everything gives, for every built-in scaler, and the declared measures are the ones each policy uses."""

from __future__ import annotations

import math

import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.autoscaling.functions import MEASURES
from engine.core.recorder import frame_digest
from engine.faas.observations import Observations

BURST = {"rate": 4.0, "burst_factor": 6.0, "burst_every": 300.0, "burst_duration": 60.0}
SCALERS = {
    "rps_threshold": {"target_rps": 10.0, "scale_factor": 10, "scale_interval": 10.0, "faas_sim_exact": False},
    "average_rps": {"target_average_rps": 3.0, "faas_sim_exact": False, "scale_interval": 20.0},
    "queue_per_replica": {"target_queue": 2.0, "scale_interval": 10.0, "faas_sim_exact": False},
    "hpa": {"cpu_millis": 1000, "target_utilization": 50},
    "hpa-requests": {"hpa_metric": "requests", "target_requests_per_replica": 2.0},
    "kpa": {"min_replicas": 1},
    "keda": {"target_keda_queue": 2.0, "min_replicas": 1},
    "queue_drain": {"drain_band_low": 0.5, "drain_band_high": 2.0},
    "scale_to_zero": {"idle_timeout": 60.0},
}


def _digests(kind: str) -> dict[str, str]:
    spec = function(function="f", scaler=kind.split("-")[0], max_replicas=20, **BURST, **SCALERS[kind])
    sim = Simulation(scenario({"fn1": spec}, duration=500.0))
    sim.run()
    return {name: frame_digest(df) for name, df in sim.frames().items()}


@pytest.mark.parametrize("kind", sorted(SCALERS))
def test_measuring_only_what_the_scaler_reads_moves_no_table(kind, monkeypatch):
    lean = _digests(kind)
    everything = Observations.observe
    monkeypatch.setattr(Observations, "observe", lambda self, rt, t, reads=MEASURES: everything(self, rt, t, MEASURES))
    assert _digests(kind) == lean


def test_each_policy_declares_the_measures_it_uses():
    seen: dict[str, tuple] = {}
    original = Observations.observe

    def spy(self, rt, t, reads=MEASURES):
        obs = original(self, rt, t, reads)
        seen[rt.spec.scaler + ("-requests" if rt.spec.hpa_metric == "requests" else "")] = (reads, obs.cpu, obs.rps, obs.ready)
        return obs

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Observations, "observe", spy)
        for kind in ("hpa", "hpa-requests", "kpa"):
            _digests(kind)
    reads, cpu, rps, ready = seen["hpa"]
    assert reads == {"cpu"} and len(cpu) == len(ready) and not any(math.isnan(c) for c in cpu) and rps == ()
    reads, cpu, rps, ready = seen["hpa-requests"]
    assert reads == {"rps"} and len(rps) == len(ready) and all(math.isnan(c) for c in cpu)
    reads, cpu, rps, ready = seen["kpa"]
    assert reads == frozenset() and ready and all(math.isnan(c) for c in cpu) and rps == ()
