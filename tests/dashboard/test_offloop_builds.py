"""A new run built off the event loop (Reset, another scenario or seed): the old run stays live meanwhile, the newest
request wins, a superseded build never becomes the live run, and the run built so is the run a fresh session makes.

The runner here has :func:`dashboard.offloop.off_loop`'s shape without a server: the build runs in a real worker
thread and its result is handed back to this thread (the test's "event loop"), which runs it when it drains.
"""

from __future__ import annotations

import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dashboard import session as session_module
from dashboard.session import LiveSession
from engine import Simulation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from golden import table_digests  # noqa: E402

#: Seconds a wait may last before the test fails as hung (never a performance bound).
GUARD = 300.0


class ThreadRunner:
    """``runner(work, done, failed)``: ``work`` in a worker thread (after ``gate`` opens), ``done``/``failed`` queued for
    :meth:`drain` on the calling thread; every result ``work`` returned is kept in ``results``."""

    def __init__(self, hold: bool = False):
        self.executor = ThreadPoolExecutor(max_workers=1)
        self.loop: queue.Queue = queue.Queue()
        self.gate = threading.Event()
        self.results: list = []
        if not hold:
            self.gate.set()

    def __call__(self, work, done, failed) -> bool:
        def run() -> None:
            assert self.gate.wait(GUARD), "the test never opened the gate"
            try:
                result = work()
            except Exception as err:  # noqa: BLE001 - handed to failed(), as off_loop does
                self.loop.put(lambda error=err: failed(error))
                return
            self.results.append(result)
            self.loop.put(lambda: done(result))

        self.executor.submit(run)
        return True

    def drain(self, n: int) -> None:
        """Run the next ``n`` handed-back callbacks, waiting for each."""
        for _ in range(n):
            self.loop.get(timeout=GUARD)()


def test_while_a_reset_builds_the_old_run_stays_and_the_last_request_wins():
    s = LiveSession("default")
    s.runner = runner = ThreadRunner(hold=True)
    s.tick(0.5)
    old, generation, shown = s.sim, s.generation, s.sim.now
    assert shown > 0
    s.reset()
    assert s.building and s.pending is not None and s.sim is old
    assert s.tick(0.5) == 0.0 and s.sim.now == shown  # the old frame stays as it is
    assert s.apply({"autoscaler.MAX_WORKERS": 4}) is None  # the controls still answer, on the run shown
    assert old.sections["autoscaler"].MAX_WORKERS == 4
    s.reset()  # a second Reset before the first is built
    runner.gate.set()
    runner.drain(3)  # the first Reset, the change's rebuild, the second Reset
    assert s.generation == generation + 1  # one new run, not three
    assert not s.building and s.pending is None
    assert [r is None for r in runner.results] == [True, True, False]  # superseded before they started: not built
    assert s.sim is runner.results[-1].sim is not old
    assert s.sim.sections["autoscaler"].MAX_WORKERS == 4  # the change made while it was built
    assert s.sim.now > 0  # its first minutes are simulated where it was built: its first frame has data
    assert s.tick(0.5) > 0


def test_a_build_that_finishes_after_it_was_superseded_never_becomes_the_live_run():
    s = LiveSession("default")
    s.runner = runner = ThreadRunner()
    old, generation = s.sim, s.generation
    s.reset()
    deadline = threading.Event()
    for _ in range(int(GUARD * 10)):  # the first build done, its result waiting for the loop
        if runner.loop.qsize():
            break
        deadline.wait(0.1)
    assert runner.results and runner.results[0] is not None
    stale = runner.results[0].sim
    s.scenario = "edge"  # another scenario, asked for before the loop took the finished Reset
    runner.drain(2)
    assert s.sim is not stale and s.sim is not old
    assert s.sim.scenario.name == "edge" and s.world == "vm" and s.seed == 2 == s.sim.seed  # edge.yaml's own seed
    assert s.generation == generation + 1
    assert s.feed.source is s.sim  # what the views read is the new run's


def test_a_switch_to_another_world_shows_the_old_world_until_the_new_one_is_built():
    s = LiveSession("default")
    s.runner = runner = ThreadRunner(hold=True)
    s.scenario = "openb-fgd"
    assert s.building and s.world == "vm" and s.seed is None  # the new scenario's seed is not known before it is built
    runner.gate.set()
    runner.drain(1)
    assert s.world == "pod" and s.sim.scenario.name == "openb-fgd" and s.seed == s.sim.seed
    first = s.poll()  # the first rows, polled where the run was built, handed out once
    assert len(first["samples"]) and first["samples"]["time"].max() <= s.sim.now
    assert len(first["pods"]) == s.sim.frame("pods").shape[0]
    assert not len(s.poll()["pods"])


def test_a_recording_or_a_closed_page_supersedes_a_build_in_progress():
    s = LiveSession("default")
    s.runner = runner = ThreadRunner(hold=True)
    s.reset()
    replayed = Simulation("edge").advance(120)
    s.continue_from(replayed)
    assert s.sim is replayed and not s.building
    runner.gate.set()
    runner.drain(1)
    assert s.sim is replayed  # the Reset asked for before the recording was opened is dropped
    s.reset()
    s.stop()
    runner.drain(1)
    assert s.sim is replayed and not s.building


def test_a_build_that_fails_says_why_and_keeps_the_run_shown(monkeypatch):
    s = LiveSession("default")
    s.runner = runner = ThreadRunner()
    old = s.sim

    def broken(request, superseded=lambda: False):
        raise ValueError("no such file")

    monkeypatch.setattr(session_module, "build_run", broken)
    s.reset()
    runner.drain(1)
    assert s.sim is old and not s.building and "no such file" in s.build_error


#: A live change for each world (made before the Reset, so the new run starts with it).
CHANGES = {
    "default": {"autoscaler.MAX_WORKERS": 4},
    "faas-basic": {"fn1.max_replicas": 2},
    "openb-fgd": {"scheduler.gpu_policy": "BestFit"},
}


def digests(sim: Simulation) -> dict:
    return {name: table_digests(sim.frame(name)) for name in sorted(sim.tables)}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_run_built_off_the_loop_after_a_reset_is_the_run_of_a_fresh_session(name):
    until = 1200.0
    s = LiveSession(name, seed=7)
    s.runner = runner = ThreadRunner()
    assert s.apply(CHANGES[name]) is None
    s.tick(0.3)
    s.reset()
    runner.drain(1)
    assert 0 < s.sim.now < until  # warmed up in the worker, in slices within a wall budget
    s.sim.advance(until)
    fresh = LiveSession(name, seed=7, overrides=CHANGES[name])
    fresh.sim.advance(until)
    assert s.sim.seed == fresh.sim.seed == 7
    assert digests(s.sim) == digests(fresh.sim)


def test_the_shared_worker_counts_the_jobs_queued_and_running():
    """:func:`dashboard.offloop.waiting` counts a job from its hand-over until it has finished, even one that raised."""
    from dashboard import offloop

    first, second = threading.Event(), threading.Event()
    base = offloop.waiting()

    def blocked(gate: threading.Event, fail: bool = False) -> None:
        assert gate.wait(GUARD), "the test never opened the gate"
        if fail:
            raise RuntimeError("a failing job still leaves the count")

    offloop.submit(lambda: blocked(first))
    offloop.submit(lambda: blocked(second, fail=True))
    assert offloop.waiting() == base + 2  # one running, one queued behind it
    first.set()
    second.set()
    deadline = threading.Event()
    for _ in range(int(GUARD * 10)):
        if offloop.waiting() == base:
            break
        deadline.wait(0.1)
    assert offloop.waiting() == base
