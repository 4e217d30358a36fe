"""The compiled one-slot loop (engine/faas/_oneslot.pyx) gives exactly the tables of the pure-Python one.

Each case runs twice, ``SCALELAB_FAAS_LOOP=python`` and ``=compiled``, advanced in chunks with reads, parameter changes
and a node drain between them: cold starts, rejections at the instance limit, idle expiry, samples in batches (the
replicas keep no request rows) and one at a time (utilisation rows: they keep them). Every table and the summary must
be equal. In CI (``CI=true``) the compiled loop must be built (``make setup`` builds it).
"""

from __future__ import annotations

import math
import os
from array import array

import numpy as np
import pandas as pd
import pytest
from support_faas import function, scenario

from engine import Simulation
from engine.core.compiled import compiled_module
from engine.faas import oneslot
from engine.faas.dispatch import FAAS_LOOP_ENV, FAAS_LOOP_MODULE
from engine.faas.flow import RequestFlow
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


def _alone() -> object:
    fns = {
        "fn1": function(
            function="a", scaler="per_request", concurrency=1, max_replicas=6, idle_timeout=60.0, rate=0.4, simulator="measured"
        )
    }
    return scenario(fns, duration=2400.0, seed=7)


CASES = {
    # scenario, chunks, {time: parameter changes}, {time: fault}
    "batch-samples": (lambda: _instances(False, "fixed"), (300.0, 301.5, 900.0), {300.0: {"fn1.max_replicas": 9}}, {900.0: "node_drain"}),
    "kept-rows": (lambda: _instances(True, "measured"), (123.4, 700.0), {700.0: {"run.sample_interval": 3.0}}, {}),
    "kept-from-mid-run": (lambda: _instances(False, "measured"), (450.0, 1000.0), {450.0: {"faas.record_utilization": True}}, {}),
    "azure": (lambda: load_scenario("faas-azure"), (250.0, 600.0), {}, {}),
    # one function alone: its loop pushes idle re-checks again itself (oneslot.recheck), across chunks and changes
    "alone": (
        _alone,
        (400.0, 400.5, 1100.0, 1500.0),
        {400.0: {"fn1.idle_timeout": 25.0}, 1100.0: {"fn1.max_replicas": 3, "run.sample_interval": 7.0}},
        {1500.0: "node_drain"},
    ),
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


@pytest.mark.parametrize("loop", ["python", "compiled"])
def test_a_function_alone_rechecks_idle_instances_in_its_loop_with_the_same_tables(loop, monkeypatch):
    """The loop's own re-checks and transitions (on when one function is deployed) give the tables of the catch-up's (off)."""
    if loop == "compiled" and compiled_module(FAAS_LOOP_MODULE) is None:
        pytest.skip("the compiled one-slot loop is not built")
    moved = []
    real = oneslot.recheck

    def counting(heap, h, rt, idle_timeout, seq):
        out = real(heap, h, rt, idle_timeout, seq)
        moved.append(out != seq)
        return out

    steps = []
    real_step = RequestFlow._step_in_loop

    def stepping(self, seq):
        steps.append(self.heap[0][2])  # the kind of transition the loop hands back
        return real_step(self, seq)

    monkeypatch.setattr(oneslot, "recheck", counting)
    monkeypatch.setattr(RequestFlow, "_step_in_loop", stepping)
    on = _run(loop, "alone", monkeypatch)
    monkeypatch.setattr(RequestFlow, "recheck_in_loop", False)
    asked, stepped = len(moved), len(steps)
    off = _run(loop, "alone", monkeypatch)
    assert len(moved) == asked and len(steps) == stepped  # off: the loop is never asked
    if loop == "python":
        assert sum(moved) > 20  # on: the re-checks were the loop's
    assert {"starting", "running", "expire"} <= set(steps)  # on: and the instances' other transitions
    lifecycle = on.frame("replica_lifecycle")
    assert (lifecycle.cause == "expired").sum() > 5 and (on.frame("invocations").reason == "concurrency_limit").sum() > 0
    for table in on.tables:
        pd.testing.assert_frame_equal(on.frame(table), off.frame(table), obj=table, check_exact=True)
    assert _plain(on.summary()) == _plain(off.summary())


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


class _Slotted:
    """What the loop reads of an instance, in slots (the compiled loop reads them at their offsets)."""

    __slots__ = ("id", "state", "heap", "ei", "en", "eb", "inv_speed", "transfer", "starts", "ends", "max_exec", "last_end", "rng")

    def __init__(self, i: int, seed: int):
        self.id, self.state, self.heap = i, "running", [0.0]
        self.ei, self.en, self.eb = 0, 0, []
        self.inv_speed, self.transfer = 1.0 + i / 7, 0.01 * i
        self.starts, self.ends, self.max_exec, self.last_end = [], [], 0.0, 0.0
        self.rng = np.random.default_rng([seed, i])

    def refill(self) -> None:
        batch = self.rng.exponential(2.0, 5)
        self.eb = array("d", batch.tobytes()) if self.id % 2 else batch.tolist()  # both kinds the replicas hold
        self.ei, self.en = 0, len(self.eb)


class _Plain:  # with a __dict__: read through getattr
    __init__ = _Slotted.__init__
    refill = _Slotted.refill


class _Subclass(_Slotted):
    __slots__ = ("extra",)


@needs_compiled
@pytest.mark.parametrize("kind", [_Slotted, _Plain, _Subclass])
def test_compiled_loop_reads_instances_of_any_class_as_the_python_loop(kind):
    """Instances in slots, with a __dict__, or of a subclass, some going away: the same columns, slots and state."""
    import engine.faas._oneslot as compiled

    results = []
    for loop in (oneslot.single_slot_loop, compiled.single_slot_loop):
        instances = [kind(i, 3) for i in range(5)]
        idle = list(instances)
        slots: list = []
        buf = np.cumsum(np.random.default_rng(2).exponential(0.4, 400)).tolist()
        c_rep: list = []
        c_exec: list = []
        rejected: list = []
        bi, seq, calls = 0, 0, 0
        while bi < len(buf):
            calls += 1
            if calls % 7 == 0:
                instances[calls % 5].state = "removed" if calls % 2 else "running"
            full = calls % 3 == 0
            bi, blocked, seq, _ = loop(buf, bi, buf[bi] + 3.0, slots, idle, c_rep, c_exec, True, seq, lambda full=full: full, rejected)
            if blocked != math.inf:
                bi += 1  # skipped, as if an instance were started elsewhere
        state = [(r.heap, r.ei, r.en, list(r.eb), r.starts, r.ends, r.max_exec, r.last_end, r.state) for r in instances]
        results.append((c_rep, c_exec, rejected, seq, [(t, s, r.id) for t, s, r in slots], [r.id for r in idle], state))
    assert results[0] == results[1]
    assert len(results[0][0]) > 300 and results[0][2]
