"""The live session behind one dashboard: a Simulation, its clock and what the views have seen.

No UI imports here: the session is driven by ``tick()`` (a periodic callback in the dashboard, a loop in
a test) and read through ``poll()`` (new rows of the engine's tables, by row offset: :mod:`dashboard.feed`);
parameter changes go through ``apply()``, faults through ``inject()``.

A new run (Reset, another scenario or seed) is built by :meth:`LiveSession.request_build`: with a ``runner`` (the
dashboard hands :func:`dashboard.offloop.off_loop`) the build and the new run's first minutes happen in a worker
thread while the old run stays on screen (``building`` is true, ticks do not advance it); the newest request wins and
a superseded build is dropped. Without a runner (notebooks, tests, Compare) it is built at once.
"""

from __future__ import annotations

import contextlib
import math
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import param

from dashboard.feed import Feed
from dashboard.kpis import KpiTracker, kpi_difference, world_view
from engine import WORLDS, ParamError, Recording, Scenario, Simulation, list_scenarios, load_scenario

#: Every live session of this process (the benchmark and the browser tests look inside).
LIVE_SESSIONS: weakref.WeakSet[LiveSession] = weakref.WeakSet()

#: Longest wall-clock gap one tick makes up for: a stalled server must not jump hours ahead.
MAX_TICK_GAP = 0.5
#: Wall seconds one tick may spend advancing the engine; the rest of the wish is dropped (the run falls behind
#: its speed, and says so) so that the server gets back to the event loop -- clicks -- within a tick.
TICK_BUDGET = 0.04
#: Wall seconds over which the achieved speed is measured.
SPEED_WINDOW = 2.0
#: Simulated seconds (at least five sample intervals) a new run that is to play starts with (its first frame has data),
#: and the wall seconds that may take at most.
WARM_UP = 300.0
WARM_UP_BUDGET = 0.3

#: ``runner(work, done, failed)``: calls ``done(work())`` or ``failed(error)``, now or later (off the event loop).
Runner = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[BaseException], None]], Any]


def warm_up(sim: Any, until: float = WARM_UP, budget: float = WARM_UP_BUDGET, superseded: Callable[[], bool] = lambda: False) -> None:
    """Simulate a new run's first ``until`` seconds (at least five samples), in slices, within ``budget`` wall seconds
    (or until ``superseded()``): the run's first frame then has data. Slicing does not change the run."""
    t0 = time.perf_counter()
    interval = sim.sections["run"].sample_interval
    until = max(until, 5 * interval)
    piece = min(10 * interval, until / 4)
    while sim.now < until and time.perf_counter() - t0 < budget and not superseded():
        sim.advance(min(until, sim.now + piece))


def scenario_names() -> list[str]:
    """Every shipped scenario (every world is served), ``default`` first."""
    names = sorted(list_scenarios())
    if "default" in names:
        names.remove("default")
        names.insert(0, "default")
    return names or ["default"]


@dataclass
class BuildRequest:
    """A new run asked for: what to build, and the ticket that says whether it is still the newest request."""

    ticket: int
    scenario: str | Scenario  # a shipped scenario's name (read where the run is built) or a scenario object
    seed: int | None
    overrides: dict[str, Any] = field(default_factory=dict)
    warm: bool = False

    @property
    def name(self) -> str:
        return self.scenario if isinstance(self.scenario, str) else self.scenario.name


@dataclass
class BuiltRun:
    """A request's built run, its first rows polled (made in the worker: no Bokeh/Panel model is touched there)."""

    request: BuildRequest
    sim: Simulation
    overrides: dict[str, Any]
    feed: Feed
    first_rows: dict[str, pd.DataFrame]


def build_run(request: BuildRequest, superseded: Callable[[], bool] = lambda: False) -> BuiltRun | None:
    """Build ``request``'s run, apply its parameter changes, simulate its first minutes (when it is to play) and poll its
    first rows; None when ``superseded()`` before the work starts. Plain engine work: safe in a worker thread."""
    if superseded():
        return None
    sim = Simulation(request.scenario, seed=request.seed)
    overrides = dict(request.overrides)
    if overrides:
        try:
            sim.set_params(overrides)
        except ParamError:  # a scenario that cannot take them: start clean
            overrides = {}
    if request.warm:
        warm_up(sim, superseded=superseded)
    feed = Feed(sim)
    return BuiltRun(request, sim, overrides, feed, feed.poll())


class LiveSession(param.Parameterized):
    """One running simulation with play/pause/step/reset and a wall-clock speed."""

    scenario = param.Selector(default=None, objects=[], doc="Scenario from data/scenarios/.")
    seed = param.Integer(
        default=None,
        allow_None=True,
        bounds=(0, 2**53 - 1),
        doc="Seed (empty: the scenario's run.seed); kept below 2**53 so browsers hold it exactly.",
    )
    speed = param.Number(60.0, bounds=(1.0, 3600.0), step=1.0, doc="Simulated seconds per wall-clock second.")
    playing = param.Boolean(True, doc="Advance the simulation on every tick.")
    generation = param.Integer(0, doc="Bumped on every reset: views drop what they hold.")
    building = param.Boolean(False, doc="A new run is being built off the event loop; the old one stays on screen meanwhile.")
    build_error = param.String("", doc="Why the last build failed (empty: it did not).")

    def __init__(self, scenario: str | Scenario | None = None, seed: int | None = None, overrides: dict[str, Any] | None = None, **params):
        names = scenario_names()
        self._custom: dict[str, Scenario] = {}
        if isinstance(scenario, Scenario):  # a scenario built in a notebook or a test
            self._custom[scenario.name] = scenario
            names = [scenario.name, *[n for n in names if n != scenario.name]]
            scenario = scenario.name
        self.param.scenario.objects = names
        super().__init__(scenario=scenario or names[0], seed=seed, **params)
        self.overrides: dict[str, Any] = dict(overrides or {})
        self.tick_seconds: deque[float] = deque(maxlen=1000)
        self._progress: deque[tuple[float, float, float]] = deque(maxlen=200)  # (wall time, wall dt, simulated s advanced)
        self.stopped = False
        self.sim = None
        #: ``runner(work, done, failed)`` that builds new runs (None: at once, in the caller's thread).
        self.runner: Runner | None = None
        self._ticket = 0  # the newest build request's; a build finishing with another ticket was superseded
        self._pending: BuildRequest | None = None
        self._first_rows: dict[str, pd.DataFrame] | None = None  # polled in the worker, handed out by the next poll()
        self.request_build()
        LIVE_SESSIONS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def scenario_object(self) -> Scenario:
        return self._custom.get(self.scenario) or load_scenario(self.scenario)

    def request_build(self, warm: bool = False) -> None:
        """Build the run the session asks for (scenario, seed, parameter changes so far): at once without a runner, else
        off the event loop, where this request supersedes any earlier one still building (the last one wins).
        ``warm``: off the loop, simulate its first minutes too (when playing), so that the frame that replaces the old one
        has data (at once, a new run starts at t=0 as before: the shell warms a new scenario up where it draws it)."""
        self._ticket += 1
        warm = warm and self.playing and self.runner is not None
        request = BuildRequest(self._ticket, self._custom.get(self.scenario) or self.scenario, self.seed, dict(self.overrides), warm)
        if self.runner is None:
            self._pending = None
            self._built(build_run(request))
            return
        self._pending = request
        self.build_error = ""
        self.building = True
        ticket = request.ticket
        self.runner(
            lambda: build_run(request, superseded=lambda: self._ticket != ticket or self.stopped),
            self._built,
            lambda error: self._build_failed(ticket, error),
        )

    @contextlib.contextmanager
    def building_inline(self) -> Iterator[None]:
        """Builds within this block happen at once (a link's scenario must be live before its parameters apply)."""
        runner, self.runner = self.runner, None
        try:
            yield
        finally:
            self.runner = runner

    @property
    def pending(self) -> BuildRequest | None:
        """The build in progress off the event loop (None: none)."""
        return self._pending

    def _built(self, built: BuiltRun | None) -> None:
        """A build finished (on the event loop): the newest request's run becomes the live run; any other is dropped."""
        if built is None or built.request.ticket != self._ticket or self.stopped:
            return  # superseded (or the session went away): it never becomes the live run
        self._pending = None
        self.branched_from = None  # a fresh run from t=0 is nobody's branch
        self.overrides = built.overrides
        self.sim = built.sim  # before the seed: the seed's watcher compares with the live run's
        if self.seed is None:  # show the scenario's seed (no rebuild: it is the same run)
            self.seed = built.sim.seed
        self._adopt(built.sim, built.feed, built.first_rows)

    def _build_failed(self, ticket: int, error: BaseException) -> None:
        if ticket != self._ticket or self.stopped:
            return
        self._pending = None
        self.build_error = f"{type(error).__name__}: {error}"
        self.building = False

    def _supersede(self) -> None:
        """Any build in progress is dropped when it finishes (a recording, a branch or a closed page came first)."""
        self._ticket += 1
        self._pending = None

    def load_recording(self, recording: dict[str, Any], origin: str = "recording") -> None:
        """Continue live from a recorded session: replay it (same scenario, seed and inputs) and take over.

        Raises ``engine.ScenarioError`` naming ``origin`` when it cannot be replayed; the session is then unchanged."""
        self.continue_from(Simulation.replay(recording, origin=origin))

    def continue_from(self, sim: Simulation, branched_from: Recording | None = None) -> None:
        """Go on live from ``sim`` (a replayed recording, or a branch made by ``Recording.branch``): its scenario joins
        the choices, its seed and parameter changes become this session's; ``branched_from`` is the branch's parent."""
        self._custom[sim.scenario.name] = sim.scenario
        if sim.scenario.name not in self.param.scenario.objects:
            self.param.scenario.objects = [*self.param.scenario.objects, sim.scenario.name]
        with param.parameterized.discard_events(self):
            self.scenario = sim.scenario.name
            self.seed = sim.seed
        self.overrides = {}
        for item in sim.inputs:
            if item.get("kind") == "params":
                self.overrides.update(item["changes"])
        self.branched_from = branched_from
        self._supersede()
        self._adopt(sim)

    def _adopt(self, sim: Any, feed: Feed | None = None, first_rows: dict[str, pd.DataFrame] | None = None) -> None:
        self.sim = sim
        self.world = sim.scenario.world
        self.view = world_view(self.world)
        self.feed = feed or Feed(sim)
        self._first_rows = first_rows
        self.kpi = KpiTracker(self.view)
        self._progress.clear()
        self.generation += 1
        if self.building:  # last: whoever watches it finds the new run in place
            self.building = False

    def reset(self) -> None:
        """Restart the scenario from t=0 with the same seed and the parameter changes made so far (its first minutes
        simulated when playing; off the event loop with a runner)."""
        self.request_build(warm=True)

    @param.depends("scenario", watch=True)
    def _scenario_changed(self) -> None:
        self.overrides = {}
        with param.parameterized.discard_events(self):
            self.seed = None  # the chosen scenario's own run.seed, not the previous one's
        self.request_build(warm=True)

    @param.depends("seed", watch=True)
    def _seed_changed(self) -> None:
        wanted = self._pending.seed if self._pending is not None else self.sim.seed
        if self.seed != wanted:
            self.request_build(warm=True)

    def stop(self) -> None:
        """Stop for good (the browser tab is gone); a build in progress is dropped."""
        self.playing = False
        self.stopped = True
        self._supersede()
        with param.parameterized.discard_events(self):
            self.building = False

    def release(self) -> None:
        """Stop and let go of the simulation and everything recorded (a closed session frees its memory)."""
        self.stop()
        self.sim = None
        self.feed = None
        self.branched_from = None
        self._custom.clear()

    # -- driving ---------------------------------------------------------------------------------
    def tick(self, wall_dt: float, budget: float = TICK_BUDGET, speed: float | None = None) -> float:
        """Advance by ``speed * wall_dt`` simulated seconds when playing, in slices, within ``budget`` wall seconds.

        Returns the simulated seconds advanced. When the engine cannot keep up within the budget the rest is
        dropped, not owed: the run goes slower than asked (:meth:`achieved_speed` says how fast) and the server
        stays responsive at any speed.
        """
        if not self.playing or self.stopped or self.building:  # while a new run builds, the old frame stays as it is
            return 0.0
        t0 = time.perf_counter()
        start = self.sim.now
        target = start + (self.speed if speed is None else speed) * min(max(wall_dt, 0.0), MAX_TICK_GAP)
        piece = max(self.sim.sections["run"].sample_interval, (target - start) / 8)
        while self.sim.now < target:
            self.sim.advance(min(target, self.sim.now + piece))
            if time.perf_counter() - t0 > budget:
                break
        done = time.perf_counter()
        self.tick_seconds.append(done - t0)
        self._progress.append((done, wall_dt, self.sim.now - start))
        return self.sim.now - start

    def achieved_speed(self) -> float:
        """Simulated seconds per wall second over the last few seconds of ticks (NaN before any)."""
        if not self._progress:
            return math.nan
        newest = self._progress[-1][0]
        recent = [(dt, adv) for at, dt, adv in self._progress if newest - at <= SPEED_WINDOW]
        wall = sum(min(max(dt, 0.0), MAX_TICK_GAP) for dt, _ in recent)
        return sum(adv for _, adv in recent) / wall if wall > 0 else math.nan

    def step(self) -> None:
        """Advance by one sample interval (also while paused)."""
        self.sim.advance(self.sim.now + self.sim.sections["run"].sample_interval)

    def apply(self, changes: dict[str, Any]) -> str | None:
        """Change parameters atomically; on a bad value or combination return the message and change nothing."""
        try:
            applied = self.sim.set_params(changes)
        except ParamError as err:
            return str(err)
        self.overrides.update(applied if isinstance(applied, dict) else changes)
        if self._pending is not None and self._pending.name == self.sim.scenario.name:
            self.request_build(warm=True)  # a Reset in progress: it must start with this change too (the last one wins)
        return None

    def inject(self, kind: str, **kwargs: Any) -> str | None:
        """Inject a fault now; return an error message instead of raising."""
        try:
            self.sim.inject(kind, **kwargs)
        except (ParamError, ValueError, KeyError, RuntimeError) as err:
            return f"{kind}: {err}"
        return None

    def fixed_sections(self) -> tuple[str, ...]:
        """Sections (``key``) or single parameters (``key.name``) this run's world reads once, when it is built (set in the
        scenario; not live controls)."""
        return tuple(WORLDS[self.world].fixed) if self.sim is not None else ()

    # -- reading ---------------------------------------------------------------------------------
    @property
    def has_cluster(self) -> bool:
        """Does this run place its workers on a cluster (so placement views and node faults apply)?"""
        return self.sim is not None and "nodes" in self.sim.tables

    def poll(self) -> dict[str, pd.DataFrame]:
        """Rows of each table the views read recorded since the last poll (each handed out once)."""
        new = self.feed.poll()
        if self._first_rows is not None:  # the new run's first rows, polled where it was built
            first, self._first_rows = self._first_rows, None
            new = {t: _joined(first.get(t), rows) for t, rows in new.items()}
        self.kpi.push(new)
        return new

    def kpis(self) -> dict[str, Any]:
        """The KPI row the world declares (``engine.WORLDS[world].ui.kpis``) at the run's time (the header's time too)."""
        return {**self.kpi.kpis(self.sim.now), "time": float(self.sim.now)}

    def recording(self) -> dict[str, Any]:
        """Inputs that reproduce this run (seed, parameter changes and faults stamped with sim time)."""
        rec = dict(self.sim.recording())
        rec.setdefault("scenario", self.scenario)
        return rec

    def server_tick_ms(self) -> dict[str, float]:
        if not self.tick_seconds:
            return {"median": math.nan, "p95": math.nan}
        arr = np.array(self.tick_seconds) * 1000
        return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95))}


def _joined(first: pd.DataFrame | None, rows: pd.DataFrame) -> pd.DataFrame:
    if first is None or not len(first):
        return rows
    return pd.concat([first, rows]) if len(rows) else first


def compare_defaults(sections: dict[str, Any]) -> dict[str, Any]:
    """B's starting difference from A, so the compare tab shows something at once: half the workers (VM world),
    another GPU policy (pod world); B starts as A elsewhere."""
    if "pods" in sections and "scheduler" in sections:
        policy = sections["scheduler"].gpu_policy
        return {"scheduler.gpu_policy": "BestFit" if policy == "FGD" else "FGD"}
    if "autoscaler" not in sections:  # the functions world: B starts as A
        return {}
    max_workers = sections["autoscaler"].MAX_WORKERS
    return {"autoscaler.MAX_WORKERS": max(1, max_workers // 2)}


class ComparePair(param.Parameterized):
    """Two live sessions on the same scenario and seed, advanced in lockstep."""

    def __init__(
        self,
        scenario: str | Scenario,
        seed: int | None,
        a_overrides: dict[str, Any] | None = None,
        b_overrides: dict[str, Any] | None = None,
        **params,
    ):
        super().__init__(**params)
        self.a = LiveSession(scenario, seed, a_overrides)
        if b_overrides is None:
            b_overrides = {**(a_overrides or {}), **compare_defaults(self.a.sim.sections)}
        self.b = LiveSession(scenario, seed, b_overrides)

    @property
    def sessions(self) -> tuple[LiveSession, LiveSession]:
        return self.a, self.b

    def tick(self, wall_dt: float, speed: float | None = None, budget: float = TICK_BUDGET) -> None:
        """Advance both runs by the same simulated time (A within half the budget, then B to A's clock)."""
        self.a.tick(wall_dt, budget / 2, speed)
        if self.b.sim.now < self.a.sim.now:
            self.b.sim.advance(self.a.sim.now)
        self.b._progress.append(self.a._progress[-1] if self.a._progress else (time.perf_counter(), wall_dt, 0.0))

    def step(self) -> None:
        """Both runs one sample interval on."""
        self.a.step()
        self.b.sim.advance(self.a.sim.now)

    def reset(self) -> None:
        for s in self.sessions:
            s.request_build()  # at once and from t=0, both: they stay in lockstep

    def set_playing(self, playing: bool) -> None:
        for s in self.sessions:
            s.playing = playing

    def stop(self) -> None:
        for s in self.sessions:
            s.release()

    def kpi_difference(self) -> pd.DataFrame:
        a, b = self.a.kpis(), self.b.kpis()
        diff = kpi_difference(self.a.view, a, b)
        return pd.DataFrame([{"kpi": key, "A": a[key], "B": b[key], "B - A": d} for key, d in diff.items()])
