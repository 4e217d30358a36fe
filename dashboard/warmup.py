"""A branch's re-simulation, started before *Branch here* is pressed.

A branch re-simulates the recording's inputs up to the branch time (``Recording.branch``). :class:`BranchRun` does
the same in steps that may stop anywhere: the recording's inputs applied in order at their times
(``Simulation.apply_input``, as ``Simulation.replay`` applies them), time moved by ``Simulation.advance``, which gives
the same tables however a span is cut into advances. :class:`BranchWarmup` keeps one such run of the open recording
moving towards the time the Replay tab shows, in the off-loop worker (:data:`dashboard.offloop.EXECUTOR`), from the
moment a recording opens and after each scrub: a newer recording or an earlier time supersedes it. *Branch here* then
takes it and has only the rest to simulate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from engine import Recording, Simulation

#: Simulated seconds a warm-up advances before it looks again at what is asked of it (a newer recording or time).
STEP = 120.0


class BranchRun:
    """A simulation of a recording on its way to a branch time, advanced through the recording's inputs."""

    def __init__(self, rec: Recording):
        self.rec = rec
        self.sim = Simulation(rec.scenario, seed=rec.seed)
        self._inputs = rec.inputs
        self._next = 0  # the first input not applied yet

    @property
    def now(self) -> float:
        return float(self.sim.now)

    def advance(self, until: float) -> None:
        """On to ``until``, the recording's inputs up to then applied at their times (those at ``until`` too)."""
        while self._next < len(self._inputs) and self._inputs[self._next]["time"] <= until:
            self.sim.apply_input(self._inputs[self._next], f"{self.rec.origin}: inputs[{self._next}]")
            self._next += 1
        self.sim.advance(until)

    def finish(self, at: float) -> Simulation:
        """The branch at ``at``: the same simulation ``Recording.branch(at)`` makes, naming its parent."""
        self.advance(at)
        self.sim.parent = {"file": self.rec.path.name, "digest": self.rec.digest, "branch_time": float(at)}
        return self.sim


class BranchWarmup:
    """One :class:`BranchRun` of the open recording, moved towards the time asked for (see the module docs).

    ``submit`` runs a job in the worker (:func:`dashboard.offloop.submit` when served); None: no warm-up (a notebook, a test)."""

    def __init__(self, submit: Callable[[Callable[[], None]], Any] | None):
        self.submit = submit
        self._lock = threading.Lock()
        self._rec: Recording | None = None
        self._aim = 0.0
        self._run: BranchRun | None = None
        self._queued = False

    def aim(self, rec: Recording, at: float) -> None:
        """Have a run of ``rec`` at ``at`` ready (the event loop calls this: it only notes the wish and queues a job)."""
        if self.submit is None:
            return
        with self._lock:
            self._rec, self._aim = rec, float(at)
            if self._queued:
                return
            self._queued = True
        self.submit(self._work)

    def forget(self) -> None:
        """No warm-up any more (the page went away)."""
        with self._lock:
            self._rec, self._run = None, None

    def _work(self) -> None:
        """In the worker: step the run towards the newest aim until it is there (or nothing is asked any more)."""
        while True:
            with self._lock:
                rec, aim, run = self._rec, self._aim, self._run
                if rec is None or (run is not None and run.rec is rec and run.now == aim):
                    self._queued = False
                    return
            try:
                if run is None or run.rec is not rec or run.now > aim:  # another recording, or a time already passed
                    run = BranchRun(rec)
                    cost = run.sim.estimate(aim)
                    if cost.long or cost.too_long:  # not worth it on speculation: Branch here says what it costs
                        run = None
                if run is not None:
                    run.advance(min(aim, run.now + STEP))
            except Exception:  # noqa: BLE001 - a warm-up is a guess: Branch here re-simulates and names any error
                run = None
            with self._lock:
                if run is None:
                    self._run, self._queued = None, False
                    return
                if self._rec is rec:
                    self._run = run

    def take(self, rec: Recording, at: float) -> BranchRun:
        """The warm run of ``rec`` if it is not past ``at`` (it is handed over: the next branch needs another), else a
        new one from t = 0. Call it in the worker, after the warm-up's jobs."""
        with self._lock:
            run, self._run, self._rec = self._run, None, None
        if run is None or run.rec is not rec or run.now > at:
            run = BranchRun(rec)
        return run
