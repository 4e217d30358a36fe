"""Every table is complete at the end of every advance, whatever is or is not read (hypothesis).

A run cut into random chunks, with random reads between them (tables, slices of tables, the summary) and the
same inputs at the same times, must give the same tables and the same summary as the run advanced only to its
input times and read once at the end. Times are drawn on a half-second grid, so chunk ends fall on arrival
windows, samples and controller rounds as well as between them.
"""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.sim.scenario import Scenario, load_scenario
from engine.sim.simulation import Simulation

HORIZON = 600.0

#: Inputs a user can give the VM world between advances: parameter changes that act on the job queue and faults.
VM_INPUTS = st.one_of(
    st.tuples(st.just("params"), st.fixed_dictionaries({"workload.service_time": st.sampled_from([2.0, 5.0, 9.0])})),
    st.tuples(st.just("params"), st.fixed_dictionaries({"workload.service_cv": st.sampled_from([0.0, 0.5, 1.2])})),
    st.tuples(st.just("params"), st.fixed_dictionaries({"workload.rate": st.sampled_from([1.0, 4.0, 7.0])})),
    st.tuples(st.just("params"), st.fixed_dictionaries({"autoscaler.MAX_WORKERS": st.integers(1, 12)})),
    st.tuples(st.just("fault"), st.sampled_from(["worker_crash", "master_crash", "heartbeat_outage"])),
)

#: What may be read between two chunks: nothing, the summary, a whole table or a table from a row on.
READS = st.lists(
    st.one_of(st.just(("summary", 0)), st.tuples(st.sampled_from(["samples", "events", "decisions", "jobs", "*"]), st.integers(0, 50))),
    max_size=3,
)

grid = st.integers(1, int(HORIZON * 2) - 1).map(lambda k: k / 2.0)


def _scenario(name: str, changes: dict | None = None) -> Scenario:
    """A shipped scenario cut to HORIZON (the VM world recording its jobs), with ``{"section.name": value}`` changes."""
    values = load_scenario(name).to_dict()
    values["run"] = {**values.get("run", {}), "duration": HORIZON}
    if values["run"].get("world", "vm") == "vm":
        values["run"]["record_jobs"] = True
    for key, value in (changes or {}).items():
        section, field = key.split(".")
        values[section] = {**values.get(section, {}), field: value}
    return Scenario.from_dict(values)


#: The VM world's scenario knobs: long heartbeat, sample and decision intervals leave the queue untouched for long.
VM_SCENARIO = st.fixed_dictionaries(
    {
        "workload.pattern": st.sampled_from(["poisson", "constant", "diurnal"]),
        "platform.heartbeat_interval": st.sampled_from([2.0, 25.0]),
        "run.sample_interval": st.sampled_from([5.0, 60.0]),
        "autoscaler.DECISION_INTERVAL": st.sampled_from([10.0, 30.0]),
    }
)


def _read(sim: Simulation, reads: list[tuple[str, int]]) -> None:
    for what, start in reads:
        if what == "summary":
            sim.summary()
        elif what == "*":
            sim.frames()
        elif what in sim.tables:
            sim.frame(what, start=start)


def _apply(sim: Simulation, item) -> None:
    kind, payload = item
    if kind == "params":
        sim.set_params(payload)
    else:
        sim.inject(payload)


def _run(scenario: Scenario, seed: int, stops: dict[float, tuple[list, list]], until: float = HORIZON) -> Simulation:
    """Advance to every stop in order, reading then applying what it holds there, then to ``until``."""
    sim = Simulation(scenario, seed=seed)
    for t in sorted(stops):
        sim.advance(t)
        reads, inputs = stops[t]
        _read(sim, reads)
        for item in inputs:
            _apply(sim, item)
        _read(sim, reads)
    sim.advance(until)
    return sim


def _assert_same(a: Simulation, b: Simulation) -> None:
    assert a.tables == b.tables
    for name in a.tables:
        pd.testing.assert_frame_equal(a.frame(name), b.frame(name), obj=name)
    assert _plain(a.summary()) == _plain(b.summary())


def _plain(summary: dict) -> dict:
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in summary.items()}


def _assert_jobs_complete(sim: Simulation, later: Simulation) -> None:
    """The jobs table at the end of an advance holds every job that starts before its end, as a longer run has them."""
    if sim.jobs_frame() is None:
        return
    columns = ["job", "arrival", "start", "end", "worker"]
    jobs, more = sim.jobs_frame(), later.jobs_frame()
    pd.testing.assert_frame_equal(jobs[columns], more[more["start"] < sim.now][columns].reset_index(drop=True))


def _check(scenario: Scenario, seed: int, chunks: list[float], reads: list, inputs: dict[float, list]) -> None:
    plain = {t: ([], list(items)) for t, items in inputs.items()}
    chunked = {t: (reads[i % len(reads)], plain.get(t, ([], []))[1]) for i, t in enumerate(sorted({*chunks, *inputs}))}
    a, b = _run(scenario, seed, plain), _run(scenario, seed, chunked)
    _assert_same(a, b)
    _assert_jobs_complete(b, _run(scenario, seed, plain, until=HORIZON + 120.0))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=VM_SCENARIO,
    seed=st.integers(0, 2**16),
    chunks=st.lists(grid, min_size=1, max_size=25, unique=True),
    reads=st.lists(READS, min_size=25, max_size=25),
    inputs=st.dictionaries(grid, st.lists(VM_INPUTS, min_size=1, max_size=2), max_size=4),
)
def test_vm_world_tables_do_not_depend_on_chunks_or_reads(changes, seed, chunks, reads, inputs):
    _check(_scenario("default", changes), seed, chunks, reads, inputs)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["faas-basic", "faas-edge", "openb-fgd"]),
    chunks=st.lists(grid, min_size=1, max_size=15, unique=True),
    reads=st.lists(READS, min_size=15, max_size=15),
)
def test_other_worlds_tables_do_not_depend_on_chunks_or_reads(name, chunks, reads):
    _check(_scenario(name), 1, chunks, reads, {})


def test_jobs_table_complete_after_advance_without_any_read():
    """The case of issue 19: a service-time change right after a read of the summary, and right after none."""
    scenario = _scenario(
        "default", {"platform.heartbeat_interval": 25.0, "run.sample_interval": 60.0, "autoscaler.DECISION_INTERVAL": 30.0}
    )
    stops_read = {301.5: ([("summary", 0)], [("params", {"workload.service_time": 9.0})])}
    stops_none = {301.5: ([], [("params", {"workload.service_time": 9.0})])}
    _assert_same(_run(scenario, 3, stops_read), _run(scenario, 3, stops_none))
    # every job that started before 301.5 is in the table, without anything having caught the queue up
    sim = Simulation(scenario, seed=3).advance(301.5)
    assert len(sim.jobs_frame()) > 0
    _assert_jobs_complete(sim, Simulation(scenario, seed=3).advance(400.0))
