"""The compiled job loop (engine/vmworld/_jobloop.pyx) gives exactly the tables of the pure-Python one.

Each case runs twice, ``SCALELAB_JOBLOOP=python`` and ``=compiled``, advanced in chunks with reads and faults between
them, with every job recorded; every table and the summary must be equal. In CI (``CI=true``) the compiled loop must be
built (``make setup`` builds it): a missing build fails loudly there instead of silently measuring the slow path.
"""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest

from engine.sim.scenario import Scenario, load_scenario
from engine.sim.simulation import Simulation
from engine.vmworld.jobs import JOBLOOP_ENV, JobFlow, compiled_loop

needs_compiled = pytest.mark.skipif(
    compiled_loop() is None and os.environ.get("CI") != "true", reason="the compiled job loop is not built (make setup builds it)"
)


def _scenario(name: str, duration: float, changes: dict[str, object]) -> Scenario:
    values = load_scenario(name).to_dict()
    values["run"] = {**values.get("run", {}), "duration": duration, "record_jobs": True}
    for key, value in changes.items():
        section, field = key.split(".")
        values[section] = {**values.get(section, {}), field: value}
    return Scenario.from_dict(values)


def _flow(sim: Simulation) -> JobFlow:
    return sim.platform.jobs


def _run(loop: str, scenario: Scenario, seed: int, chunk: float | None, faults: dict[float, str], monkeypatch) -> Simulation:
    """The scenario under one loop: in ``chunk`` s steps reading the summary and the newest rows of every table between
    them (or in one advance), injecting ``faults`` ({time: kind}) at their times."""
    monkeypatch.setenv(JOBLOOP_ENV, loop)
    sim = Simulation(scenario, seed=seed)
    assert _flow(sim).compiled is (loop == "compiled")
    end = sim.sections["run"].duration
    stops = sorted({*faults, *([k * chunk for k in range(1, int(end / chunk) + 1)] if chunk else []), end})
    for t in stops:
        sim.advance(min(t, end))
        if chunk:
            sim.summary()
            for name in sim.tables:
                sim.frame(name, start=max(0, sim.recorder.count(name) - 3))
        if t in faults:
            sim.inject(faults[t])
    return sim


def _plain(summary: dict) -> dict:
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in summary.items()}


CASES = {
    "default": ("default", 900.0, 1, {}, None, {}),
    "default-loss-chunked": (
        "default",
        900.0,
        2,
        {"platform.heartbeat_loss": 0.2, "platform.heartbeat_interval": 3.7},
        7.3,
        {200.0: "worker_crash", 430.5: "master_crash", 610.0: "heartbeat_outage"},
    ),
    "diurnal": ("diurnal", 1200.0, 3, {"faults.worker_crash_rate": 2.0}, 61.0, {}),
    "edge-slow-workers": ("edge", 1200.0, 2, {}, 13.7, {300.0: "worker_crash"}),
    "master-crash": ("master-crash", 900.0, 3, {"platform.heartbeat_loss": 0.1}, 5.0, {}),
    "busy": ("default", 400.0, 4, {"workload.rate": 200.0, "workload.service_time": 2.0, "autoscaler.MAX_WORKERS": 200}, 9.1, {}),
}


@needs_compiled
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_loop_gives_the_tables_of_the_python_loop(case, monkeypatch):
    name, duration, seed, changes, chunk, faults = CASES[case]
    scenario = _scenario(name, duration, changes)
    python = _run("python", scenario, seed, chunk, faults, monkeypatch)
    compiled = _run("compiled", scenario, seed, chunk, faults, monkeypatch)
    assert python.tables == compiled.tables
    assert len(python.jobs_frame()) > 0
    for table in python.tables:
        pd.testing.assert_frame_equal(python.frame(table), compiled.frame(table), obj=table, check_exact=True)
    assert _plain(python.summary()) == _plain(compiled.summary())


def test_compiled_loop_is_built_in_ci():
    """CI builds it from a clean clone (make test runs make setup): if it is missing there, say so."""
    if os.environ.get("CI") != "true":
        pytest.skip("only checked in CI (CI=true)")
    assert compiled_loop() is not None, "engine/vmworld/_jobloop.pyx is not built (or stale): make setup must build it"


def test_the_switch_forces_the_python_loop(monkeypatch):
    monkeypatch.setenv(JOBLOOP_ENV, "python")
    sim = Simulation(_scenario("default", 60.0, {}), seed=1)
    assert not _flow(sim).compiled
    monkeypatch.setenv(JOBLOOP_ENV, "nonsense")
    with pytest.raises(ValueError, match=JOBLOOP_ENV):
        Simulation(_scenario("default", 60.0, {}), seed=1)
