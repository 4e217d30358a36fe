"""The measured distributions are used: draws of one (device, image) pair follow the fitted truncated lognorm (KS test)
and stay inside the observed range, through the simulator and through a whole run; start-ups follow faas-sim's model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from support_faas import function, scenario

from engine import Simulation
from engine.faas.measured import STARTUP_HOST, load_measurements
from engine.faas.params import FaasParams, FunctionParams
from engine.faas.simulators import REFERENCE_PULL_BPS, MeasuredSimulator

PAIRS = [
    ("nuc", "faas-workloads/resnet-inference-cpu"),
    ("rpi4", "faas-workloads/speech-inference-tflite"),
    ("coral", "faas-workloads/mobilenet-inference-tpu"),
]


def truncated_cdf(d):
    base = stats.lognorm(d.shape, loc=d.loc, scale=d.scale)
    lo, hi = base.cdf(d.lo), base.cdf(d.hi)
    return lambda x: (np.clip(base.cdf(x), lo, hi) - lo) / (hi - lo)


@pytest.mark.parametrize("device, image", PAIRS)
def test_execution_draws_follow_the_fitted_distribution_within_the_observed_range(device, image):
    m = load_measurements()
    sim = MeasuredSimulator(FunctionParams(), FaasParams(), m)
    d = m.fet[(device, image)]
    x = sim.execution(device, image, 5000, np.random.default_rng(7))
    assert x.min() >= d.lo and x.max() <= d.hi
    result = stats.kstest(x, truncated_cdf(d))
    assert result.pvalue > 0.01, result
    # the untruncated fit is a different distribution where truncation matters (guards against a no-op test)
    if d.hi < stats.lognorm(d.shape, loc=d.loc, scale=d.scale).ppf(0.99):
        assert stats.kstest(x, stats.lognorm(d.shape, loc=d.loc, scale=d.scale).cdf).pvalue < 0.01


def test_a_run_on_one_device_type_executes_as_measured():
    spec = function(
        function="r", images=["faas-workloads/resnet-inference-cpu"], simulator="measured", concurrency=4, rate=3.0, cpu_millis=500
    )
    scen = scenario(
        {"fn1": spec},
        duration=1200.0,
        cluster={"topology": "faas_edge", "cells": 1, "devices_per_cell": 1, "cloudlets": 1, "cloud_nodes": 0},
    )
    sim = Simulation(scen)
    sim.run()
    inv = sim.frame("invocations")
    served = inv[inv.status == "completed"]
    nodes = sim.frame("nodes").set_index("node")
    devices = set(nodes.loc[served.node.unique(), "node_class"])
    assert len(served) > 500 and len(devices) == 1
    device = devices.pop()
    d = load_measurements().fet[(device, "faas-workloads/resnet-inference-cpu")]
    x = served.execution.to_numpy()  # faas_sim concurrency model: no slowdown; device speed: 1
    assert x.min() >= d.lo and x.max() <= d.hi
    assert stats.kstest(x, truncated_cdf(d)).pvalue > 0.01


def test_startup_follows_faas_sims_hacked_oracle_and_the_warm_alternative():
    m = load_measurements()
    fn = FunctionParams(startup_profile="alexrashed/ml-wf-3-serve")
    rng = np.random.default_rng(3)
    absent = m.startup[(STARTUP_HOST["xeoncpu"], "alexrashed/ml-wf-3-serve", False)]
    size = 88_000_000
    hacked = MeasuredSimulator(fn, FaasParams(startup_model="faas_sim"), m)
    got = np.array([hacked.startup("xeoncpu", "faas-workloads/python-pi", False, size, rng) for _ in range(400)])
    assert got.min() >= max(0.0, absent.lo - size / REFERENCE_PULL_BPS) - 1e-9 and got.max() <= absent.hi - size / REFERENCE_PULL_BPS + 1e-9
    present = m.startup[("cloud", "alexrashed/ml-wf-3-serve", True)]
    warm = MeasuredSimulator(fn, FaasParams(startup_model="pull_then_warm"), m)
    w = np.array([warm.startup("xeoncpu", "faas-workloads/python-pi", False, size, rng) for _ in range(400)])
    assert w.min() >= present.lo and w.max() <= present.hi
