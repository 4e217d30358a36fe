"""A branch re-simulated ahead of the click (dashboard.warmup): in pieces, superseded, taken over; always the same
simulation as ``Recording.branch`` makes from scratch. No browser: the warm-up's jobs run when the test says."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.ui import Dashboard
from dashboard.warmup import BranchRun, BranchWarmup
from engine import load_recording
from engine.sim.archive import first_divergence

ROOT = Path(__file__).resolve().parents[2]
EDGE = ROOT / "data" / "recordings" / "edge-reweighted.scalelab"  # inputs at 600 s and 700 s
CRASH = ROOT / "data" / "recordings" / "master-crash.scalelab"


def same_branch(sim, rec, at: float) -> None:
    """``sim`` is what ``rec.branch(at)`` makes: every table, the clock, the inputs and the parent."""
    ref = rec.branch(at)
    assert sim.now == ref.now == at
    assert first_divergence(ref.frames(), sim.frames()) is None
    assert sim.inputs == ref.inputs and sim.parent == ref.parent


class Jobs:
    """The worker, run by hand: jobs queue until :meth:`run`."""

    def __init__(self):
        self.queued = []

    def submit(self, job):
        self.queued.append(job)

    def run(self) -> int:
        n = 0
        while self.queued:
            self.queued.pop(0)()
            n += 1
        return n


@pytest.mark.parametrize("stops", [(), (300.0,), (600.0, 650.0), (599.0, 700.0, 1000.0)], ids=str)
def test_a_branch_run_advanced_in_pieces_is_the_branch_from_scratch(stops):
    rec = load_recording(EDGE)
    run = BranchRun(rec)
    for t in stops:
        run.advance(t)
    same_branch(run.finish(1200.0), rec, 1200.0)


def test_scrubbing_back_and_forth_warms_the_last_time_and_the_branch_taken_is_the_branch_from_scratch():
    rec, jobs = load_recording(EDGE), Jobs()
    warm = BranchWarmup(jobs.submit)
    warm.aim(rec, 1200.0)
    jobs.run()
    warm.aim(rec, 300.0)  # back, before the warm run's time: a new run
    warm.aim(rec, 900.0)  # on again before the worker got to it: one job, for the newest time
    assert jobs.run() == 1
    run = warm.take(rec, 900.0)
    assert run.now == 900.0  # warm: only the rest is left to simulate
    same_branch(run.finish(900.0), rec, 900.0)
    assert warm.take(rec, 900.0).now == 0.0  # handed over: the next branch starts afresh


def test_an_upload_during_a_warm_up_supersedes_it():
    first, second, jobs = load_recording(EDGE), load_recording(CRASH), Jobs()
    warm = BranchWarmup(jobs.submit)
    warm.aim(first, first.until)
    warm.aim(second, 500.0)  # another recording opened before the first warmed
    jobs.run()
    run = warm.take(second, 500.0)
    assert run.rec is second and run.now == 500.0
    same_branch(run.finish(500.0), second, 500.0)
    assert warm.take(first, 100.0).rec is first  # nothing of the first is left: a fresh run


def test_a_warm_run_past_the_branch_time_is_not_used():
    rec, jobs = load_recording(EDGE), Jobs()
    warm = BranchWarmup(jobs.submit)
    warm.aim(rec, 1500.0)
    jobs.run()
    run = warm.take(rec, 700.0)
    assert run.now == 0.0
    same_branch(run.finish(700.0), rec, 700.0)


def test_the_dashboard_branches_from_its_warm_up_at_the_scrubbed_time_with_its_parent():
    d = Dashboard("default")
    jobs = Jobs()
    d.recordings.warmup.submit = jobs.submit
    d.recordings.ctx.served = lambda: True  # the warm-up runs only on a served page
    rec = load_recording(EDGE)
    d.recordings.open(rec)
    r = d.recordings.replay_tab
    for t in (1200.0, 300.0, 900.0):  # scrubbed back and forth, each drawn
        r.seek(t)
        r.tick(0.1, 60.0, False)
        r.flush(r.now())
        jobs.run()
    assert d.recordings.warmup._run.now == 900.0
    r.branch.clicks += 1  # "Branch here" (unserved: the branch is made at once)
    s = d.session
    assert d.active_tab == "Branch" and s.branched_from is rec
    assert s.sim.parent == {"file": EDGE.name, "digest": rec.digest, "branch_time": 900.0}
    same_branch(s.sim, rec, 900.0)
    d.stop()
