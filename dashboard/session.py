"""The live session behind one dashboard: a Simulation, its clock and what the views have seen.

No UI imports here: the session is driven by ``tick()`` (a periodic callback in the dashboard, a loop in
a test) and read through ``poll()`` (new rows of the engine's tables, by row offset: :mod:`dashboard.feed`);
parameter changes go through ``apply()``, faults through ``inject()``.
"""

from __future__ import annotations

import math
import time
import weakref
from collections import deque
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


def scenario_names() -> list[str]:
    """Every shipped scenario (every world is served), ``default`` first."""
    names = sorted(list_scenarios())
    if "default" in names:
        names.remove("default")
        names.insert(0, "default")
    return names or ["default"]


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
        self._build()
        LIVE_SESSIONS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def scenario_object(self) -> Scenario:
        return self._custom.get(self.scenario) or load_scenario(self.scenario)

    def _build(self) -> None:
        self.branched_from = None  # a fresh run from t=0 is nobody's branch
        self.sim = Simulation(self.scenario_object(), seed=self.seed)
        if self.overrides:
            try:
                self.sim.set_params(self.overrides)
            except ParamError:  # a scenario that cannot take them: start clean
                self.overrides = {}
        if self.seed is None:  # show the scenario's seed (no rebuild: it is the same run)
            self.seed = self.sim.seed
        self._adopt(self.sim)

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
        self._adopt(sim)

    def _adopt(self, sim: Any) -> None:
        self.sim = sim
        self.world = sim.scenario.world
        self.view = world_view(self.world)
        self.feed = Feed(sim)
        self.kpi = KpiTracker(self.view)
        self._progress.clear()
        self.generation += 1

    def reset(self) -> None:
        """Restart the scenario from t=0 with the same seed and the parameter changes made so far."""
        self._build()

    @param.depends("scenario", watch=True)
    def _scenario_changed(self) -> None:
        self.overrides = {}
        with param.parameterized.discard_events(self):
            self.seed = None  # the chosen scenario's own run.seed, not the previous one's
        self._build()

    @param.depends("seed", watch=True)
    def _seed_changed(self) -> None:
        if self.seed != self.sim.seed:
            self._build()

    def stop(self) -> None:
        """Stop for good (the browser tab is gone)."""
        self.playing = False
        self.stopped = True

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
        if not self.playing or self.stopped:
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
            s.reset()

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
