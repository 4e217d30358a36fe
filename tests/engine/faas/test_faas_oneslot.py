"""The compiled one-slot loop (engine/faas/_oneslot.pyx) gives exactly the tables of the pure-Python one.

Each case runs twice, ``SCALELAB_FAAS_LOOP=python`` and ``=compiled``, advanced in chunks with reads, parameter changes
and a node drain between them: cold starts, rejections at the instance limit, idle expiry, samples in batches (the
replicas keep no request rows) and one at a time (utilisation rows: they keep them). Every table and the summary must
be equal. In CI (``CI=true``) the compiled loop must be built (``make setup`` builds it).
"""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.core.compiled import compiled_module
from engine.faas.dispatch import FAAS_LOOP_ENV, FAAS_LOOP_MODULE
from engine.sim.scenario import load_scenario

needs_compiled = pytest.mark.skipif(
    compiled_module(FAAS_LOOP_MODULE) is None and os.environ.get("CI") != "true",
    reason="the compiled one-slot loop is not built (make setup builds it)",
)


def _instances(utilization: bool, simulator: str) -> object:
    fns = {
        "fn1": function(
            function="a", scaler="per_request", concurrency=1, max_replicas=4, idle_timeout=30.0, rate=3.0, simulator=simulator
        ),
        "fn2": function(function="b", scaler="per_request", concurrency=1, min_replicas=1, idle_timeout=120.0, rate=0.05),
    }
    return scenario(fns, duration=1800.0, seed=4, faas={"record_utilization": utilization})


CASES = {
    # scenario, chunks, {time: parameter changes}, {time: fault}
    "batch-samples": (lambda: _instances(False, "fixed"), (300.0, 301.5, 900.0), {300.0: {"fn1.max_replicas": 9}}, {900.0: "node_drain"}),
    "kept-rows": (lambda: _instances(True, "measured"), (123.4, 700.0), {700.0: {"run.sample_interval": 3.0}}, {}),
    "kept-from-mid-run": (lambda: _instances(False, "measured"), (450.0, 1000.0), {450.0: {"faas.record_utilization": True}}, {}),
    "azure": (lambda: load_scenario("faas-azure"), (250.0, 600.0), {}, {}),
}


def _run(loop: str, case: str, monkeypatch) -> Simulation:
    build, chunks, changes, faults = CASES[case]
    monkeypatch.setenv(FAAS_LOOP_ENV, loop)
    sim = Simulation(build())
    assert sim.platform.flow.compiled is (loop == "compiled")
    for t in chunks:
        sim.advance(t)
        sim.summary()
        for name in sim.tables:
            sim.frame(name, start=max(0, sim.recorder.count(name) - 3))
        if t in changes:
            sim.set_params(changes[t])
        if t in faults:
            sim.inject(faults[t])
    sim.run()
    return sim


def _plain(summary: dict) -> dict:
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else (_plain(v) if isinstance(v, dict) else v) for k, v in summary.items()}


@needs_compiled
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_loop_gives_the_tables_of_the_python_loop(case, monkeypatch):
    python = _run("python", case, monkeypatch)
    compiled = _run("compiled", case, monkeypatch)
    assert python.tables == compiled.tables
    invocations = python.frame("invocations")
    assert len(invocations) > 100 and invocations.cold_start.sum() > 2
    for table in python.tables:
        pd.testing.assert_frame_equal(python.frame(table), compiled.frame(table), obj=table, check_exact=True)
    assert _plain(python.summary()) == _plain(compiled.summary())


def test_the_limit_case_rejects_and_expires():
    """The first case reaches what the loop must get right: rejections at the instance limit and idle expiry."""
    sim = _run("python", "batch-samples", pytest.MonkeyPatch())
    invocations = sim.frame("invocations")
    assert (invocations.reason == "concurrency_limit").sum() > 0
    assert (sim.frame("replica_lifecycle").cause == "expired").sum() > 0


def test_compiled_loop_is_built_in_ci():
    if os.environ.get("CI") != "true":
        pytest.skip("only checked in CI (CI=true)")
    assert compiled_module(FAAS_LOOP_MODULE) is not None, "engine/faas/_oneslot.pyx is not built (or stale): make setup must build it"


def test_the_switch_forces_the_python_loop(monkeypatch):
    monkeypatch.setenv(FAAS_LOOP_ENV, "python")
    assert not Simulation(_instances(False, "fixed")).platform.flow.compiled
    monkeypatch.setenv(FAAS_LOOP_ENV, "nonsense")
    with pytest.raises(ValueError, match=FAAS_LOOP_ENV):
        Simulation(_instances(False, "fixed"))
